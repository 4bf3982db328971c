-- The embedded chain's durable state (indexer::chain::embedded). Only that chain writes here; a
-- service following a real cluster leaves these tables empty. A transaction is confirmed once
-- its ledger row and the accounts it touched are committed together, so after a restart the
-- chain resumes exactly at its last confirmed transaction and agrees with the projection.

-- The keys created at genesis: the test USDC mint and its authority, and the program's config
-- roles. Test keys for an offline chain, never a real cluster's.
CREATE TABLE embedded_keys (
    role    TEXT PRIMARY KEY,
    keypair BYTEA NOT NULL CHECK (length(keypair) = 64)
);

-- Every account a landed transaction touched, as it stood after the transaction.
CREATE TABLE embedded_accounts (
    address    TEXT PRIMARY KEY,
    lamports   BIGINT NOT NULL,
    owner      TEXT NOT NULL,
    data       BYTEA NOT NULL,
    executable BOOLEAN NOT NULL,
    -- u64 stored bit for bit (u64::MAX, "rent exempt", reads back as -1)
    rent_epoch BIGINT NOT NULL
);

-- Landed transactions in execution order, with what `getTransaction` would return.
CREATE TABLE embedded_ledger (
    seq          BIGSERIAL PRIMARY KEY,
    signature    TEXT NOT NULL UNIQUE,
    slot         BIGINT NOT NULL,
    block_time   BIGINT NOT NULL,
    err          JSONB,
    account_keys TEXT[] NOT NULL,
    -- the signing accounts, fee payer first
    signers      TEXT[] NOT NULL,
    -- the message header: required signatures, read-only signed, read-only unsigned
    header       SMALLINT[] NOT NULL,
    recent_blockhash TEXT NOT NULL,
    -- [{"program_id", "program_index", "accounts" (indexes), "data" (base64)}], and the same plus
    -- "outer_index" and "stack_height" for inner instructions
    instructions JSONB NOT NULL,
    inner_instructions JSONB NOT NULL
);
CREATE INDEX embedded_ledger_account_keys ON embedded_ledger USING GIN (account_keys);
