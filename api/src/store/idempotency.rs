//! `idempotency_keys`: the state of each `Idempotency-Key` (the flow is
//! `services::idempotency`). The same key with the same request returns the first response and
//! never acts twice; with another request it is refused.
//!
//! Crash safety: the chain signature of the transaction a request sends is stored before it is
//! sent. A retry that finds its key still unfinished after `RECOVER_AFTER` (longer than a
//! blockhash stays valid, so the transaction can no longer land later) asks the chain whether
//! that signature landed: if so the response is rebuilt from it, if not the request runs again.
//! Within `RECOVER_AFTER` the first attempt may still be running: 409 `IDEMPOTENCY_KEY_IN_USE`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

/// A blockhash is valid for 150 blocks (about 60 s); twice that and some.
pub const RECOVER_AFTER: Duration = Duration::from_secs(150);

/// The outcome of claiming a key.
pub enum Claim {
    /// First use (or a recovered one whose transaction never landed): run the request.
    Run,
    /// Already answered: answer the same.
    Replay { status: u16, body: Value },
    /// A previous attempt sent this transaction and did not finish: find out whether it landed.
    Recover { signature: String },
    /// The key was used with another request.
    Mismatch,
    /// The first request with this key is still running (or recently stopped); the signature
    /// of the transaction it sent, if it got that far.
    InUse { signature: Option<String> },
}

#[derive(sqlx::FromRow)]
struct Stored {
    fingerprint: Vec<u8>,
    signature: Option<String>,
    status: Option<i16>,
    response: Option<Value>,
    updated_at: DateTime<Utc>,
}

pub struct IdempotencyKey {
    pub user_id: Uuid,
    pub key: String,
}

impl IdempotencyKey {
    pub async fn claim(&self, db: &PgPool, fingerprint: &[u8]) -> Result<Claim, sqlx::Error> {
        let inserted = sqlx::query("INSERT INTO idempotency_keys (user_id, key, fingerprint) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
            .bind(self.user_id)
            .bind(&self.key)
            .bind(fingerprint)
            .execute(db)
            .await?
            .rows_affected();
        if inserted == 1 {
            return Ok(Claim::Run);
        }
        let Stored { fingerprint: stored, signature, status, response: body, updated_at } =
            sqlx::query_as("SELECT fingerprint, signature, status, response, updated_at FROM idempotency_keys WHERE user_id = $1 AND key = $2")
                .bind(self.user_id)
                .bind(&self.key)
                .fetch_one(db)
                .await?;
        if stored != fingerprint {
            return Ok(Claim::Mismatch);
        }
        if let (Some(status), Some(body)) = (status, body) {
            return Ok(Claim::Replay { status: status as u16, body });
        }
        if Utc::now() - updated_at < chrono::Duration::from_std(RECOVER_AFTER).expect("fits") {
            return Ok(Claim::InUse { signature });
        }
        // Take the stale attempt over; of two retries racing here, one wins.
        let taken = sqlx::query("UPDATE idempotency_keys SET updated_at = now() WHERE user_id = $1 AND key = $2 AND updated_at = $3")
            .bind(self.user_id)
            .bind(&self.key)
            .bind(updated_at)
            .execute(db)
            .await?
            .rows_affected();
        match (taken, signature) {
            (0, _) => Ok(Claim::InUse { signature: None }),
            (_, Some(signature)) => Ok(Claim::Recover { signature }),
            (_, None) => Ok(Claim::Run),
        }
    }

    /// Records the signature of the transaction about to be sent.
    pub async fn sending(&self, db: &PgPool, signature: &str) -> Result<(), sqlx::Error> {
        sqlx::query("UPDATE idempotency_keys SET signature = $3, updated_at = now() WHERE user_id = $1 AND key = $2")
            .bind(self.user_id)
            .bind(&self.key)
            .bind(signature)
            .execute(db)
            .await?;
        Ok(())
    }

    /// Stores the response every later use of the key gets.
    pub async fn finish(&self, db: &PgPool, status: u16, body: &Value) -> Result<(), sqlx::Error> {
        sqlx::query("UPDATE idempotency_keys SET status = $3, response = $4, updated_at = now() WHERE user_id = $1 AND key = $2")
            .bind(self.user_id)
            .bind(&self.key)
            .bind(status as i16)
            .bind(body)
            .execute(db)
            .await?;
        Ok(())
    }

    /// Forgets the key: the request failed before anything was sent, so a retry may run it.
    pub async fn release(&self, db: &PgPool) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND signature IS NULL")
            .bind(self.user_id)
            .bind(&self.key)
            .execute(db)
            .await?;
        Ok(())
    }
}
