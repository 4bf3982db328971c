//! The WebSocket's event stream (`stream_events`, appended by triggers on the projection's
//! tables): the publisher's claim of unpublished events, their sequence numbers, pruning.

use serde_json::Value;
use sqlx::{FromRow, PgConnection, PgPool};

/// An event as the publisher takes it.
#[derive(Clone, Debug, FromRow)]
pub struct StreamEvent {
    pub id: i64,
    pub channel: String,
    pub kind: String,
    #[sqlx(rename = "ref")]
    pub reference: Value,
}

/// Up to `limit` unpublished events in the order they were appended, locked for this
/// transaction.
pub async fn claim(tx: &mut PgConnection, limit: i64) -> Result<Vec<StreamEvent>, sqlx::Error> {
    sqlx::query_as("SELECT id, channel, kind, ref FROM stream_events WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED")
        .bind(limit)
        .fetch_all(tx)
        .await
}

/// Gives the events `ids` (in that order) the next sequence numbers, `counts[i]` of them for
/// event `i` (one per update it stands for), and marks them published; returns the numbers in
/// order. An event's row keeps its first number.
///
/// The update is planned for each batch (an unnamed statement, planned with its arrays): the
/// plan made once per connection was made while the table was small, a hash join over a scan
/// of the whole table, and went on scanning it as it grew to an hour of events — 40 million
/// rows read in a 20-second trading benchmark, a trade's largest cost in Postgres.
pub async fn sequence(tx: &mut PgConnection, ids: &[i64], counts: &[i64]) -> Result<Vec<i64>, sqlx::Error> {
    let total: i64 = counts.iter().sum();
    let mut seqs: Vec<i64> = sqlx::query_scalar("SELECT nextval('stream_seq') FROM generate_series(1, $1)").bind(total).fetch_all(&mut *tx).await?;
    seqs.sort_unstable();
    let firsts: Vec<i64> = counts.iter().scan(0usize, |at, &n| {
        let first = seqs[*at];
        *at += n as usize;
        Some(first)
    }).collect();
    sqlx::query("UPDATE stream_events e SET seq = s.seq, published_at = now() FROM unnest($1::bigint[], $2::bigint[]) AS s(id, seq) WHERE e.id = s.id")
        .persistent(false)
        .bind(ids)
        .bind(&firsts)
        .execute(tx)
        .await?;
    Ok(seqs)
}

/// The last sequence number handed out (0 before any): a snapshot read after it reflects every
/// event up to it.
pub async fn last_seq(db: &PgPool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM stream_seq").fetch_one(db).await
}

/// Deletes events published more than `keep_secs` ago; how many.
pub async fn prune(db: &PgPool, keep_secs: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query("DELETE FROM stream_events WHERE published_at < now() - make_interval(secs => $1)").bind(keep_secs as f64).execute(db).await?;
    Ok(done.rows_affected())
}
