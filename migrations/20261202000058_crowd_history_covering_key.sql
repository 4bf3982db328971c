-- A perp's crowd history page reads its readings by (exchange, symbol, ts). The collectors write
-- a sweep at a time, one reading of every perp, so a perp's readings lie one to a heap page: a
-- month of one perp's readings was a heap fetch per reading. Carrying the two shares in the
-- primary key's index makes that page an index-only scan of a few adjacent leaf pages (heap
-- fetches only for pages the visibility map does not yet mark all-visible, which vacuum does).
ALTER TABLE crowd_history
    DROP CONSTRAINT crowd_history_pkey,
    ADD PRIMARY KEY (exchange, symbol, ts) INCLUDE (long_ppm, short_ppm);
