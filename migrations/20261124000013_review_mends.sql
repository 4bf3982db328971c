-- Void refunds come from the market vault alone (pro rata when it falls short), so the program's
-- PositionSettled no longer reports a part drawn from the treasury: the column goes with it.
ALTER TABLE settlements DROP COLUMN from_treasury;

-- The oracle's query (closed or resolving rounds by settlement time) is served by
-- markets_by_status_settlement (status, settlement_ts); this second index only cost writes.
DROP INDEX markets_awaiting_oracle;
