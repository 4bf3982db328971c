//! `api_keys`: one row per key, its SHA-256 only (`domain::api_key`).

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::domain::api_key::{self, MAX_ACTIVE_PER_USER, Scopes, VISIBLE};
use crate::domain::caller::{AuthMethod, Caller};

/// A key as listed: never the secret.
#[derive(Debug, sqlx::FromRow)]
pub struct ApiKeyRow {
    pub id: Uuid,
    pub key_prefix: String,
    pub label: String,
    /// The scopes' names (`domain::api_key::Scope`).
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
}

/// Stores `key` for `user_id`, or `None` when the user already holds the maximum.
pub async fn create(db: &PgPool, user_id: Uuid, key: &str, label: &str, scopes: Scopes) -> Result<Option<ApiKeyRow>, sqlx::Error> {
    let mut tx = db.begin().await?;
    // Serialise key creation per user so the cap holds under concurrent requests.
    sqlx::query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE").bind(user_id).execute(&mut *tx).await?;
    let active: i64 = sqlx::query_scalar("SELECT count(*) FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL").bind(user_id).fetch_one(&mut *tx).await?;
    if active >= MAX_ACTIVE_PER_USER {
        return Ok(None);
    }
    let record: ApiKeyRow = sqlx::query_as(
        "INSERT INTO api_keys (id, user_id, key_hash, key_prefix, label, scopes) VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING id, key_prefix, label, scopes, created_at",
    )
    .bind(Uuid::new_v4())
    .bind(user_id)
    .bind(&api_key::hash(key)[..])
    .bind(&key[..VISIBLE])
    .bind(label)
    .bind(scopes.names())
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Some(record))
}

pub async fn list(db: &PgPool, user_id: Uuid) -> Result<Vec<ApiKeyRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, key_prefix, label, scopes, created_at FROM api_keys
         WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at, id",
    )
    .bind(user_id)
    .fetch_all(db)
    .await
}

/// Revokes the caller's own key; `false` when there is no such active key of theirs.
pub async fn revoke(db: &PgPool, user_id: Uuid, key_id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL")
        .bind(key_id)
        .bind(user_id)
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// The owner of an active key.
pub async fn find_caller(db: &PgPool, key: &str) -> Result<Option<Caller>, sqlx::Error> {
    let row: Option<(Uuid, Uuid, String, Vec<String>)> = sqlx::query_as(
        "SELECT k.id, u.id, u.wallet_address, k.scopes FROM api_keys k JOIN users u ON u.id = k.user_id
         WHERE k.key_hash = $1 AND k.revoked_at IS NULL",
    )
    .bind(&api_key::hash(key)[..])
    .fetch_optional(db)
    .await?;
    Ok(row.map(|(key_id, user_id, wallet, scopes)| {
        // The column's CHECK allows only the known names, at least one.
        let scopes = Scopes::parse(scopes.iter().map(String::as_str)).unwrap_or(Scopes::DEFAULT);
        Caller { user_id, wallet, method: AuthMethod::ApiKey { key_id, scopes } }
    }))
}
