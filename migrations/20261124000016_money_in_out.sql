-- Money in and out: deposit detection (webhook and reconciliation) and the withdrawal queue.

-- Every user's deposit address (its program-owned `deposit` token account), recorded by the
-- projection of UserCreated: what webhook transfers are matched against and what the
-- reconciliation worker reads. `cursor`: the last transaction of the address it has read.
CREATE TABLE deposit_addresses (
    address     TEXT PRIMARY KEY,
    wallet      TEXT NOT NULL UNIQUE,
    cursor      TEXT,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- USDC that arrived at a deposit address: one row per (transaction, address), the net amount
-- the transaction added to it (micro-USDC; what Helius reports as the account's
-- `rawTokenAmount` change, and what the chain's token instructions add up to). A row is
-- credited once a sweep moved it into the vault (`sweep_signature`); the sweeps' running total
-- says which (see `store::deposits::match_sweeps`).
CREATE TABLE deposit_transfers (
    signature       TEXT NOT NULL,
    address         TEXT NOT NULL REFERENCES deposit_addresses (address),
    wallet          TEXT NOT NULL,
    amount          BIGINT NOT NULL CHECK (amount > 0),
    slot            BIGINT NOT NULL,
    source          TEXT NOT NULL CHECK (source IN ('webhook', 'reconciliation')),
    detected_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    sweep_signature TEXT,
    credited_at     TIMESTAMPTZ,
    PRIMARY KEY (signature, address),
    CHECK ((sweep_signature IS NULL) = (credited_at IS NULL))
);
CREATE INDEX deposit_transfers_by_wallet ON deposit_transfers (wallet, detected_at DESC);

-- The sweep's slot orders sweeps against transfers.
ALTER TABLE deposits ADD COLUMN slot BIGINT;
CREATE INDEX deposits_by_wallet ON deposits (wallet, slot);

-- Withdrawal requests. `amount` is reserved from the balance while the request is pending or
-- processing and its transaction has not been projected (then the vault balance itself is
-- lower). `signature` is recorded before the transaction is sent (status processing), with the
-- signed transaction (`wire`) so a resend after a crash is the same transaction and can never
-- pay twice. `token_account`: the USDC account paid (the destination itself, or the
-- destination wallet's associated token account, created in the same transaction if missing).
CREATE TABLE withdrawals (
    id              UUID PRIMARY KEY,
    user_id         UUID NOT NULL REFERENCES users (id),
    wallet          TEXT NOT NULL,
    amount          BIGINT NOT NULL CHECK (amount > 0),
    destination     TEXT NOT NULL,
    token_account   TEXT NOT NULL,
    create_account  BOOLEAN NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'confirmed', 'failed')),
    signature       TEXT,
    wire            BYTEA,
    attempts        INTEGER NOT NULL DEFAULT 0,
    failure         TEXT,
    idempotency_key TEXT,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    sent_at         TIMESTAMPTZ,
    confirmed_at    TIMESTAMPTZ,
    failed_at       TIMESTAMPTZ,
    CHECK (status IN ('pending', 'failed') OR signature IS NOT NULL),
    UNIQUE (user_id, idempotency_key)
);
CREATE INDEX withdrawals_by_user ON withdrawals (user_id, created_at DESC);
CREATE INDEX withdrawals_open ON withdrawals (created_at) WHERE status IN ('pending', 'processing');
CREATE INDEX withdrawals_reserving ON withdrawals (wallet) WHERE status IN ('pending', 'processing');
CREATE UNIQUE INDEX withdrawals_by_signature ON withdrawals (signature) WHERE signature IS NOT NULL;

-- The outbox carries money notifications too: they name no market, and are keyed by what
-- they are about (`ref`: a deposit's signature and address, a withdrawal's id).
ALTER TABLE outbox ALTER COLUMN market_id DROP NOT NULL;
ALTER TABLE outbox ADD COLUMN ref TEXT;
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('market_settled', 'settlement_payout', 'deposit_confirmed', 'withdrawal_confirmed'));
ALTER TABLE outbox ADD CONSTRAINT outbox_subject CHECK ((market_id IS NULL) <> (ref IS NULL));
CREATE UNIQUE INDEX outbox_by_ref ON outbox (kind, ref) WHERE ref IS NOT NULL;
