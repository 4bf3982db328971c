//! `GET /v1/ws`: the WebSocket (protocol in the README). At most five connections per client IP
//! across replicas, counted in Redis before the upgrade (the sixth gets 429 and the envelope).
//! Each connection is one task: it reads the client's JSON messages, answers subscriptions with
//! a snapshot, forwards the updates the hub queues for it (dropping those its snapshot already
//! covers), pings every 20 s and closes a peer silent for 60 s or too slow to keep up.

pub mod hub;
pub mod render;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use self::hub::{Outgoing, Subscriber};
use self::render::ClientChannel;
use crate::domain::api_key;
use crate::domain::caller::{AuthMethod, Caller};
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::http::message_rate::MessageRate;
use crate::http::ratelimit::ClientIp;
use crate::services::{ServiceError, api_keys, stream};

/// Connections per client IP (the contract's limit), across replicas.
pub const MAX_PER_IP: u32 = 5;
/// Messages waiting for one connection; a connection this far behind is closed.
const QUEUE: usize = 256;
/// Channels one connection may hold.
const MAX_CHANNELS: usize = 50;
/// Client messages a connection may send per second: each may cost a database read (a snapshot,
/// an API-key look-up), and the HTTP rate limits do not see them.
const MESSAGES_PER_SEC: u32 = 20;
const HEARTBEAT: Duration = Duration::from_secs(20);
/// A peer that sends nothing (not even a pong) this long is gone.
const SILENCE: Duration = Duration::from_secs(60);
/// A connection's slot in Redis outlives its last refresh this long: a replica that dies frees
/// its slots within a minute.
const SLOT_TTL_MS: u64 = 60_000;
const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// Takes a slot of `KEYS[1]` (a sorted set of connection ids scored by expiry) if fewer than
/// `ARGV[3]` are live: 1 if taken, 0 if full.
static TAKE_SLOT: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1]) \
         if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end \
         redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4]) \
         redis.call('PEXPIRE', KEYS[1], ARGV[5]) \
         return 1",
    )
});

fn now_ms() -> u64 {
    chrono::Utc::now().timestamp_millis() as u64
}

/// A connection's place in its IP's count.
struct Slot {
    key: String,
    id: String,
}

impl Slot {
    async fn take(state: &AppState, ip: &str) -> Result<Option<Slot>, redis::RedisError> {
        let slot = Slot { key: state.services.redis.key("ws", ip), id: uuid::Uuid::new_v4().simple().to_string() };
        let mut redis = state.services.redis.connection().await?;
        let now = now_ms();
        let taken: i64 = TAKE_SLOT
            .key(&slot.key)
            .arg(now)
            .arg(now + SLOT_TTL_MS)
            .arg(MAX_PER_IP)
            .arg(&slot.id)
            .arg(SLOT_TTL_MS)
            .invoke_async(&mut redis)
            .await?;
        Ok((taken == 1).then_some(slot))
    }

    async fn refresh(&self, state: &AppState) {
        if let Ok(mut redis) = state.services.redis.connection().await {
            let _: Result<(), _> = redis::cmd("ZADD").arg(&self.key).arg("XX").arg(now_ms() + SLOT_TTL_MS).arg(&self.id).query_async(&mut redis).await;
            let _: Result<(), _> = redis::cmd("PEXPIRE").arg(&self.key).arg(SLOT_TTL_MS).query_async(&mut redis).await;
        }
    }

    async fn release(&self, state: &AppState) {
        if let Ok(mut redis) = state.services.redis.connection().await {
            let _: Result<(), _> = redis::cmd("ZREM").arg(&self.key).arg(&self.id).query_async(&mut redis).await;
        }
    }
}

#[utoipa::path(get, path = "/ws", tag = "stream",
    responses((status = 101, description = "Switching to the WebSocket protocol")))]
