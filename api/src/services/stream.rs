//! The WebSocket's event stream, publisher side: events the projection's triggers appended
//! (`stream_events`) are given a sequence number and published to Redis in that order, so every
//! replica receives each once and forwards it to its subscribers (`http::ws`).
//!
//! Numbers are assigned and the events published inside one database transaction that commits
//! after Redis took them: a crash before the commit publishes them again with new numbers, and
//! replicas drop an event id they have already forwarded.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ServiceError, Services};
use crate::store::stream as store;

/// Events published per transaction.
const BATCH: i64 = 500;
/// Published events are kept this long (a replica renders an event from current state, so
/// nothing reads old ones; they are kept to inspect).
const KEEP_SECS: i64 = 3600;

/// An event as it travels between replicas (JSON on the Redis channel).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Published {
    /// The event's row id: what replicas deduplicate on.
    pub id: i64,
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

/// Publishes one batch of unpublished events; how many.
pub async fn publish(s: &Services) -> Result<usize, ServiceError> {
    let mut tx = s.db.begin().await?;
    let events = store::claim(&mut tx, BATCH).await?;
    if events.is_empty() {
        return Ok(0);
    }
    let ids: Vec<i64> = events.iter().map(|e| e.id).collect();
    let seqs = store::sequence(&mut tx, &ids).await?;
    let channel = redis_channel(s);
    let mut pipe = redis::pipe();
    for (event, seq) in events.into_iter().zip(seqs) {
        let message = Published { id: event.id, seq, channel: event.channel, kind: event.kind, reference: event.reference };
        pipe.cmd("PUBLISH").arg(&channel).arg(serde_json::to_string(&message).expect("an event serializes")).ignore();
    }
    let mut redis = s.redis.connection().await?;
    pipe.query_async::<()>(&mut redis).await?;
    tx.commit().await?;
    Ok(ids.len())
}

/// The last sequence number handed out: a snapshot read after this reflects every event up to
/// it, so a client applies only updates numbered above.
pub async fn last_seq(s: &Services) -> Result<i64, ServiceError> {
    Ok(store::last_seq(&s.db).await?)
}

/// Deletes events published over an hour ago.
pub async fn prune(s: &Services) -> Result<u64, ServiceError> {
    Ok(store::prune(&s.db, KEEP_SECS).await?)
}
