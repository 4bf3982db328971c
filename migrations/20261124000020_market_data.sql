-- Market data the collectors gather from every venue's listing (issue 15): each perp's funding
-- interval and its changes, and crowd positioning (long/short account ratios, open interest).

-- Every perp a venue has listed. `interval_minutes` is the interval seen last; `change_count`
-- and `last_changed_at` are kept with each change (in the same transaction) so the threaded
-- view of 4,000 symbols reads one row each.
CREATE TABLE perps (
    exchange         TEXT NOT NULL,
    symbol           TEXT NOT NULL,
    interval_minutes INT NOT NULL CHECK (interval_minutes > 0),
    -- Whether the venue's latest listing has it (a delisted perp keeps its history).
    listed           BOOLEAN NOT NULL DEFAULT TRUE,
    first_seen_at    TIMESTAMPTZ NOT NULL,
    last_seen_at     TIMESTAMPTZ NOT NULL,
    change_count     INT NOT NULL DEFAULT 0 CHECK (change_count >= 0),
    last_changed_at  TIMESTAMPTZ,
    PRIMARY KEY (exchange, symbol)
);
CREATE INDEX perps_by_changes ON perps (change_count DESC, exchange, symbol);
CREATE INDEX perps_by_symbol ON perps (symbol, exchange);

-- A change of a perp's interval, as first observed (`changed_at` = the observation).
CREATE TABLE interval_changes (
    id           BIGSERIAL PRIMARY KEY,
    exchange     TEXT NOT NULL,
    symbol       TEXT NOT NULL,
    from_minutes INT NOT NULL CHECK (from_minutes > 0),
    to_minutes   INT NOT NULL CHECK (to_minutes > 0 AND to_minutes <> from_minutes),
    changed_at   TIMESTAMPTZ NOT NULL,
    FOREIGN KEY (exchange, symbol) REFERENCES perps (exchange, symbol)
);
CREATE INDEX interval_changes_by_perp ON interval_changes (exchange, symbol, changed_at DESC, id DESC);
CREATE INDEX interval_changes_by_time ON interval_changes (changed_at DESC, id DESC);

-- The latest crowd reading of each perp (venues with a public ratio: not Hyperliquid).
-- Fractions in millionths; open interest in USD cents (NULL where the venue gave none).
CREATE TABLE crowd_latest (
    exchange            TEXT NOT NULL,
    symbol              TEXT NOT NULL,
    long_ppm            INT NOT NULL CHECK (long_ppm BETWEEN 0 AND 1000000),
    short_ppm           INT NOT NULL CHECK (short_ppm BETWEEN 0 AND 1000000),
    open_interest_cents BIGINT CHECK (open_interest_cents >= 0),
    -- The venue's bucket time of the ratio.
    observed_at         TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (exchange, symbol),
    FOREIGN KEY (exchange, symbol) REFERENCES perps (exchange, symbol)
);
CREATE INDEX crowd_latest_by_short ON crowd_latest (short_ppm DESC, exchange, symbol);
CREATE INDEX crowd_latest_by_long ON crowd_latest (long_ppm DESC, exchange, symbol);

-- Every reading, keyed by the venue's bucket time: a sweep repeated (two replicas, a restart)
-- writes nothing twice. Kept FM_CROWD_RETENTION_DAYS; rows arrive in time order, so a BRIN
-- index serves the retention delete at almost no cost.
CREATE TABLE crowd_history (
    exchange  TEXT NOT NULL,
    symbol    TEXT NOT NULL,
    ts        TIMESTAMPTZ NOT NULL,
    long_ppm  INT NOT NULL CHECK (long_ppm BETWEEN 0 AND 1000000),
    short_ppm INT NOT NULL CHECK (short_ppm BETWEEN 0 AND 1000000),
    PRIMARY KEY (exchange, symbol, ts)
);
CREATE INDEX crowd_history_by_time ON crowd_history USING brin (ts);
