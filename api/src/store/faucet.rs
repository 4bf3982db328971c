//! `faucet_grants`: test USDC given per wallet and UTC day.

use chrono::NaiveDate;
use sqlx::PgPool;

/// Reserves `amount` of `wallet`'s allowance for `day` under `cap`, in one statement so
/// concurrent requests cannot pass it: the day's new total, or `None` when it would exceed.
pub async fn reserve(db: &PgPool, wallet: &str, day: NaiveDate, amount: u64, cap: u64) -> Result<Option<u64>, sqlx::Error> {
    let granted: Option<i64> = sqlx::query_scalar(
        "INSERT INTO faucet_grants (wallet, day, amount) VALUES ($1, $2, $3)
         ON CONFLICT (wallet, day) DO UPDATE SET amount = faucet_grants.amount + EXCLUDED.amount
         WHERE faucet_grants.amount + EXCLUDED.amount <= $4
         RETURNING amount",
    )
    .bind(wallet)
    .bind(day)
    .bind(amount as i64)
    .bind(cap as i64)
    .fetch_optional(db)
    .await?;
    Ok(granted.map(|g| g as u64))
}

/// Gives a reservation back (the grant did not reach the vault).
pub async fn release(db: &PgPool, wallet: &str, day: NaiveDate, amount: u64) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE faucet_grants SET amount = amount - $3 WHERE wallet = $1 AND day = $2").bind(wallet).bind(day).bind(amount as i64).execute(db).await?;
    Ok(())
}
