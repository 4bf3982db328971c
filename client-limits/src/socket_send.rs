//! Sending on a WebSocket with a deadline, for both of the service's WebSocket endpoints (the
//! `/v1/ws` stream and the embedded chain's PubSub): a client that stops reading would otherwise
//! hold its connection's task, and the messages queued for it, for as long as it stays connected.

use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};

/// A message the client has not taken after this long closes its connection.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// The client did not take a message within [`SEND_TIMEOUT`], or the connection is gone.
pub struct Closed;

/// Sends `message`, waiting at most [`SEND_TIMEOUT`] for the client to take it; `endpoint` names
/// the endpoint in the warning logged when it did not.
pub async fn send(socket: &mut WebSocket, message: Message, endpoint: &'static str) -> Result<(), Closed> {
    match tokio::time::timeout(SEND_TIMEOUT, socket.send(message)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(Closed),
        Err(_) => {
            tracing::warn!(endpoint, "a websocket client took no message for {} s; closing it", SEND_TIMEOUT.as_secs());
            Err(Closed)
        }
    }
}
