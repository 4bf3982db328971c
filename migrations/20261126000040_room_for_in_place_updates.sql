-- Issue 19 (catch-up): the rows the projection updates again and again — a position, a vault
-- balance, a trader's day — get room beside them in their page, so an update that changes no
-- indexed column stays a heap-only update (HOT) and writes no index entry. Packed full, a page had
-- no room for the new versions of its rows, and most such updates went to another page with a new
-- entry in every index of the table (17 % HOT in a 100,000-trade catch-up, where a batch updates
-- every row of a page at once, so the page must hold two versions of each). Applies to pages
-- written from now on.
ALTER TABLE positions SET (fillfactor = 50);
ALTER TABLE vault_balances SET (fillfactor = 50);
ALTER TABLE trader_stats SET (fillfactor = 50);
