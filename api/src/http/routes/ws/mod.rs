//! `GET /v1/ws`: the WebSocket (protocol in docs/api.md). At most five connections per client IP
//! across replicas, counted in Redis before the upgrade (the sixth gets 429 and the envelope).
//! Each connection is one task: it reads the client's JSON messages, answers subscriptions with
//! a snapshot, forwards the updates the hub queues for it (dropping those its snapshot already
//! covers), pings every 20 s and closes a peer silent for 60 s or too slow to keep up: one whose
//! queue is full, or that has not taken a message within [`SEND_TIMEOUT`] (a client that stops
//! reading is closed rather than holding its task, its memory and its slot). The slot in Redis is
//! refreshed by a task of its own, however the connection's writes go, and released when the
//! connection ends.
//!
//! Failed API keys in `auth` messages are counted per client IP with the HTTP API's (one
//! `keyfail` bucket), and refused before their look-up once over it. An authenticated session's
//! credential is checked again every [`CREDENTIAL_RECHECK`] (an API key looked up, a token's
//! expiry read) and a token's expiry before each private update: a revoked key or an expired
//! token ends the session's private subscriptions with an `UNAUTHORIZED` error. Snapshots (a
//! subscription's first message, read from Postgres) are limited per connection to a burst of
//! [`SNAPSHOT_BURST`] and [`SNAPSHOTS_PER_SEC`] after it.

pub mod hub;
pub mod render;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

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
use crate::http::ratelimit::{self, ClientIp};
use crate::services::{ServiceError, api_keys, stream};
pub use client_limits::socket_send::SEND_TIMEOUT;
use client_limits::socket_send::{self, Closed};
use client_limits::{IpBucket, MessageRate};

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
/// How often an authenticated session's credential is checked again (an API key costs a
/// look-up; a token's expiry costs nothing and is also read before each private update).
pub const CREDENTIAL_RECHECK: Duration = Duration::from_secs(15);
/// Snapshots a connection may read at once: every channel it may hold, so a client subscribing
/// to all of them on connecting is never refused.
pub const SNAPSHOT_BURST: u32 = MAX_CHANNELS as u32;
/// Snapshots a connection may read per second once its burst is spent: each is a Postgres read.
pub const SNAPSHOTS_PER_SEC: u32 = 2;

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
    async fn take(state: &AppState, ip: IpBucket) -> Result<Option<Slot>, redis::RedisError> {
        let slot = Slot { key: state.services.redis.key("ws", ip), id: uuid::Uuid::new_v4().simple().to_string() };
        let mut redis = state.services.redis.connection().await?;
        let now = now_ms();
        let taken: i64 =
            TAKE_SLOT.key(&slot.key).arg(now).arg(now + SLOT_TTL_MS).arg(MAX_PER_IP).arg(&slot.id).arg(SLOT_TTL_MS).invoke_async(&mut redis).await?;
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

#[utoipa::path(
    get,
    path = "/v1/ws",
    tag = "stream",
    responses((status = 101, description = "Switching to the WebSocket protocol"))
)]
pub async fn upgrade(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let ws = ws.map_err(|e| ApiError::InvalidInput(format!("GET /v1/ws expects a WebSocket upgrade: {e}")))?;
    let slot = match Slot::take(&state, ip).await {
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
        let slot = slot.map(Arc::new);
        // Refreshed beside the connection, so a write that waits does not let the slot expire.
        let refreshing = slot.clone().map(|slot| {
            let state = state.clone();
            Refreshing(tokio::spawn(async move {
                let mut every = tokio::time::interval_at(Instant::now() + HEARTBEAT, HEARTBEAT);
                loop {
                    every.tick().await;
                    slot.refresh(&state).await;
                }
            }))
        });
        Connection::new(state.clone(), ip).run(socket).await;
        drop(refreshing);
        if let Some(slot) = slot {
            slot.release(&state).await;
        }
    }))
}

/// The task refreshing a connection's slot, stopped when the connection ends (however it ends:
/// a slot no longer refreshed expires after `SLOT_TTL_MS`).
struct Refreshing(tokio::task::JoinHandle<()>);

