//! The WebSocket's event stream (`stream_events`, a row per statement appended by triggers on
//! the projection's tables, holding that statement's events in order): the publisher's claim of
//! unpublished rows, their updates' sequence numbers, and their deletion once published.

use serde::Deserialize;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{FromRow, PgConnection, PgPool};

/// A row as the publisher takes it: the events one statement (or one row, for the row
/// triggers) appended, in order.
#[derive(Clone, Debug, FromRow)]
pub struct StreamRow {
    pub id: i64,
    pub events: Json<Vec<StreamEvent>>,
}

/// One event of a row: its channel, its kind and what changed.
#[derive(Clone, Debug, Deserialize)]
pub struct StreamEvent {
    /// `market:<uuid>`, `series:<slug>`, `markets` or `account:<wallet>`.
    pub channel: String,
    /// `trade`, `market`, `round`, `balance`, `positions`, `deposit` or `withdrawal`.
    pub kind: String,
    #[serde(rename = "ref")]
    pub reference: Value,
}

/// Up to `limit` unpublished rows (every row is: a published one is deleted) in the order
/// they were appended. No row is locked before its deletion: the publisher is a singleton (its
/// worker's advisory lock), and a lock would change each row once more (a WAL record each).
/// Were two to publish at once (one that lost its lock finishes its batch, up to a heartbeat
/// later, while the next starts), both would publish the same events under new numbers, and
/// replicas drop the ids they have already forwarded.
pub async fn claim(tx: &mut PgConnection, limit: i64) -> Result<Vec<StreamRow>, sqlx::Error> {
    sqlx::query_as("SELECT id, events FROM stream_events ORDER BY id LIMIT $1").bind(limit).fetch_all(tx).await
}

/// The next sequence numbers, `counts[i]` of them for row `i` (one per update it stands for),
/// in order.
pub async fn sequence(tx: &mut PgConnection, counts: &[i64]) -> Result<Vec<i64>, sqlx::Error> {
    let total: i64 = counts.iter().sum();
    let mut seqs: Vec<i64> = sqlx::query_scalar("SELECT nextval('stream_seq') FROM generate_series(1, $1)").bind(total).fetch_all(&mut *tx).await?;
    seqs.sort_unstable();
    Ok(seqs)
}

/// Deletes the rows `ids`, published by this transaction (deleting a row
/// costs no new row version and no index entry, where marking it published cost both).
///
/// Planned for each batch (an unnamed statement, planned with its array): the table holds few
/// live rows but, until vacuum comes, every row deleted since, and a plan made once per
/// connection while it was nearly empty scans all of them.
pub async fn delete_published(tx: &mut PgConnection, ids: &[i64]) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM stream_events WHERE id = ANY($1)").persistent(false).bind(ids).execute(tx).await?;
    Ok(())
}

/// The last sequence number handed out (0 before any): a snapshot read after it reflects every
/// event up to it.
pub async fn last_seq(db: &PgPool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM stream_seq").fetch_one(db).await
}
