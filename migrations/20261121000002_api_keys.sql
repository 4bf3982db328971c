-- API keys for bots and scripts. Only the SHA-256 of the secret is stored; `key_prefix` (the
-- first 12 characters, "fmk_" + 8 hex) is what listings show. Revocation is a timestamp so a
-- revoked key stays on record and stops working at once.
CREATE TABLE api_keys (
    id          UUID PRIMARY KEY,
    user_id     UUID NOT NULL REFERENCES users (id),
    key_hash    BYTEA NOT NULL UNIQUE CHECK (length(key_hash) = 32),
    key_prefix  TEXT NOT NULL,
    label       TEXT NOT NULL DEFAULT '' CHECK (length(label) <= 64),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at  TIMESTAMPTZ
);

CREATE INDEX api_keys_active_by_user ON api_keys (user_id, created_at) WHERE revoked_at IS NULL;
