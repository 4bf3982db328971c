//! Singleton jobs: a Postgres session advisory lock held on a dedicated connection.
//!
//! The lock belongs to the session, so it is held exactly as long as that connection lives: it
//! is opened for the lock and never returned to a pool (a pooled connection handed back while
//! holding it would keep the lock for whoever borrows it next, or lose it to a pool reset).
//! While the job runs the connection is pinged every `HEARTBEAT`; if it fails, the lock may be
//! gone (another process may already have it), so the job is cancelled at once and the lock is
//! sought again. When the process dies, Postgres ends the session and frees the lock.

use std::time::Duration;

use sqlx::{Connection, PgConnection};
use tokio_util::sync::CancellationToken;

use super::LOCK_POLL;

const HEARTBEAT: Duration = Duration::from_secs(2);

/// Runs `job` whenever this process holds lock `key`, until `cancel` fires. `job` gets a token
/// that fires on shutdown or when the lock is lost.
pub async fn run_while_holding<F, Fut>(database_url: &str, key: i64, name: &'static str, cancel: &CancellationToken, mut job: F)
where
    F: FnMut(CancellationToken) -> Fut,
    Fut: Future<Output = ()>,
{
    // The session the lock is sought on, kept between polls (one connection per waiting
    // process, not one per poll); dropped when it fails.
    let mut session: Option<PgConnection> = None;
    while !cancel.is_cancelled() {
        match try_lock(&mut session, database_url, key).await {
            Ok(true) => {
                let mut conn = session.take().expect("a session holds the lock");
                tracing::info!(worker = name, lock = key, "singleton lock taken");
                let held = cancel.child_token();
                let running = job(held.clone());
                tokio::pin!(running);
                let lost = loop {
                    tokio::select! {
                        _ = &mut running => break false,
                        _ = tokio::time::sleep(HEARTBEAT) => {
                            if let Err(e) = sqlx::query("SELECT 1").execute(&mut conn).await {
                                tracing::error!(worker = name, error = %e, "singleton lock connection lost; stopping the job");
                                held.cancel();
                                running.await;
                                break true;
                            }
                        }
                    }
                };
                if !lost {
                    // Unlock explicitly (closing the connection would too).
                    let _ = sqlx::query("SELECT pg_advisory_unlock($1)").bind(key).execute(&mut conn).await;
                    let _ = conn.close().await;
                    tracing::info!(worker = name, lock = key, "singleton lock released");
                }
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(worker = name, error = %e, "cannot reach Postgres for the singleton lock"),
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(LOCK_POLL) => {}
        }
    }
    if let Some(conn) = session {
        let _ = conn.close().await;
    }
}

/// Tries lock `key` on `session` (connecting it first if needed): whether this session now
/// holds it. A session that fails is dropped, so the next try connects afresh.
async fn try_lock(session: &mut Option<PgConnection>, database_url: &str, key: i64) -> Result<bool, sqlx::Error> {
    let conn = match session {
        Some(conn) => conn,
        None => session.insert(PgConnection::connect(database_url).await?),
    };
    match sqlx::query_scalar("SELECT pg_try_advisory_lock($1)").bind(key).fetch_one(conn).await {
        Ok(taken) => Ok(taken),
        Err(e) => {
            *session = None;
            Err(e)
        }
    }
}

/// Whether any session holds lock `key` (tests and operators look with this).
pub async fn is_held(db: &sqlx::PgPool, key: i64) -> Result<bool, sqlx::Error> {
    // An advisory lock on a bigint key shows as classid = high 32 bits, objid = low 32 bits.
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
                        AND classid::bigint = ($1 >> 32) & 4294967295 AND objid::bigint = $1 & 4294967295 AND objsubid = 1)",
    )
    .bind(key)
    .fetch_one(db)
    .await
}
