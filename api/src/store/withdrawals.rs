//! `withdrawals`: the queue of withdrawal requests. A request reserves its amount from the
//! wallet's available balance (`positions::AVAILABLE`) as it is inserted, under a per-wallet
//! lock, so concurrent requests can never reserve more than the vault holds. The queue worker
//! claims pending rows with `FOR UPDATE SKIP LOCKED`, records each signature and signed
//! transaction before sending (processing), and ends each confirmed or failed.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use super::operator_budget;

use super::positions::AVAILABLE;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct WithdrawalRow {
    pub id: Uuid,
    pub user_id: Uuid,
    pub wallet: String,
    pub amount: i64,
    pub destination: String,
    pub token_account: String,
    pub create_account: bool,
    pub status: String,
    pub signature: Option<String>,
    pub wire: Option<Vec<u8>>,
    pub failure: Option<String>,
    pub created_at: DateTime<Utc>,
    pub confirmed_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "id, user_id, wallet, amount, destination, token_account, create_account, status, signature, wire, failure, created_at, confirmed_at";

pub struct NewWithdrawal<'a> {
    pub user_id: Uuid,
    pub wallet: &'a str,
    pub amount: u64,
    pub destination: &'a str,
    pub token_account: &'a str,
    pub create_account: bool,
    pub idempotency_key: Option<&'a str>,
    /// Where `create_account`: the token accounts the operator pays for in a UTC day, all users
    /// together and each user alone.
    pub account_budget: AccountBudget,
}

/// The operator's daily budget for withdrawal destinations' token accounts.
#[derive(Clone, Copy, Debug)]
pub struct AccountBudget {
    pub per_day: u32,
    pub per_user_per_day: u32,
}

/// Whose budget for new token accounts is spent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetSpent {
    /// The user's own for today.
    User,
    /// The service's for today, all users together.
    Service,
}

/// Why a request was not queued.
pub enum Queued {
    Created(WithdrawalRow),
    /// The request's idempotency key already made this withdrawal.
    Existing(WithdrawalRow),
    /// The amount exceeds what is available (this much, micro-USDC).
    Insufficient {
        available: u64,
    },
    /// The destination needs a token account and today's budget for them is spent.
    AccountBudgetSpent(BudgetSpent),
}

/// Queues a withdrawal if the wallet's available balance covers it.
pub async fn queue(db: &PgPool, new: NewWithdrawal<'_>) -> Result<Queued, sqlx::Error> {
    let mut tx = db.begin().await?;
    // One request of a wallet at a time between the balance read and the insert.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('fm-withdraw:' || $1, 0))").bind(new.wallet).execute(&mut *tx).await?;
    if let Some(key) = new.idempotency_key {
        let existing: Option<WithdrawalRow> = sqlx::query_as(&format!("SELECT {COLUMNS} FROM withdrawals WHERE user_id = $1 AND idempotency_key = $2"))
            .bind(new.user_id)
            .bind(key)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(row) = existing {
            return Ok(Queued::Existing(row));
        }
    }
    let available: i64 = sqlx::query_scalar(AVAILABLE).bind(new.wallet).fetch_one(&mut *tx).await?;
    if (available as u64) < new.amount {
        return Ok(Queued::Insufficient { available: available as u64 });
    }
    if new.create_account && !counted_today(&mut tx, &new).await? {
        if new_accounts_today(&mut tx, new.user_id).await? >= i64::from(new.account_budget.per_user_per_day) {
            return Ok(Queued::AccountBudgetSpent(BudgetSpent::User));
        }
        // Taken in this transaction: a refusal below, or a rollback, gives it back.
        if !operator_budget::reserve_token_account(&mut tx, new.account_budget.per_day).await? {
            return Ok(Queued::AccountBudgetSpent(BudgetSpent::Service));
        }
    }
    let row: WithdrawalRow = sqlx::query_as(&format!(
        "INSERT INTO withdrawals (id, user_id, wallet, amount, destination, token_account, create_account, status, idempotency_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8) RETURNING {COLUMNS}"
    ))
    .bind(Uuid::new_v4())
    .bind(new.user_id)
    .bind(new.wallet)
    .bind(new.amount as i64)
    .bind(new.destination)
    .bind(new.token_account)
    .bind(new.create_account)
    .bind(new.idempotency_key)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Queued::Created(row))
}

/// What counts a user's new token accounts today: the UTC day's withdrawals that create one.
const CREATING_TODAY: &str = "user_id = $1 AND create_account AND created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'";

