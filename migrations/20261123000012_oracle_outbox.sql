-- The oracle's audit trail, the transactions that ended and paid each round, and the outbox of
-- settlement notifications.

-- Every reading the oracle took of a round's settled rate, kept whether it succeeded or not:
-- `rate` (1e-12) when the source gave one, `error` when it did not (an HTTP failure, the rate
-- not published yet, …). Served by GET /v1/markets/{id}/resolution.
CREATE TABLE oracle_observations (
    id          BIGSERIAL PRIMARY KEY,
    market_id   UUID NOT NULL REFERENCES markets (id),
    source      TEXT NOT NULL,
    rate        BIGINT,
    error       TEXT,
    fetched_at  TIMESTAMPTZ NOT NULL,
    CHECK ((rate IS NULL) <> (error IS NULL))
);
CREATE INDEX oracle_observations_by_market ON oracle_observations (market_id, id);

-- The oracle's schedule per round: attempts so far and when to ask the sources again (backoff);
-- `void_reason` when the round is to be voided whatever the rate (its settlement time no longer
-- exists after an interval change) or was voided for want of a consensus.
ALTER TABLE markets ADD COLUMN oracle_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE markets ADD COLUMN oracle_next_at TIMESTAMPTZ;
ALTER TABLE markets ADD COLUMN void_reason TEXT CHECK (void_reason IN ('interval_change', 'no_consensus'));
CREATE INDEX markets_awaiting_oracle ON markets (settlement_ts) WHERE status IN ('closed', 'resolving');

-- The transactions that ended a round on chain (resolve_market / void_market) and closed it.
ALTER TABLE markets ADD COLUMN finalize_signature TEXT;
ALTER TABLE markets ADD COLUMN close_signature TEXT;
-- The transaction that paid each position.
ALTER TABLE settlements ADD COLUMN signature TEXT;

-- Notifications to send, appended in the same transaction as the projection that causes them
-- (so none is lost and none is invented); the push worker consumes them in id order and marks
-- them delivered. One per (kind, market, wallet): a replayed event appends nothing.
--   market_settled     a round a wallet held a position in was settled or voided
--   settlement_payout  a position was paid (amount in micro-USDC)
CREATE TABLE outbox (
    id           BIGSERIAL PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('market_settled', 'settlement_payout')),
    market_id    UUID NOT NULL REFERENCES markets (id),
    wallet       TEXT NOT NULL,
    payload      JSONB NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    delivered_at TIMESTAMPTZ,
    UNIQUE (kind, market_id, wallet)
);
CREATE INDEX outbox_undelivered ON outbox (id) WHERE delivered_at IS NULL;