impl Drop for Refreshing {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Sends `message` within [`SEND_TIMEOUT`] (`socket_send::send`).
async fn send(socket: &mut WebSocket, message: Message) -> Result<(), Closed> {
    socket_send::send(socket, message, "/v1/ws").await
}

/// What an authenticated session is checked against again.
enum Credential {
    /// A sign-in token, valid until its expiry (Unix seconds).
    Token { expires_at: i64 },
    /// An API key, valid until it is revoked.
    ApiKey { key: String },
}

/// A connection's snapshot reads: a bucket of [`SNAPSHOT_BURST`], refilled at
/// [`SNAPSHOTS_PER_SEC`] (counted in thousandths of a snapshot).
struct SnapshotRate {
    available_milli: u64,
    at: Instant,
}

impl SnapshotRate {
    fn new() -> SnapshotRate {
        SnapshotRate { available_milli: u64::from(SNAPSHOT_BURST) * 1_000, at: Instant::now() }
    }

    /// Takes one snapshot's share; whether there was one.
    fn admit(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.at).as_millis() as u64 * u64::from(SNAPSHOTS_PER_SEC);
        self.available_milli = (self.available_milli + refill).min(u64::from(SNAPSHOT_BURST) * 1_000);
        self.at = now;
        if self.available_milli < 1_000 {
            return false;
        }
        self.available_milli -= 1_000;
        true
    }
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
    /// The client's address as the limits count it.
    ip: IpBucket,
    caller: Option<Caller>,
    /// What `caller` was established with, checked again while the session lasts.
    credential: Option<Credential>,
    snapshots: SnapshotRate,
    /// Subscribed channels (client name → stream name) and the seq their snapshot covers.
    channels: HashMap<String, (String, i64)>,
    queue: mpsc::Sender<Arc<Outgoing>>,
    inbox: mpsc::Receiver<Arc<Outgoing>>,
    overflow: CancellationToken,
}

impl Connection {
    fn new(state: AppState, ip: IpBucket) -> Connection {
        let (queue, inbox) = mpsc::channel(QUEUE);
        let id = state.ws.connection_id();
        Connection {
            state,
            id,
            ip,
            caller: None,
            credential: None,
            snapshots: SnapshotRate::new(),
            channels: HashMap::new(),
            queue,
            inbox,
            overflow: CancellationToken::new(),
        }
    }

    async fn run(mut self, mut socket: WebSocket) {
        let welcome = json!({"type": "welcome", "heartbeat_secs": HEARTBEAT.as_secs(), "max_channels": MAX_CHANNELS});
        if send(&mut socket, Message::Text(welcome.to_string().into())).await.is_ok() {
            self.serve(&mut socket).await;
        }
        for (stream_name, _) in self.channels.values() {
            self.state.ws.unsubscribe(stream_name, self.id);
        }
    }

