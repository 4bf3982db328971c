-- Series (one per exchange + symbol) and their rounds (markets). Amounts are integers in
-- millionths (micro-USDC, micro-shares, ppm for prices and probabilities); funding rates in
-- 1e-12. Series statistics are maintained incrementally when a round settles, so listing
-- thousands of series never scans their rounds.
CREATE TABLE series (
    id                  UUID PRIMARY KEY,
    exchange            TEXT NOT NULL CHECK (exchange IN ('binance', 'bybit', 'okx', 'hyperliquid')),
    symbol              TEXT NOT NULL CHECK (symbol ~ '^[A-Z0-9]{2,20}$'),
    slug                TEXT NOT NULL UNIQUE,
    display_name        TEXT NOT NULL,
    tier                SMALLINT NOT NULL CHECK (tier BETWEEN 1 AND 3),
    liquidity_b         BIGINT NOT NULL CHECK (liquidity_b > 0),
    interval_hours      SMALLINT NOT NULL CHECK (interval_hours IN (1, 2, 4, 8)),
    active              BOOLEAN NOT NULL DEFAULT true,
    -- statistics over settled rounds
    total_rounds        INTEGER NOT NULL DEFAULT 0,
    yes_rounds          INTEGER NOT NULL DEFAULT 0,
    total_volume        BIGINT NOT NULL DEFAULT 0 CHECK (total_volume >= 0),
    rate_sum            NUMERIC(40, 0) NOT NULL DEFAULT 0,
    current_streak_side TEXT CHECK (current_streak_side IN ('yes', 'no')),
    current_streak      INTEGER NOT NULL DEFAULT 0,
    longest_yes_streak  INTEGER NOT NULL DEFAULT 0,
    longest_no_streak   INTEGER NOT NULL DEFAULT 0,
    last_outcome        TEXT CHECK (last_outcome IN ('yes', 'no')),
    last_settled_at     TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (exchange, symbol)
);

CREATE TABLE markets (
    id              UUID PRIMARY KEY,
    series_id       UUID NOT NULL REFERENCES series (id),
    round_number    INTEGER NOT NULL CHECK (round_number > 0),
    open_ts         TIMESTAMPTZ NOT NULL,
    close_ts        TIMESTAMPTZ NOT NULL,
    settlement_ts   TIMESTAMPTZ NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'open', 'closed', 'resolving', 'settled', 'voided')),
    liquidity_b     BIGINT NOT NULL CHECK (liquidity_b > 0),
    q_yes           BIGINT NOT NULL CHECK (q_yes >= 0),
    q_no            BIGINT NOT NULL CHECK (q_no >= 0),
    yes_price_ppm   INTEGER NOT NULL CHECK (yes_price_ppm BETWEEN 0 AND 1000000),
    ou_prior_ppm    INTEGER NOT NULL CHECK (ou_prior_ppm BETWEEN 0 AND 1000000),
    ou_confidence_ppm INTEGER NOT NULL CHECK (ou_confidence_ppm BETWEEN 0 AND 1000000),
    total_volume    BIGINT NOT NULL DEFAULT 0 CHECK (total_volume >= 0),
    trade_count     INTEGER NOT NULL DEFAULT 0,
    outcome         TEXT CHECK (outcome IN ('yes', 'no')),
    actual_rate     BIGINT,
    settled_at      TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (open_ts < close_ts AND close_ts <= settlement_ts),
    UNIQUE (series_id, settlement_ts),
    UNIQUE (series_id, round_number)
);

CREATE INDEX markets_by_status_settlement ON markets (status, settlement_ts);
CREATE INDEX markets_by_series_settlement ON markets (series_id, settlement_ts DESC);

-- Trades as executed (by the trading issue and the indexer); read by /markets/{id}/trades.
CREATE TABLE trades (
    id          UUID PRIMARY KEY,
    market_id   UUID NOT NULL REFERENCES markets (id),
    user_id     UUID REFERENCES users (id),
    side        TEXT NOT NULL CHECK (side IN ('yes', 'no')),
    is_buy      BOOLEAN NOT NULL,
    shares      BIGINT NOT NULL CHECK (shares > 0),
    amount      BIGINT NOT NULL CHECK (amount >= 0),
    fee         BIGINT NOT NULL CHECK (fee >= 0),
    yes_price_ppm INTEGER NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX trades_by_market_time ON trades (market_id, created_at DESC);

-- Price history per market: one row per price change (creation, each trade).
CREATE TABLE market_prices (
    market_id     UUID NOT NULL REFERENCES markets (id),
    at            TIMESTAMPTZ NOT NULL,
    yes_price_ppm INTEGER NOT NULL CHECK (yes_price_ppm BETWEEN 0 AND 1000000),
    PRIMARY KEY (market_id, at)
);
