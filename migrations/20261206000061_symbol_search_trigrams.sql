-- The listings' `search` (a symbol substring, any case) was `strpos(upper(symbol), …)`, which no
-- index serves: every search of the threaded view read and counted all perps, upper-casing each
-- symbol twice, and did it again each time a change made its kept page stale. It is now
-- `upper(symbol) LIKE '%…%'` (the search's `%`, `_` and `\` escaped), which a trigram index
-- answers for searches of three characters or more; shorter ones still scan.
--
-- `perps` and `interval_changes` change only when a venue's listing does. `crowd_latest` is
-- rewritten by every sweep, so it has no such index and its searches scan its rows.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX perps_by_symbol_trigrams ON perps USING gin (upper(symbol) gin_trgm_ops);
CREATE INDEX interval_changes_by_symbol_trigrams ON interval_changes USING gin (upper(symbol) gin_trgm_ops);
