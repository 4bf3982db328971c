-- What the indexer learns from the program's events. Every event is recorded once, keyed by
-- (signature, instruction, event index), with its raw bytes so it can be re-projected; the
-- projection and the cursor advance in the same database transaction.
CREATE TABLE chain_cursor (
    program     TEXT PRIMARY KEY,
    signature   TEXT NOT NULL,
    slot        BIGINT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE chain_events (
    signature   TEXT NOT NULL,
    ix_index    INTEGER NOT NULL,
    event_index INTEGER NOT NULL,
    slot        BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    data        BYTEA NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (signature, ix_index, event_index)
);

ALTER TABLE markets ADD COLUMN onchain_address TEXT;

-- Positions as the program holds them (micro-shares), by market and wallet.
CREATE TABLE positions (
    market_id   UUID NOT NULL REFERENCES markets (id),
    wallet      TEXT NOT NULL,
    yes_shares  BIGINT NOT NULL CHECK (yes_shares >= 0),
    no_shares   BIGINT NOT NULL CHECK (no_shares >= 0),
    -- the market's trade count at the last applied trade: later trades win, earlier are ignored
    last_trade_count BIGINT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (market_id, wallet)
);

-- Each wallet's on-chain trading balance (its vault), micro-USDC.
CREATE TABLE vault_balances (
    wallet      TEXT PRIMARY KEY,
    balance     BIGINT NOT NULL CHECK (balance >= 0),
    slot        BIGINT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE deposits (
    signature   TEXT NOT NULL,
    ix_index    INTEGER NOT NULL,
    wallet      TEXT NOT NULL,
    amount      BIGINT NOT NULL CHECK (amount > 0),
    at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (signature, ix_index)
);

CREATE TABLE settlements (
    market_id     UUID NOT NULL REFERENCES markets (id),
    wallet        TEXT NOT NULL,
    yes_shares    BIGINT NOT NULL,
    no_shares     BIGINT NOT NULL,
    payout        BIGINT NOT NULL CHECK (payout >= 0),
    from_treasury BIGINT NOT NULL CHECK (from_treasury >= 0),
    voided        BOOLEAN NOT NULL,
    at            TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (market_id, wallet)
);

ALTER TABLE trades ADD COLUMN wallet TEXT;
ALTER TABLE trades ADD COLUMN signature TEXT;
