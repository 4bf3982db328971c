-- A venue's listing is recorded every few minutes. Writing every perp's `last_seen_at` each time
-- made each recording a new version of every listed row (and a change notice for every
-- market-data page) when nothing had changed. Nothing reads it: a listed perp was seen in the
-- venue's latest listing, and the collectors log each recording that changes anything. The
-- recording now writes only the perps that are new, changed, relisted or delisted.
ALTER TABLE perps DROP COLUMN last_seen_at;
