//! Which deposits a sweep credited: the one writer of a deposit's `credited` state, run by the
//! projection of a sweep (`DepositSwept`) and after a transfer is recorded (a webhook or the
//! reconciliation can learn of a transfer after the sweep that took it).
//!
//! A sweep moves everything the deposit address holds, and only sweeps take money out of it,
//! so in chain order the sweeps' running total covers exactly the transfers before them: a
//! transfer is credited by the first sweep whose running total reaches the transfers' running
//! total up to and including it. Two transfers in the same slot are ordered by signature (the
//! chain's order inside a slot is not in the record); the totals still agree.

use sqlx::PgConnection;

/// Serializes crediting per wallet: a transfer recorded while its sweep is being projected is
/// seen by whichever of the two commits last.
async fn lock_wallet(db: &mut PgConnection, wallet: &str) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('fm-deposit:' || $1, 0))").bind(wallet).execute(db).await?;
    Ok(())
}

/// Marks `wallet`'s transfers that a sweep has taken as credited (with the sweep's signature
/// and time) and appends a `deposit_confirmed` notification for each, in the caller's
/// transaction. How many were newly credited.
pub async fn match_sweeps(db: &mut PgConnection, wallet: &str) -> Result<u64, sqlx::Error> {
    lock_wallet(db, wallet).await?;
    let credited = sqlx::query(
        "WITH t AS (
             SELECT signature, address, sweep_signature, sum(amount) OVER (ORDER BY slot, signature, address) AS upto
             FROM deposit_transfers WHERE wallet = $1
         ), s AS (
             SELECT signature, at, sum(amount) OVER (ORDER BY slot, signature, ix_index) AS upto
             FROM deposits WHERE wallet = $1
         ), matched AS (
             SELECT t.signature, t.address, s.signature AS sweep, s.at
             FROM t CROSS JOIN LATERAL (SELECT signature, at FROM s WHERE s.upto >= t.upto ORDER BY s.upto LIMIT 1) s
             WHERE t.sweep_signature IS NULL
         ), credited AS (
             UPDATE deposit_transfers d SET sweep_signature = m.sweep, credited_at = m.at
             FROM matched m WHERE d.signature = m.signature AND d.address = m.address AND d.sweep_signature IS NULL
             RETURNING d.signature, d.address, d.wallet, d.amount
         )
         INSERT INTO outbox (kind, wallet, ref, payload)
         SELECT 'deposit_confirmed', wallet, signature || ':' || address, jsonb_build_object('amount', amount, 'signature', signature)
         FROM credited
         ON CONFLICT DO NOTHING",
    )
    .bind(wallet)
    .execute(&mut *db)
    .await?
    .rows_affected();
    Ok(credited)
}

/// Where a deposit was learnt of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Webhook,
    Reconciliation,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Webhook => "webhook",
            Source::Reconciliation => "reconciliation",
        }
    }
}

/// Records that `tx` put `amount` into `wallet`'s deposit `address` (idempotent per transaction
/// and address) and credits it at once if a sweep already took it. Whether it was new.
pub async fn record_transfer(
    db: &mut PgConnection,
    signature: &str,
    address: &str,
    wallet: &str,
    amount: u64,
    slot: u64,
    source: Source,
) -> Result<bool, sqlx::Error> {
    // `match_sweeps` takes the wallet's lock: whichever of this and a sweep's projection commits
    // last sees the other.
    let new = sqlx::query(
        "INSERT INTO deposit_transfers (signature, address, wallet, amount, slot, source) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT DO NOTHING",
    )
    .bind(signature)
    .bind(address)
    .bind(wallet)
    .bind(amount as i64)
    .bind(slot as i64)
    .bind(source.as_str())
    .execute(&mut *db)
    .await?
    .rows_affected()
        == 1;
    if new {
        match_sweeps(db, wallet).await?;
    }
    Ok(new)
}
