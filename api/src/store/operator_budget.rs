//! The operator's daily budgets for the rent it pays: users' accounts (`operator_paid_users`)
//! and withdrawal destinations' token accounts (`operator_paid_token_accounts`).

use chrono::NaiveDate;
use sqlx::PgPool;

/// Takes one user from `day`'s budget of `cap`, in one statement so concurrent requests cannot
/// pass it; `false` when the day's budget is spent.
pub async fn reserve_user(db: &PgPool, day: NaiveDate, cap: u32) -> Result<bool, sqlx::Error> {
    let taken: Option<i32> = sqlx::query_scalar(
        "INSERT INTO operator_paid_users (day, users) SELECT $1, 1 WHERE $2 > 0
         ON CONFLICT (day) DO UPDATE SET users = operator_paid_users.users + 1 WHERE operator_paid_users.users < $2
         RETURNING users",
    )
    .bind(day)
    .bind(cap as i32)
    .fetch_optional(db)
    .await?;
    Ok(taken.is_some())
}

/// Gives a reservation back (the accounts were not created).
pub async fn release_user(db: &PgPool, day: NaiveDate) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE operator_paid_users SET users = users - 1 WHERE day = $1 AND users > 0").bind(day).execute(db).await?;
    Ok(())
}

/// Takes one token account from today's (UTC) budget of `cap` in the caller's transaction, so
/// its rollback gives it back; `false` when the day's budget is spent.
pub async fn reserve_token_account(tx: &mut sqlx::PgConnection, cap: u32) -> Result<bool, sqlx::Error> {
    let taken: Option<i32> = sqlx::query_scalar(
        "INSERT INTO operator_paid_token_accounts (day, accounts) SELECT (now() AT TIME ZONE 'UTC')::date, 1 WHERE $1 > 0
         ON CONFLICT (day) DO UPDATE SET accounts = operator_paid_token_accounts.accounts + 1
         WHERE operator_paid_token_accounts.accounts < $1
         RETURNING accounts",
    )
    .bind(cap as i32)
    .fetch_optional(tx)
    .await?;
    Ok(taken.is_some())
}