pub async fn upgrade(State(state): State<AppState>, ip: Option<Extension<ClientIp>>, ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>) -> Result<Response, ApiError> {
    let ws = ws.map_err(|e| ApiError::InvalidInput(format!("GET /v1/ws expects a WebSocket upgrade: {e}")))?;
    let ip = ip.map_or_else(|| "unknown".to_owned(), |Extension(ClientIp(ip))| ip);
    let slot = match Slot::take(&state, &ip).await {
        Ok(Some(slot)) => Some(slot),
        Ok(None) => {
            return Err(ApiError::BudgetSpent {
                retry_after_secs: 10,
                message: format!("at most {MAX_PER_IP} WebSocket connections per IP address; close one before opening another"),
            });
        }
        Err(e) => {
            // As the rate limiter: Redis down does not take the service down with it.
            tracing::warn!(error = %e, "websocket connection count unavailable; connection allowed");
            None
        }
    };
    state.ws.listen(&state.services).await;
    Ok(ws.max_message_size(MAX_MESSAGE_BYTES).on_upgrade(move |socket| async move {
        Connection::new(state.clone()).run(socket, slot.as_ref()).await;
        if let Some(slot) = slot {
            slot.release(&state).await;
        }
    }))
}

/// A client's message.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Request {
    Subscribe { channel: String },
    Unsubscribe { channel: String },
    Auth { token: Option<String>, api_key: Option<String> },
    Ping,
}

struct Connection {
    state: AppState,
    id: u64,
    caller: Option<Caller>,
    /// Subscribed channels (client name → stream name) and the seq their snapshot covers.
    channels: HashMap<String, (String, i64)>,
    queue: mpsc::Sender<Arc<Outgoing>>,
    inbox: mpsc::Receiver<Arc<Outgoing>>,
    overflow: CancellationToken,
}

impl Connection {
    fn new(state: AppState) -> Connection {
        let (queue, inbox) = mpsc::channel(QUEUE);
        let id = state.ws.connection_id();
        Connection { state, id, caller: None, channels: HashMap::new(), queue, inbox, overflow: CancellationToken::new() }
    }

    async fn run(mut self, mut socket: WebSocket, slot: Option<&Slot>) {
        let welcome = json!({"type": "welcome", "heartbeat_secs": HEARTBEAT.as_secs(), "max_channels": MAX_CHANNELS});
        let _ = socket.send(Message::Text(welcome.to_string().into())).await;
        let mut heartbeat = tokio::time::interval_at(Instant::now() + HEARTBEAT, HEARTBEAT);
        let mut heard = Instant::now();
        let mut rate = MessageRate::per_second(MESSAGES_PER_SEC);
        loop {
            tokio::select! {
                inbound = socket.recv() => {
                    let Some(Ok(message)) = inbound else { break };
                    heard = Instant::now();
                    match message {
                        Message::Ping(_) | Message::Pong(_) => continue,
                        Message::Close(_) => break,
                        _ => {}
                    }
                    let answer = match message {
                        _ if !rate.admit() => {
                            error("RATE_LIMITED", &format!("at most {MESSAGES_PER_SEC} messages a second; this one was not processed"))
                        }
                        Message::Text(text) => self.handle(text.as_str()).await,
                        _ => error("INVALID_INPUT", "messages are JSON text frames"),
                    };
                    if socket.send(Message::Text(answer.to_string().into())).await.is_err() {
                        break;
                    }
                }
                Some(update) = self.inbox.recv() => {
                    // Already in the snapshot the client got (or for a channel it left).
                    match self.channels.get(&update.channel) {
                        Some((_, covered)) if update.seq > *covered => {}
                        _ => continue,
                    }
                    if socket.send(Message::Text(update.text.clone())).await.is_err() {
                        break;
                    }
                }
                _ = heartbeat.tick() => {
                    if heard.elapsed() > SILENCE {
                        let _ = socket.send(Message::Close(Some(CloseFrame { code: 1001, reason: "no message or pong for 60 s".into() }))).await;
                        break;
                    }
                    if socket.send(Message::Ping(Vec::new().into())).await.is_err() {
                        break;
                    }
                    if let Some(slot) = slot {
                        slot.refresh(&self.state).await;
                    }
                }
                _ = self.overflow.cancelled() => {
                    tracing::warn!(connection = self.id, "websocket consumer too slow; closed");
                    let reason = format!("too slow: more than {QUEUE} messages waiting");
                    let _ = socket.send(Message::Close(Some(CloseFrame { code: 1008, reason: reason.into() }))).await;
                    break;
                }
            }
        }
        for (stream_name, _) in self.channels.values() {
            self.state.ws.unsubscribe(stream_name, self.id);
        }
    }

