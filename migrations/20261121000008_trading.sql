-- Idempotency of trading requests: one row per (user, Idempotency-Key). The request's
-- fingerprint (method, path, body) pins the key to one request; the response is stored once the
-- request finished; the chain signature is stored before the transaction is sent, so a retry
-- after a crash can find out whether it landed instead of trading twice.
CREATE TABLE idempotency_keys (
    user_id     UUID NOT NULL REFERENCES users (id),
    key         TEXT NOT NULL,
    fingerprint BYTEA NOT NULL,
    signature   TEXT,
    status      SMALLINT,
    response    JSONB,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
);

-- Test USDC handed out by the faucet, per wallet and UTC day (the daily cap).
CREATE TABLE faucet_grants (
    wallet TEXT NOT NULL,
    day    DATE NOT NULL,
    amount BIGINT NOT NULL CHECK (amount >= 0),
    PRIMARY KEY (wallet, day)
);
