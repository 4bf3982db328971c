-- Users are keyed by their Solana wallet (base58 of a 32-byte ed25519 public key); the service
-- never holds a user's private key. Created on first sign-in.
CREATE TABLE users (
    id             UUID PRIMARY KEY,
    wallet_address TEXT NOT NULL UNIQUE CHECK (length(wallet_address) BETWEEN 32 AND 44),
    display_name   TEXT CHECK (display_name IS NULL OR length(display_name) BETWEEN 1 AND 64),
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_active_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