    /// Answers one client message; a bad one gets an error and the connection stays.
    async fn handle(&mut self, text: &str) -> Value {
        let request: Request = match serde_json::from_str(text) {
            Ok(request) => request,
            Err(e) => {
                return error(
                    "INVALID_INPUT",
                    &format!("not a message: {e}; expected {{\"type\": \"subscribe\"|\"unsubscribe\"|\"auth\"|\"ping\", ...}}"),
                );
            }
        };
        match request {
            Request::Ping => json!({"type": "pong"}),
            Request::Auth { token, api_key } => self.authenticate(token, api_key).await,
            Request::Unsubscribe { channel } => match self.channels.remove(&channel) {
                Some((stream_name, _)) => {
                    self.state.ws.unsubscribe(&stream_name, self.id);
                    json!({"type": "unsubscribed", "channel": channel})
                }
                None => error("NOT_FOUND", &format!("not subscribed to {channel:?}")),
            },
            Request::Subscribe { channel } => self.subscribe(&channel).await,
        }
    }

    async fn authenticate(&mut self, token: Option<String>, key: Option<String>) -> Value {
        let caller = match (token, key) {
            (Some(token), None) => match self.state.services.tokens.verify(&token) {
                Ok(claims) => Some(Caller { user_id: claims.sub, wallet: claims.wallet, method: AuthMethod::Token }),
                Err(e) => return error("UNAUTHORIZED", &format!("invalid access token: {e}")),
            },
            (None, Some(key)) if api_key::is_well_formed(&key) => match api_keys::caller_for_key(&self.state.services, &key).await {
                Ok(caller) => caller,
                Err(e) => return service_error(e),
            },
            (None, Some(_)) => None,
            _ => return error("INVALID_INPUT", "auth takes either token (a sign-in JWT) or api_key"),
        };
        let Some(caller) = caller else { return error("UNAUTHORIZED", "unknown or revoked API key") };
        if self.caller.as_ref().is_some_and(|c| c.wallet != caller.wallet) && self.channels.contains_key("account") {
            return error("INVALID_INPUT", "unsubscribe from account before signing in as another wallet");
        }
        let wallet = caller.wallet.clone();
        self.caller = Some(caller);
        json!({"type": "authenticated", "wallet": wallet})
    }

    async fn subscribe(&mut self, name: &str) -> Value {
        let channel = match ClientChannel::parse(name) {
            Ok(channel) => channel,
            Err(why) => return error("INVALID_INPUT", &why),
        };
        let name = channel.name();
        if self.channels.contains_key(&name) {
            return error("INVALID_INPUT", &format!("already subscribed to {name:?}"));
        }
        if self.channels.len() >= MAX_CHANNELS {
            return error("INVALID_INPUT", &format!("at most {MAX_CHANNELS} channels per connection"));
        }
        if channel == ClientChannel::Account && self.caller.is_none() {
            return error("UNAUTHORIZED", "send {\"type\": \"auth\", \"token\": ...} (or api_key) before subscribing to account");
        }
        let services = &self.state.services;
        // Registered first, so no update after the snapshot's point is missed; the ones the
        // snapshot covers are dropped by their seq.
        let stream_name = channel.stream_name(self.caller.as_ref());
        let subscriber = Subscriber { queue: self.queue.clone(), overflow: self.overflow.clone() };
        let account_caller = (channel == ClientChannel::Account).then(|| self.caller.clone()).flatten();
        self.state.ws.subscribe(&stream_name, self.id, subscriber, account_caller);
        let seq = match stream::last_seq(services).await {
            Ok(seq) => seq,
            Err(e) => {
                self.state.ws.unsubscribe(&stream_name, self.id);
                return service_error(e);
            }
        };
        match render::snapshot(services, &channel, self.caller.as_ref()).await {
            Ok(data) => {
                self.channels.insert(name.clone(), (stream_name, seq));
                json!({"type": "snapshot", "channel": name, "seq": seq, "data": data})
            }
            Err(e) => {
                self.state.ws.unsubscribe(&stream_name, self.id);
                service_error(e)
            }
        }
    }
}

fn error(code: &str, message: &str) -> Value {
    json!({"type": "error", "code": code, "message": message})
}

/// A use case's refusal as a WebSocket error, with the contract's code.
fn service_error(e: ServiceError) -> Value {
    let api = ApiError::from(e);
    error(api.code(), &api.public_message())
}
