-- `/v1/intervals/stats` summed every perp's `change_count` twice (by venue, and by symbol across
-- venues, sorted for the ten most changed) each time a change made its kept page stale. The
-- listing's recording (`store::intervals::record_listing`, the one writer of `perps` and
-- `interval_changes`) now keeps both sums in the transaction that records the changes, and the
-- page reads at most a few rows. Each total counts what `perps.change_count` counts: every
-- change recorded.
CREATE TABLE interval_changes_by_exchange (
    exchange TEXT PRIMARY KEY,
    changes  BIGINT NOT NULL CHECK (changes > 0)
);

CREATE TABLE interval_changes_by_symbol (
    symbol  TEXT PRIMARY KEY,
    changes BIGINT NOT NULL CHECK (changes > 0)
);
CREATE INDEX interval_changes_by_symbol_most ON interval_changes_by_symbol (changes DESC, symbol);

INSERT INTO interval_changes_by_exchange (exchange, changes)
SELECT exchange, sum(change_count) FROM perps GROUP BY exchange HAVING sum(change_count) > 0;
INSERT INTO interval_changes_by_symbol (symbol, changes)
SELECT symbol, sum(change_count) FROM perps GROUP BY symbol HAVING sum(change_count) > 0;
