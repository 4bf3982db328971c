//! The WebSocket's event stream (`stream_events`: a row per firing of the triggers on the
//! projection's tables, holding the events it made in order): the publisher's claim of
//! unpublished rows, their updates' sequence numbers, and their deletion once published.

use serde::Deserialize;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{PgConnection, PgPool};

/// A row as the publisher takes it: the events one trigger firing appended (a statement
/// trigger's for its statement, a row trigger's for its row), in order.
#[derive(Clone, Debug)]
pub struct StreamRow {
    pub id: i64,
    pub events: Vec<StreamEvent>,
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
/// replicas drop the updates they have already forwarded.
pub async fn claim(tx: &mut PgConnection, limit: i64) -> Result<Vec<StreamRow>, sqlx::Error> {
    let rows: Vec<(i64, Json<Value>)> = sqlx::query_as("SELECT id, events FROM stream_events ORDER BY id LIMIT $1").bind(limit).fetch_all(tx).await?;
    Ok(rows.into_iter().map(|(id, Json(events))| StreamRow { id, events: events_of(id, events) }).collect())
}

/// A row's events. The column takes any JSON; an event that is not an object with a string
/// `channel` and `kind` (which no trigger writes) cannot be routed, and is logged and left out
/// rather than stopping every row after it.
fn events_of(id: i64, events: Value) -> Vec<StreamEvent> {
    let Value::Array(events) = events else {
        tracing::error!(id, "a stream row whose events are not an array: nothing of it is published");
        return Vec::new();
    };
    events
        .into_iter()
        .filter_map(|event| {
            // From the value in place: every event is read, and only a failure needs it whole.
            StreamEvent::deserialize(&event).inspect_err(|error| tracing::error!(id, %event, %error, "a stream event without a channel or kind: left out")).ok()
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::events_of;

    #[test]
    fn a_row_keeps_its_routable_events_in_order() {
        let events = json!([
            {"channel": "market:m", "kind": "market", "ref": {"market_id": "m"}},
            {"channel": null, "kind": "balance", "ref": {}},
            {"kind": "balance", "ref": {}},
            "positions",
            {"channel": "account:w", "kind": "positions", "ref": {}},
        ]);
        let kept: Vec<(String, String)> = events_of(1, events).into_iter().map(|e| (e.channel, e.kind)).collect();
        assert_eq!(kept, [("market:m".to_owned(), "market".to_owned()), ("account:w".to_owned(), "positions".to_owned())]);
        assert!(events_of(2, json!({"channel": "markets"})).is_empty(), "a row that is not an array publishes nothing");
    }
}
