//! `deposit_addresses`, `deposit_transfers` and the sweeps (`deposits`): what reconciliation
//! reads and what `GET /v1/deposits` lists. Recording a transfer and crediting it are the
//! indexer's (`indexer::deposits`), the one writer of a deposit's state.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

/// A deposit address as reconciliation sees it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct WatchedAddress {
    pub address: String,
    pub wallet: String,
    /// The last transaction of the address already read.
    pub cursor: Option<String>,
    /// What should be in it now (micro-USDC): the transfers recorded less what sweeps took.
    pub unswept: i64,
}

/// Watches a deposit address (the projection of its `UserCreated` does too; this covers users
/// created before deposit addresses were recorded).
pub async fn watch(db: &PgPool, address: &str, wallet: &str) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO deposit_addresses (address, wallet) VALUES ($1, $2) ON CONFLICT DO NOTHING").bind(address).bind(wallet).execute(db).await?;
    Ok(())
}

const WATCHED: &str = "SELECT a.address, a.wallet, a.cursor,
        (COALESCE((SELECT sum(amount) FROM deposit_transfers t WHERE t.wallet = a.wallet), 0)
       - COALESCE((SELECT sum(amount) FROM deposits d WHERE d.wallet = a.wallet), 0))::BIGINT AS unswept
     FROM deposit_addresses a";

/// Deposit addresses after `after` (by address), `limit` of them.
pub async fn watched(db: &PgPool, after: Option<&str>, limit: i64) -> Result<Vec<WatchedAddress>, sqlx::Error> {
    sqlx::query_as(&format!("{WATCHED} WHERE $1::TEXT IS NULL OR a.address > $1 ORDER BY a.address LIMIT $2")).bind(after).bind(limit).fetch_all(db).await
}

/// One wallet's deposit address, if it has one.
pub async fn watched_wallet(db: &PgPool, wallet: &str) -> Result<Option<WatchedAddress>, sqlx::Error> {
    sqlx::query_as(&format!("{WATCHED} WHERE a.wallet = $1")).bind(wallet).fetch_optional(db).await
}

/// Moves an address's cursor forward to `signature` (never back: two readers may race).
pub async fn advance_cursor(db: &PgPool, address: &str, from: Option<&str>, signature: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE deposit_addresses SET cursor = $3 WHERE address = $1 AND cursor IS NOT DISTINCT FROM $2")
        .bind(address)
        .bind(from)
        .bind(signature)
        .execute(db)
        .await?;
    Ok(())
}

/// The wallets of the given deposit addresses (those that are deposit addresses).
pub async fn owners(db: &PgPool, addresses: &[String]) -> Result<HashMap<String, String>, sqlx::Error> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT address, wallet FROM deposit_addresses WHERE address = ANY($1)").bind(addresses).fetch_all(db).await?;
    Ok(rows.into_iter().collect())
}

/// A deposit as `GET /v1/deposits` lists it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DepositRow {
    pub signature: String,
    pub address: String,
    pub amount: i64,
    pub slot: i64,
    pub source: String,
    pub detected_at: DateTime<Utc>,
    pub sweep_signature: Option<String>,
    pub credited_at: Option<DateTime<Utc>>,
}

/// One of the wallet's deposits: the transfer `signature` made to deposit `address`.
pub async fn get(db: &PgPool, wallet: &str, signature: &str, address: &str) -> Result<Option<DepositRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT signature, address, amount, slot, source, detected_at, sweep_signature, credited_at
         FROM deposit_transfers WHERE signature = $1 AND address = $2 AND wallet = $3",
    )
    .bind(signature)
    .bind(address)
    .bind(wallet)
    .fetch_optional(db)
    .await
}

/// The wallet's deposits, newest first.
pub async fn list(db: &PgPool, wallet: &str, limit: i64, offset: i64) -> Result<Vec<DepositRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT signature, address, amount, slot, source, detected_at, sweep_signature, credited_at
         FROM deposit_transfers WHERE wallet = $1 ORDER BY slot DESC, signature DESC LIMIT $2 OFFSET $3",
    )
    .bind(wallet)
    .bind(limit)
    .bind(offset)
    .fetch_all(db)
    .await
}