    async fn serve(&mut self, socket: &mut WebSocket) {
        let mut heartbeat = tokio::time::interval_at(Instant::now() + HEARTBEAT, HEARTBEAT);
        let mut recheck = tokio::time::interval_at(Instant::now() + CREDENTIAL_RECHECK, CREDENTIAL_RECHECK);
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
                    if send(socket, Message::Text(answer.to_string().into())).await.is_err() {
                        break;
                    }
                }
                Some(update) = self.inbox.recv() => {
                    // Already in the snapshot the client got (or for a channel it left).
                    match self.channels.get(&update.channel) {
                        Some((_, covered)) if update.seq > *covered => {}
                        _ => continue,
                    }
                    // A private update goes only to a session whose token has not expired.
                    if update.channel == ClientChannel::Account.name() && matches!(self.credential, Some(Credential::Token { expires_at }) if chrono::Utc::now().timestamp() >= expires_at) {
                        let ended = self.end_session("the access token expired");
                        if send(socket, Message::Text(ended.to_string().into())).await.is_err() {
                            break;
                        }
                        continue;
                    }
                    if send(socket, Message::Text(update.text.clone())).await.is_err() {
                        break;
                    }
                }
                _ = heartbeat.tick() => {
                    if heard.elapsed() > SILENCE {
                        let _ = send(socket, Message::Close(Some(CloseFrame { code: 1001, reason: "no message or pong for 60 s".into() }))).await;
                        break;
                    }
                    if send(socket, Message::Ping(Vec::new().into())).await.is_err() {
                        break;
                    }
                }
                _ = recheck.tick() => {
                    let Some(why) = self.credential_lapsed().await else { continue };
                    let ended = self.end_session(why);
                    if send(socket, Message::Text(ended.to_string().into())).await.is_err() {
                        break;
                    }
                }
                _ = self.overflow.cancelled() => {
                    tracing::warn!(connection = self.id, "websocket consumer too slow; closed");
                    let reason = format!("too slow: more than {QUEUE} messages waiting");
                    let _ = send(socket, Message::Close(Some(CloseFrame { code: 1008, reason: reason.into() }))).await;
                    break;
                }
            }
        }
    }

    /// Why the session's credential no longer holds (`None`: it holds, or there is none). A
    /// look-up that fails (the database unavailable) keeps the session until the next check.
    async fn credential_lapsed(&self) -> Option<&'static str> {
        match self.credential.as_ref()? {
            Credential::Token { expires_at } => (chrono::Utc::now().timestamp() >= *expires_at).then_some("the access token expired"),
            Credential::ApiKey { key } => match api_keys::caller_for_key(&self.state.services, key).await {
                Ok(None) => Some("the API key was revoked"),
                Ok(Some(_)) | Err(_) => None,
            },
        }
    }

    /// Ends the authenticated session: its private subscriptions end, and the error says why.
    fn end_session(&mut self, why: &str) -> Value {
        self.caller = None;
        self.credential = None;
        if let Some((stream_name, _)) = self.channels.remove(&ClientChannel::Account.name()) {
            self.state.ws.unsubscribe(&stream_name, self.id);
        }
        error("UNAUTHORIZED", &format!("{why}: signed out, and unsubscribed from account; send auth again"))
    }

    /// Answers one client message; a bad one gets an error and the connection stays.
    async fn handle(&mut self, text: &str) -> Value {
        let request: Request = match serde_json::from_str(text) {
            Ok(request) => request,
            Err(e) => {
                return error("INVALID_INPUT", &format!("not a message: {e}; expected {{\"type\": \"subscribe\"|\"unsubscribe\"|\"auth\"|\"ping\", ...}}"));
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
        let (caller, credential) = match (token, key) {
            (Some(token), None) => match self.state.services.tokens.verify(&token) {
                Ok(claims) => {
                    (Some(Caller { user_id: claims.sub, wallet: claims.wallet, method: AuthMethod::Token }), Credential::Token { expires_at: claims.exp })
                }
                Err(e) => return error("UNAUTHORIZED", &format!("invalid access token: {e}")),
            },
            (None, Some(key)) => {
                // Failed look-ups are counted per client IP with the HTTP API's, and refused
                // before the look-up once over the limit.
                if ratelimit::key_lookups_refused(&self.state, self.ip).await {
                    return error("RATE_LIMITED", "too many failed API keys from this address; try again within a minute");
                }
                let found = match api_key::is_well_formed(&key) {
                    true => match api_keys::caller_for_key(&self.state.services, &key).await {
                        Ok(caller) => caller,
                        Err(e) => return service_error(e),
                    },
                    false => None,
                };
                if found.is_none() {
                    ratelimit::count_key_failure(&self.state, self.ip).await;
                }
                (found, Credential::ApiKey { key })
            }
            _ => return error("INVALID_INPUT", "auth takes either token (a sign-in JWT) or api_key"),
        };
        let Some(caller) = caller else { return error("UNAUTHORIZED", "unknown or revoked API key") };
        if self.caller.as_ref().is_some_and(|c| c.wallet != caller.wallet) && self.channels.contains_key("account") {
            return error("INVALID_INPUT", "unsubscribe from account before signing in as another wallet");
        }
        let wallet = caller.wallet.clone();
        self.caller = Some(caller);
        self.credential = Some(credential);
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
        if !self.snapshots.admit() {
            return error(
                "RATE_LIMITED",
                &format!("at most {SNAPSHOTS_PER_SEC} snapshots a second after the first {SNAPSHOT_BURST}; not subscribed to {name:?}"),
            );
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
