//! API keys: `fmk_` + 48 hex characters; only their SHA-256 is stored.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use super::{AuthMethod, Caller};

pub const PREFIX: &str = "fmk_";
/// Characters of the key that listings show: the prefix and 8 hex characters.
pub const VISIBLE: usize = 12;
/// Active keys one user may hold at once.
pub const MAX_ACTIVE_PER_USER: i64 = 25;

pub fn is_well_formed(key: &str) -> bool {
    key.strip_prefix(PREFIX)
        .is_some_and(|hex| hex.len() == 48 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

pub fn hash(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// A key as listed: never the secret.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct ApiKeyRecord {
    pub id: Uuid,
    pub key_prefix: String,
    pub label: String,
    pub created_at: DateTime<Utc>,
}

/// A new key with its secret, shown once.
#[derive(Debug, Serialize)]
pub struct CreatedApiKey {
    #[serde(flatten)]
    pub record: ApiKeyRecord,
    pub key: String,
}

/// Creates a key for `user_id`, or `None` when the user already holds the maximum.
pub async fn create(db: &PgPool, user_id: Uuid, label: &str) -> Result<Option<CreatedApiKey>, sqlx::Error> {
    let key = format!("{PREFIX}{}", hex::encode(rand::random::<[u8; 24]>()));
    let mut tx = db.begin().await?;
    // Serialise key creation per user so the cap holds under concurrent requests.
    sqlx::query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE").bind(user_id).execute(&mut *tx).await?;
    let active: i64 = sqlx::query_scalar("SELECT count(*) FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL")
        .bind(user_id)
        .fetch_one(&mut *tx)
        .await?;
    if active >= MAX_ACTIVE_PER_USER {
        return Ok(None);
    }
    let record: ApiKeyRecord = sqlx::query_as(
        "INSERT INTO api_keys (id, user_id, key_hash, key_prefix, label) VALUES ($1, $2, $3, $4, $5)
         RETURNING id, key_prefix, label, created_at",
    )
    .bind(Uuid::new_v4())
    .bind(user_id)
    .bind(&hash(&key)[..])
    .bind(&key[..VISIBLE])
    .bind(label)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Some(CreatedApiKey { record, key }))
}

pub async fn list(db: &PgPool, user_id: Uuid) -> Result<Vec<ApiKeyRecord>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, key_prefix, label, created_at FROM api_keys
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
    let row: Option<(Uuid, Uuid, String)> = sqlx::query_as(
        "SELECT k.id, u.id, u.wallet_address FROM api_keys k JOIN users u ON u.id = k.user_id
         WHERE k.key_hash = $1 AND k.revoked_at IS NULL",
    )
    .bind(&hash(key)[..])
    .fetch_optional(db)
    .await?;
    Ok(row.map(|(key_id, user_id, wallet)| Caller { user_id, wallet, method: AuthMethod::ApiKey { key_id } }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format() {
        assert!(is_well_formed(&format!("fmk_{}", "a1".repeat(24))));
        assert!(!is_well_formed(&format!("fmk_{}", "A1".repeat(24))));
        assert!(!is_well_formed(&format!("fmk_{}", "a1".repeat(23))));
        assert!(!is_well_formed(&format!("xyz_{}", "a1".repeat(24))));
    }
}
