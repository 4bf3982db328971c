-- Web push: each user's browser subscriptions, one delivery row per (event, subscription), and
-- the service's generated secrets (the VAPID key of the embedded default).

-- A browser's push subscription (`PushSubscription.toJSON()`): the endpoint is the device, so it
-- is unique; subscribing it again (the same or another user signed in there) takes it over.
CREATE TABLE push_subscriptions (
    id         BIGSERIAL PRIMARY KEY,
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    endpoint   TEXT NOT NULL UNIQUE,
    p256dh     TEXT NOT NULL,   -- base64url, no padding: the user agent's P-256 key (65 bytes)
    auth       TEXT NOT NULL,   -- base64url, no padding: the 16-byte auth secret
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX push_subscriptions_by_user ON push_subscriptions (user_id, created_at);

-- An outbox event to one subscription. Written when the outbox row is fanned out (which sets
-- `outbox.delivered_at` in the same statement), so every event reaches every subscription that
-- existed when it happened exactly once as a row; `status` says how its sending went
-- (`skipped`: nothing to say, e.g. a settlement that paid nothing).
CREATE TABLE push_deliveries (
    outbox_id       BIGINT NOT NULL REFERENCES outbox (id),
    subscription_id BIGINT NOT NULL REFERENCES push_subscriptions (id) ON DELETE CASCADE,
    status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed', 'skipped')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- The message's TTL runs out then: a delivery still failing is given up.
    expires_at      TIMESTAMPTZ NOT NULL,
    last_error      TEXT,
    sent_at         TIMESTAMPTZ,
    PRIMARY KEY (outbox_id, subscription_id)
);
CREATE INDEX push_deliveries_due ON push_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX push_deliveries_by_subscription ON push_deliveries (subscription_id);

-- Secrets the service generates once and every replica then shares.
CREATE TABLE service_secrets (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
