//! The WebSocket's event stream, publisher side: events the projection's triggers appended
//! (`stream_events`, a row per trigger firing) are published to Redis as updates, each with a
//! sequence number in publication order, so every replica receives each once and forwards it to
//! its subscribers (`http::ws`).
//!
//! Numbers are assigned, the events published and their rows deleted inside one database
//! transaction that commits after Redis took them: a crash before the commit publishes them
//! again with new numbers, and replicas drop an update (row id, part) they have already forwarded. Nothing
//! reads a published event (a replica renders an update from the state it names), so none is
//! kept.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{Connection, PgConnection};

use super::{ServiceError, Services};
use crate::store::stream::{self as store, StreamEvent, StreamRow};

/// Rows published per transaction.
const BATCH: i64 = 500;
/// Updates published per transaction (a row stands for one per event, and a `trade` event for
/// one per trade), unless one row alone holds more: a batch republished after a crash must fit
/// in what replicas remember to drop (`http::routes::ws::hub`, four times this). The largest
/// row is a statement's trades, two updates a trade (its market's and its trader's), and the
/// indexer records at most 10,000 trades a statement: 20,000 updates.
pub const MAX_UPDATES: usize = 10_000;

/// An event as it travels between replicas (JSON on the Redis channel).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Published {
    /// The event's row id.
    pub id: i64,
    /// Which of the row's updates this is (from 0: a row holds one per event, a `trade` event
    /// one per trade). With `id`, what replicas deduplicate on.
    #[serde(default)]
    pub part: u32,
    /// Its sequence number: increasing in publication order, across all channels.
    pub seq: i64,
    pub channel: String,
    pub kind: String,
    #[serde(rename = "ref")]
    pub reference: Value,
}

/// The Redis channel events are published on.
pub fn redis_channel(s: &Services) -> String {
    s.redis.key("stream", "events")
}

/// What one `publish` did.
#[derive(Debug, PartialEq, Eq)]
pub struct Batch {
    /// Rows published.
    pub rows: usize,
    /// Whether unpublished rows were left that the batch saw (over its row or update bound):
    /// the next batch is due at once. Otherwise events appended later announce themselves
    /// (`NOTIFY fm_stream` at their commit), and a batch to find that nothing is left — four
    /// round trips — is not needed.
    pub more: bool,
}

/// Publishes one batch of unpublished events.
pub async fn publish(s: &Services) -> Result<Batch, ServiceError> {
    publish_on(s, &mut *s.db.acquire().await?).await
}

/// `publish` on a connection the caller keeps from one batch to the next (the publisher
/// worker): a connection taken from the pool and given back costs a round trip each time (the
/// pool checks it), and a batch follows nearly every projection while trading.
pub async fn publish_on(s: &Services, db: &mut PgConnection) -> Result<Batch, ServiceError> {
    let mut tx = db.begin().await?;
    let claimed = store::claim(&mut tx, BATCH).await?;
    if claimed.is_empty() {
        // Ended now: a kept connection must not wait for the next batch inside a transaction.
        tx.rollback().await?;
        return Ok(Batch { rows: 0, more: false });
    }
    // The rest of the claimed rows are left for the next batch.
    let updates = leading_updates(&claimed);
    let rows = updates.len();
    let more = rows < claimed.len() || claimed.len() as i64 == BATCH;
    let ids: Vec<i64> = claimed[..rows].iter().map(|row| row.id).collect();
    let counts: Vec<i64> = updates.iter().map(|u| u.len() as i64).collect();
    let mut seqs = store::sequence(&mut tx, &counts).await?.into_iter();
    store::delete_published(&mut tx, &ids).await?;
    let channel = redis_channel(s);
    let mut pipe = redis::pipe();
    for (id, row) in ids.into_iter().zip(updates) {
        for (part, (event, reference)) in row.into_iter().enumerate() {
            let seq = seqs.next().expect("a sequence number per update");
            let message = Published { id, part: part as u32, seq, channel: event.channel.clone(), kind: event.kind.clone(), reference };
            pipe.cmd("PUBLISH").arg(&channel).arg(serde_json::to_string(&message).expect("an event serializes")).ignore();
        }
    }
    let mut redis = s.redis.connection().await?;
    pipe.query_async::<()>(&mut redis).await?;
    tx.commit().await?;
    Ok(Batch { rows, more })
}

/// The updates of as many leading rows as hold at most MAX_UPDATES together (at least one row,
/// however many it holds), each with the event it is of.
fn leading_updates(rows: &[StreamRow]) -> Vec<Vec<(&StreamEvent, Value)>> {
    let mut leading: Vec<Vec<(&StreamEvent, Value)>> = Vec::new();
    let mut total = 0;
    for row in rows {
        let updates: Vec<(&StreamEvent, Value)> = row.events.iter().flat_map(|event| updates_of(event).into_iter().map(move |u| (event, u))).collect();
        total += updates.len();
        if !leading.is_empty() && total > MAX_UPDATES {
            break;
        }
        leading.push(updates);
    }
    leading
}

/// The updates an event stands for, in order: one per trade of a statement's trades on a
/// channel (`{"trade_ids": [...]}`, as the `stream_trades` trigger writes it), else the event itself.
fn updates_of(event: &StreamEvent) -> Vec<Value> {
    match event.reference.get("trade_ids").and_then(Value::as_array) {
        Some(trades) if !trades.is_empty() => trades.iter().map(|id| serde_json::json!({ "trade_id": id })).collect(),
        _ => vec![event.reference.clone()],
    }
}

/// The last sequence number handed out: a snapshot read after this reflects every event up to
/// it, so a client applies only updates numbered above.
pub async fn last_seq(s: &Services) -> Result<i64, ServiceError> {
    Ok(store::last_seq(&s.db).await?)
}
