//! `users`: one per wallet, created on first sign-in.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

#[derive(Debug, sqlx::FromRow)]
pub struct User {
    pub id: Uuid,
    pub wallet_address: String,
    pub display_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub last_active_at: DateTime<Utc>,
}

/// The user of `wallet`, created if new; marks them active now.
pub async fn sign_in(db: &PgPool, wallet: &str) -> Result<User, sqlx::Error> {
    sqlx::query_as(
        "INSERT INTO users (id, wallet_address) VALUES ($1, $2)
         ON CONFLICT (wallet_address) DO UPDATE SET last_active_at = now()
         RETURNING id, wallet_address, display_name, created_at, last_active_at",
    )
    .bind(Uuid::new_v4())
    .bind(wallet)
    .fetch_one(db)
    .await
}

pub async fn find(db: &PgPool, id: Uuid) -> Result<Option<User>, sqlx::Error> {
    sqlx::query_as("SELECT id, wallet_address, display_name, created_at, last_active_at FROM users WHERE id = $1").bind(id).fetch_optional(db).await
}

/// Sets (or, with `None`, clears) a user's display name.
pub async fn set_display_name(db: &PgPool, id: Uuid, name: Option<&str>) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE users SET display_name = $2 WHERE id = $1").bind(id).bind(name).execute(db).await?;
    Ok(())
}
