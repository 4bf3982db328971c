-- The all-time leaderboard is ranked from a book in the service's memory, as the 7- and 30-day
-- ones are (`services::leaderboard_cache`): `trader_totals` is read by wallet, or whole, never in
-- the order of a ranking. Its three ordering indexes go. They were four index entries a trade
-- (each total's update changed an indexed column, so none was heap-only); now an update changes
-- no indexed column, and with room beside its row in the page (a catch-up batch updates every
-- row of a page at once, as for the other tables in migration 40) it stays heap-only. The room
-- applies to pages written from now on: a row in a page packed before takes one more update
-- that is not heap-only, to a page with room.
DROP INDEX trader_totals_by_pnl, trader_totals_by_volume, trader_totals_by_win_rate;
ALTER TABLE trader_totals SET (fillfactor = 50);
