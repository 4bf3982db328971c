-- Paging series in their listing order, and finding a series' unfinished rounds (the "current
-- round" of a series card) without touching its settled history.
CREATE INDEX series_listing ON series (tier, slug) WHERE active;
CREATE INDEX series_listing_by_exchange ON series (exchange, tier, slug) WHERE active;
CREATE INDEX markets_unfinished_by_series ON markets (series_id, settlement_ts)
    WHERE status IN ('pending', 'open', 'closed', 'resolving');