/// Whether today's budget already counts `new`'s token account for its user (a destination
/// counts once a day however many withdrawals go to it). Exact under the wallet's lock.
async fn counted_today(tx: &mut sqlx::PgConnection, new: &NewWithdrawal<'_>) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(&format!("SELECT EXISTS (SELECT 1 FROM withdrawals WHERE {CREATING_TODAY} AND token_account = $2)"))
        .bind(new.user_id)
        .bind(new.token_account)
        .fetch_one(tx)
        .await
}

/// The distinct token accounts the user's withdrawals create today.
async fn new_accounts_today(tx: &mut sqlx::PgConnection, user_id: Uuid) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(&format!("SELECT count(DISTINCT token_account) FROM withdrawals WHERE {CREATING_TODAY}")).bind(user_id).fetch_one(tx).await
}

/// One of the user's withdrawals.
pub async fn get(db: &PgPool, user_id: Uuid, id: Uuid) -> Result<Option<WithdrawalRow>, sqlx::Error> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM withdrawals WHERE id = $1 AND user_id = $2")).bind(id).bind(user_id).fetch_optional(db).await
}

/// The user's withdrawals, newest first.
pub async fn list(db: &PgPool, user_id: Uuid, limit: i64, offset: i64) -> Result<Vec<WithdrawalRow>, sqlx::Error> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM withdrawals WHERE user_id = $1 ORDER BY created_at DESC, id LIMIT $2 OFFSET $3"))
        .bind(user_id)
        .bind(limit)
        .bind(offset)
        .fetch_all(db)
        .await
}

/// The oldest pending withdrawals, locked for the caller's transaction (others skip them).
pub async fn claim_pending(db: &mut sqlx::PgConnection, limit: i64) -> Result<Vec<WithdrawalRow>, sqlx::Error> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM withdrawals WHERE status = 'pending' ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED"))
        .bind(limit)
        .fetch_all(db)
        .await
}

/// Records the transaction about to be sent for a claimed withdrawal: processing from now on.
pub async fn mark_processing(db: &mut sqlx::PgConnection, id: Uuid, signature: &str, wire: &[u8]) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE withdrawals SET status = 'processing', signature = $2, wire = $3, sent_at = now(), attempts = attempts + 1 WHERE id = $1")
        .bind(id)
        .bind(signature)
        .bind(wire)
        .execute(db)
        .await?;
    Ok(())
}

/// Replaces a processing withdrawal's transaction whose blockhash expired unlanded (it can no
/// longer land) with a new one; `false` if someone else replaced or ended it first.
pub async fn replace_transaction(db: &PgPool, id: Uuid, old: &str, signature: &str, wire: &[u8]) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE withdrawals SET signature = $3, wire = $4, sent_at = now(), attempts = attempts + 1
         WHERE id = $1 AND status = 'processing' AND signature = $2",
    )
    .bind(id)
    .bind(old)
    .bind(signature)
    .bind(wire)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Processing withdrawals (sent, outcome not yet recorded), oldest first.
pub async fn processing(db: &PgPool, limit: i64) -> Result<Vec<WithdrawalRow>, sqlx::Error> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM withdrawals WHERE status = 'processing' ORDER BY sent_at LIMIT $1")).bind(limit).fetch_all(db).await
}

/// Marks a processing withdrawal confirmed (its transaction is final) and appends its
/// `withdrawal_confirmed` notification, together. The signed transaction is no longer needed.
pub async fn confirm(db: &PgPool, id: Uuid, signature: &str) -> Result<bool, sqlx::Error> {
    let mut tx = db.begin().await?;
    let row: Option<(String, i64, String)> = sqlx::query_as(
        "UPDATE withdrawals SET status = 'confirmed', confirmed_at = now(), wire = NULL WHERE id = $1 AND status = 'processing' AND signature = $2
         RETURNING wallet, amount, destination",
    )
    .bind(id)
    .bind(signature)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((wallet, amount, destination)) = row else { return Ok(false) };
    sqlx::query(
        "INSERT INTO outbox (kind, wallet, ref, payload)
         VALUES ('withdrawal_confirmed', $1, $2, jsonb_build_object('amount', $3::bigint, 'destination', $4::text, 'signature', $5::text))
         ON CONFLICT DO NOTHING",
    )
    .bind(&wallet)
    .bind(id.to_string())
    .bind(amount)
    .bind(&destination)
    .bind(signature)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Marks a processing withdrawal failed with its reason: its reservation is released (and its
/// signed transaction dropped).
pub async fn fail(db: &PgPool, id: Uuid, signature: &str, reason: &str) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE withdrawals SET status = 'failed', failure = $3, failed_at = now(), wire = NULL WHERE id = $1 AND status = 'processing' AND signature = $2",
    )
    .bind(id)
    .bind(signature)
    .bind(reason)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}
