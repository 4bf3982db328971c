//! Push subscriptions, the fan-out of outbox events into deliveries, the deliveries' progress,
//! and generated service secrets.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{FromRow, PgPool};
use uuid::Uuid;

use crate::domain::push::{MAX_SUBSCRIPTIONS_PER_USER, Subscription};

/// Keeps `subscription` for `user`; beyond the per-user limit the user's oldest subscriptions
/// go. A known endpoint is updated when it is `user`'s, or when its keys are the same (the same
/// browser subscription, signed in as another user); otherwise nothing is written: `false`.
pub async fn subscribe(db: &PgPool, user: Uuid, subscription: &Subscription) -> Result<bool, sqlx::Error> {
    let mut tx = db.begin().await?;
    let written = sqlx::query(
        "INSERT INTO push_subscriptions (user_id, endpoint, p256dh, auth) VALUES ($1, $2, $3, $4)
         ON CONFLICT (endpoint) DO UPDATE SET user_id = EXCLUDED.user_id, p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth, created_at = now()
         WHERE push_subscriptions.user_id = EXCLUDED.user_id
            OR (push_subscriptions.p256dh = EXCLUDED.p256dh AND push_subscriptions.auth = EXCLUDED.auth)",
    )
    .bind(user)
    .bind(&subscription.endpoint)
    .bind(&subscription.p256dh)
    .bind(&subscription.auth)
    .execute(&mut *tx)
    .await?;
    if written.rows_affected() == 0 {
        return Ok(false);
    }
    sqlx::query(
        "DELETE FROM push_subscriptions WHERE id IN (
             SELECT id FROM push_subscriptions WHERE user_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2)",
    )
    .bind(user)
    .bind(MAX_SUBSCRIPTIONS_PER_USER)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Forgets `user`'s subscription at `endpoint`; whether there was one.
pub async fn unsubscribe(db: &PgPool, user: Uuid, endpoint: &str) -> Result<bool, sqlx::Error> {
    let deleted = sqlx::query("DELETE FROM push_subscriptions WHERE user_id = $1 AND endpoint = $2").bind(user).bind(endpoint).execute(db).await?;
    Ok(deleted.rows_affected() > 0)
}

/// Forgets a subscription the push service says is gone (404/410).
pub async fn remove(db: &PgPool, subscription_id: i64) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM push_subscriptions WHERE id = $1").bind(subscription_id).execute(db).await?;
    Ok(())
}

/// Fans out up to `limit` outbox events not yet handed to push: one delivery per subscription
/// of the event's user that existed when the event happened, due now, expiring `ttl_secs` after
/// the event. An event older than its TTL gets none (a stale notification is noise). One
/// statement: the deliveries and the events' `delivered_at` commit together. Returns the events
/// fanned out.
pub async fn fan_out(db: &PgPool, limit: i64, ttl_secs: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "WITH batch AS (
             SELECT id, wallet, created_at FROM outbox WHERE delivered_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
         ), fanned AS (
             INSERT INTO push_deliveries (outbox_id, subscription_id, expires_at)
             SELECT b.id, p.id, b.created_at + make_interval(secs => $2)
             FROM batch b
             JOIN users u ON u.wallet_address = b.wallet
             JOIN push_subscriptions p ON p.user_id = u.id AND p.created_at <= b.created_at
             WHERE b.created_at + make_interval(secs => $2) > now()
             ON CONFLICT DO NOTHING
         )
         UPDATE outbox SET delivered_at = now() WHERE id IN (SELECT id FROM batch)",
    )
    .bind(limit)
    .bind(ttl_secs as f64)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// A delivery due now, with its event and where to send it.
#[derive(Debug, FromRow)]
pub struct DueDelivery {
    pub outbox_id: i64,
    pub subscription_id: i64,
    pub attempts: i32,
    pub expires_at: DateTime<Utc>,
    pub kind: String,
    pub market_id: Option<Uuid>,
    #[sqlx(rename = "ref")]
    pub reference: Option<String>,
    pub payload: Value,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub exchange: Option<String>,
    pub symbol: Option<String>,
}

/// Up to `limit` pending deliveries due now, oldest events first.
pub async fn due(db: &PgPool, limit: i64) -> Result<Vec<DueDelivery>, sqlx::Error> {
    sqlx::query_as(
        "SELECT d.outbox_id, d.subscription_id, d.attempts, d.expires_at, o.kind, o.market_id, o.ref, o.payload,
                p.endpoint, p.p256dh, p.auth, s.exchange, s.symbol
         FROM push_deliveries d
         JOIN outbox o ON o.id = d.outbox_id
         JOIN push_subscriptions p ON p.id = d.subscription_id
         LEFT JOIN markets m ON m.id = o.market_id
         LEFT JOIN series s ON s.id = m.series_id
         WHERE d.status = 'pending' AND d.next_attempt_at <= now()
         ORDER BY d.next_attempt_at, d.outbox_id
         LIMIT $1",
    )
    .bind(limit)
    .fetch_all(db)
    .await
}

/// The push service accepted the message.
pub async fn mark_sent(db: &PgPool, outbox_id: i64, subscription_id: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE push_deliveries SET status = 'sent', sent_at = now(), attempts = attempts + 1, last_error = NULL
         WHERE outbox_id = $1 AND subscription_id = $2",
    )
    .bind(outbox_id)
    .bind(subscription_id)
    .execute(db)
    .await?;
    Ok(())
}

/// A failure worth retrying: tried again after `delay_secs`, or given up (`failed`) when that
/// falls after the message's expiry.
pub async fn retry_later(db: &PgPool, outbox_id: i64, subscription_id: i64, delay_secs: u64, error: &str) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE push_deliveries
         SET attempts = attempts + 1, last_error = $4, next_attempt_at = now() + make_interval(secs => $3),
             status = CASE WHEN now() + make_interval(secs => $3) >= expires_at THEN 'failed' ELSE 'pending' END
         WHERE outbox_id = $1 AND subscription_id = $2",
    )
    .bind(outbox_id)
    .bind(subscription_id)
    .bind(delay_secs as f64)
    .bind(error)
    .execute(db)
    .await?;
    Ok(())
}

/// A delivery with nothing to say (`domain::push::notification`).
pub async fn mark_skipped(db: &PgPool, outbox_id: i64, subscription_id: i64) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE push_deliveries SET status = 'skipped' WHERE outbox_id = $1 AND subscription_id = $2")
        .bind(outbox_id)
        .bind(subscription_id)
        .execute(db)
        .await?;
    Ok(())
}

/// A failure retrying cannot mend (the push service refused the request itself).
pub async fn mark_failed(db: &PgPool, outbox_id: i64, subscription_id: i64, error: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE push_deliveries SET status = 'failed', attempts = attempts + 1, last_error = $3 WHERE outbox_id = $1 AND subscription_id = $2")
        .bind(outbox_id)
        .bind(subscription_id)
        .bind(error)
        .execute(db)
        .await?;
    Ok(())
}

/// The secret called `name`, made by `generate` the first time any replica asks (the first
/// writer wins; every later caller reads its value).
pub async fn secret(db: &PgPool, name: &str, generate: impl FnOnce() -> String) -> Result<String, sqlx::Error> {
    sqlx::query("INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING").bind(name).bind(generate()).execute(db).await?;
    sqlx::query_scalar("SELECT value FROM service_secrets WHERE name = $1").bind(name).fetch_one(db).await
}
