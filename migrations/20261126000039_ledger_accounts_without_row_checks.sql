-- The embedded chain's by-account rows are written in the statement that appends their ledger
-- rows, from that statement's own RETURNING (`indexer::chain::embedded::record`), by the one
-- process holding the chain's single-writer lock; ledger rows are never deleted or renumbered.
-- The foreign key checked each of them again, one look-up per row (about eleven a
-- transaction), inside the chain's one-at-a-time durable write.
ALTER TABLE embedded_ledger_accounts DROP CONSTRAINT embedded_ledger_accounts_seq_fkey;
