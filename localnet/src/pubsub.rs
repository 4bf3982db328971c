//! The embedded chain's PubSub WebSocket, where web3.js, `@solana/kit` and the Anchor client look
//! for it (the RPC port + 1 unless told otherwise; `FM_PUBSUB_ADDR`): `signatureSubscribe`,
//! `accountSubscribe`, `programSubscribe`, `logsSubscribe`, `slotSubscribe`, `rootSubscribe`
//! and their unsubscribes, answered and notified in Solana's formats
//! (`{"jsonrpc":"2.0","method":"<kind>Notification","params":{"result":…,"subscription":<id>}}`).
//!
//! One follower per process reads each transaction the chain confirms from its ledger and
//! broadcasts it; every connection matches it against its own subscriptions. A signature
//! subscription for a transaction that already landed is notified at once (a client subscribes
//! after sending, and here sending returns once the transaction is confirmed), as a node
//! notifies it on its next update: Agave checks each signature subscription with
//! `Bank::get_signature_status_processed_since_parent`, which answers for any slot up to the
//! bank's, not only the newest. The embedded
//! chain has no forks: what lands is final, so every commitment level is notified alike, and a
//! root is the slot itself. Account and program notifications carry the account as the bank
//! holds it after the transaction, and only when it changed.
//!
//! Limits, so no client can hold more than its share of the process: [`MAX_CONNECTIONS_PER_IP`]
//! connections per client address and [`MAX_CONNECTIONS`] in all (a connection over either is
//! answered with a JSON-RPC error and closed), [`MAX_SUBSCRIPTIONS`] per connection (refused as
//! Agave refuses a subscription over its limit), [`MESSAGES_PER_SEC`] requests a second; a client
//! silent (not even answering the server's pings) for [`IDLE_TIMEOUT`] is closed, and so is one
//! that does not take a message within [`SEND_TIMEOUT`] (a client that stops reading cannot hold
//! the messages meant for it). An account subscription keeps a SHA-256 of the account's data, not
//! a copy, to tell whether it changed; notifications are built and sent one at a time, and an
//! account is encoded once per transaction however many subscriptions notify it.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::json_rpc::verify_filters;
use crate::{EmbeddedChain, LedgerEntry, encoded_account, filter_passes};
use anchor_lang::prelude::Pubkey;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use solana_account::{AccountSharedData, ReadableAccount};
use solana_rpc_client_api::config::{RpcAccountInfoConfig, RpcProgramAccountsConfig, RpcSignatureSubscribeConfig, RpcTransactionLogsFilter};
use solana_rpc_client_api::filter::RpcFilterType;
use solana_rpc_client_api::response::{ProcessedSignatureResult, RpcLogsResponse, RpcSignatureResult, SlotInfo};
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use client_limits::IpBucket;
use client_limits::MessageRate;
pub use client_limits::socket_send::SEND_TIMEOUT;
use client_limits::socket_send::{self, Closed};

/// Subscriptions one connection may hold.
pub const MAX_SUBSCRIPTIONS: usize = 1_000;
/// Connections one client address (an IPv4 address, an IPv6 /64) may hold: a page, a wallet and
/// a test run's clients each open one or a few.
pub const MAX_CONNECTIONS_PER_IP: usize = 10;
/// Connections the listener holds in all: with [`MAX_SUBSCRIPTIONS`] each, what one process
/// tracks stays bounded.
pub const MAX_CONNECTIONS: usize = 1_000;
/// A client that sends nothing, not even a pong to the server's pings, this long is gone.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How often the server pings a connection, so a client that only listens still answers.
const PING_EVERY: Duration = Duration::from_secs(30);
/// The code of a refusal over a limit: Agave's, for a subscription over its node's limit
/// (`Internal Error: Subscription refused. Node subscription limit reached`).
pub const LIMIT_REACHED: i64 = -32603;
/// Requests a connection may send per second: a signature subscription reads the ledger, and
/// the HTTP limits never see these.
pub const MESSAGES_PER_SEC: u32 = 100;
/// The largest client message (a subscribe is under 1 KB).
const MAX_MESSAGE_BYTES: usize = 16 * 1024;
/// Landed transactions the follower holds for slow connections; one further behind is closed.
const BACKLOG: usize = 4_096;
/// Ledger rows read per pass of the follower.
const PAGE: i64 = 500;

/// Subscription ids, unique in the process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The follower's broadcast, shared by every connection.
#[derive(Clone)]
pub struct PubSub {
    chain: EmbeddedChain,
    landed: broadcast::Sender<Arc<LedgerEntry>>,
    connections: Arc<Mutex<Connections>>,
}

/// The open connections, per client address and in all.
#[derive(Default)]
struct Connections {
    by_ip: HashMap<String, usize>,
    total: usize,
}

/// A connection's place in [`Connections`], given back when it is dropped.
struct ConnectionSlot {
    connections: Arc<Mutex<Connections>>,
    ip: String,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut connections = self.connections.lock().expect("connections lock");
        connections.total -= 1;
        if let Entry::Occupied(mut held) = connections.by_ip.entry(std::mem::take(&mut self.ip)) {
            *held.get_mut() -= 1;
            if *held.get() == 0 {
                held.remove();
            }
        }
    }
}

impl PubSub {
    /// Starts following `chain`'s confirmations (from the ledger's current end).
    pub async fn start(chain: EmbeddedChain) -> PubSub {
        let (landed, _) = broadcast::channel(BACKLOG);
        let follower = PubSub { chain: chain.clone(), landed: landed.clone(), connections: Arc::default() };
        let mut confirmed = chain.subscribe();
        let mut last = *confirmed.borrow_and_update();
        let publisher = follower.clone();
        tokio::spawn(async move {
            loop {
                // Nobody connected: nothing to read the ledger for; carry on from its end.
                if publisher.landed.receiver_count() == 0 {
                    last = *confirmed.borrow_and_update();
                    if confirmed.changed().await.is_err() {
                        break;
                    }
                    continue;
                }
                match publisher.chain.ledger_after(last, PAGE).await {
                    Ok(entries) if !entries.is_empty() => {
                        for entry in entries {
                            last = entry.seq;
                            // No receivers is fine: nobody is subscribed.
                            let _ = publisher.landed.send(Arc::new(entry));
                        }
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "pubsub: reading the ledger failed; retrying");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                }
                if confirmed.changed().await.is_err() {
                    break;
                }
            }
        });
        follower
    }

    /// The WebSocket endpoint, at any path: a node serves `/`, and web3.js keeps the RPC URL's
    /// path when it derives the WebSocket's (`http://host:8080/rpc` → `ws://host:8081/rpc`).
    /// The client's address is the peer's: serve the router with
    /// `into_make_service_with_connect_info::<SocketAddr>()` (without it every client counts as
    /// one).
    pub fn router(self) -> Router {
        Router::new().route("/", get(upgrade)).fallback(upgrade).with_state(self)
    }

    /// The connections open now.
    pub fn open_connections(&self) -> usize {
        self.connections.lock().expect("connections lock").total
    }

    /// A place for a connection from `ip`, or why there is none.
    fn admit(&self, ip: String) -> Result<ConnectionSlot, String> {
        let mut connections = self.connections.lock().expect("connections lock");
        if connections.total >= MAX_CONNECTIONS {
            return Err(format!("Internal Error: Connection refused. at most {MAX_CONNECTIONS} connections"));
        }
        let held = connections.by_ip.entry(ip.clone()).or_default();
        if *held >= MAX_CONNECTIONS_PER_IP {
            return Err(format!("Internal Error: Connection refused. at most {MAX_CONNECTIONS_PER_IP} connections per IP address"));
        }
        *held += 1;
        connections.total += 1;
        Ok(ConnectionSlot { connections: self.connections.clone(), ip })
    }
}

async fn upgrade(State(pubsub): State<PubSub>, peer: Option<Extension<ConnectInfo<SocketAddr>>>, ws: WebSocketUpgrade) -> Response {
    let ip = peer.map_or_else(|| "unknown".to_owned(), |Extension(ConnectInfo(addr))| IpBucket::of(addr.ip()).to_string());
    let ws = ws.max_message_size(MAX_MESSAGE_BYTES);
    match pubsub.admit(ip) {
        Ok(slot) => ws.on_upgrade(move |socket| async move {
            Connection::new(pubsub).run(socket).await;
            drop(slot);
        }),
        // Answered in the protocol the client speaks, then closed.
        Err(refusal) => ws.on_upgrade(move |mut socket| async move {
            let answer = failure(&Value::Null, LIMIT_REACHED, refusal);
            let _ = send(&mut socket, Message::Text(answer.to_string().into())).await;
            let close = CloseFrame { code: 1013, reason: "connection limit reached".into() };
            let _ = send(&mut socket, Message::Close(Some(close))).await;
        }),
    }
}

/// Sends `message` within [`SEND_TIMEOUT`] (`socket_send::send`).
async fn send(socket: &mut WebSocket, message: Message) -> Result<(), Closed> {
    socket_send::send(socket, message, "pubsub").await
}

/// What an account subscription remembers of the account it last saw: enough to tell whether it
/// changed, with a digest of the data instead of the data (up to 10 MiB per subscription).
#[derive(Clone, PartialEq, Eq)]
struct AccountFingerprint {
    lamports: u64,
    owner: Pubkey,
    executable: bool,
    data_sha256: [u8; 32],
}

impl AccountFingerprint {
    fn of(account: &AccountSharedData) -> AccountFingerprint {
        AccountFingerprint {
            lamports: account.lamports(),
            owner: *account.owner(),
            executable: account.executable(),
            data_sha256: Sha256::digest(account.data()).into(),
        }
    }
}

/// What a subscription is for.
enum Subscription {
    Signature { signature: String },
    Account { address: Pubkey, config: RpcAccountInfoConfig, last: Option<AccountFingerprint> },
    Program { program: Pubkey, filters: Vec<RpcFilterType>, config: RpcAccountInfoConfig },
    Logs { mentions: Option<Pubkey> },
    Slot,
    Root,
}

impl Subscription {
    fn kind(&self) -> &'static str {
        match self {
            Subscription::Signature { .. } => "signature",
            Subscription::Account { .. } => "account",
            Subscription::Program { .. } => "program",
            Subscription::Logs { .. } => "logs",
            Subscription::Slot => "slot",
            Subscription::Root => "root",
        }
    }
}

struct Connection {
    pubsub: PubSub,
    subscriptions: HashMap<u64, Subscription>,
    /// The chain's confirmed ledger position, which keys `fingerprinted`.
    confirmed: watch::Receiver<i64>,
    /// The account last fingerprinted for a new subscription, with the ledger position it was
    /// read at: many subscriptions of one account at once digest it once.
    fingerprinted: Option<(Pubkey, i64, Option<AccountFingerprint>)>,
}

/// A JSON-RPC error answer.
fn failure(id: &Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "error": {"code": code, "message": message.into()}, "id": id})
}

fn param<T: DeserializeOwned>(params: &Value, i: usize) -> Result<T, String> {
    serde_json::from_value(params.get(i).cloned().unwrap_or(Value::Null)).map_err(|e| format!("Invalid params: parameter {i}: {e}"))
}

fn notification(kind: &str, subscription: u64, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": format!("{kind}Notification"), "params": {"result": result, "subscription": subscription}})
}

fn with_context(slot: u64, value: impl serde::Serialize) -> Value {
    json!({"context": {"slot": slot}, "value": value})
}

impl Connection {
    fn new(pubsub: PubSub) -> Connection {
        let confirmed = pubsub.chain.subscribe();
        Connection { pubsub, subscriptions: HashMap::new(), confirmed, fingerprinted: None }
    }

    async fn run(mut self, mut socket: WebSocket) {
        let mut landed = self.pubsub.landed.subscribe();
        let mut slots = self.pubsub.chain.subscribe_slots();
        slots.borrow_and_update();
        let mut rate = MessageRate::per_second(MESSAGES_PER_SEC);
        let mut ping = tokio::time::interval_at(Instant::now() + PING_EVERY, PING_EVERY);
        let mut heard = Instant::now();
        loop {
            let outgoing = tokio::select! {
                message = socket.recv() => {
                    heard = Instant::now();
                    match message {
                        Some(Ok(Message::Text(_) | Message::Binary(_))) if !rate.admit() => {
                            vec![failure(&Value::Null, -32005, format!("at most {MESSAGES_PER_SEC} requests a second; this one was not processed"))]
                        }
                        Some(Ok(Message::Text(text))) => self.handle(text.as_str()).await,
                        Some(Ok(Message::Binary(bytes))) => match std::str::from_utf8(&bytes) {
                            Ok(text) => self.handle(text).await,
                            Err(_) => vec![failure(&Value::Null, -32700, "Parse error")],
                        },
                        Some(Ok(_)) => continue,
                        Some(Err(_)) | None => return,
                    }
                }
                entry = landed.recv() => match entry {
                    Ok(entry) => match self.notify(&mut socket, &entry).await {
                        Ok(()) => continue,
                        Err(Closed) => return,
                    },
                    // Too far behind to notify truthfully: close, as a node drops a slow client.
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "pubsub: a connection fell behind; closing it");
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                changed = slots.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let slot = *slots.borrow_and_update();
                    match self.notify_slot(&mut socket, slot).await {
                        Ok(()) => continue,
                        Err(Closed) => return,
                    }
                }
                _ = ping.tick() => {
                    if heard.elapsed() >= IDLE_TIMEOUT {
                        let reason = format!("no message or pong for {} s", IDLE_TIMEOUT.as_secs());
                        let _ = send(&mut socket, Message::Close(Some(CloseFrame { code: 1001, reason: reason.into() }))).await;
                        return;
                    }
                    match send(&mut socket, Message::Ping(Vec::new().into())).await {
                        Ok(()) => continue,
                        Err(Closed) => return,
                    }
                }
            };
            for message in outgoing {
                if send(&mut socket, Message::Text(message.to_string().into())).await.is_err() {
                    return;
                }
            }
        }
    }

    /// Answers one request: the answer, and any notification due at once.
    async fn handle(&mut self, text: &str) -> Vec<Value> {
        let Ok(request) = serde_json::from_str::<Value>(text) else { return vec![failure(&Value::Null, -32700, "Parse error")] };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request["method"].as_str().unwrap_or("");
        let params = request.get("params").cloned().unwrap_or(json!([]));
        if let Some(kind) = method.strip_suffix("Unsubscribe") {
            let subscription: u64 = match param(&params, 0) {
                Ok(s) => s,
                Err(e) => return vec![failure(&id, -32602, e)],
            };
            return match self.subscriptions.get(&subscription) {
                Some(s) if s.kind() == kind => {
                    self.subscriptions.remove(&subscription);
                    vec![json!({"jsonrpc": "2.0", "result": true, "id": id})]
                }
                _ => vec![failure(&id, -32602, "Invalid subscription id.")],
            };
        }
        if self.subscriptions.len() >= MAX_SUBSCRIPTIONS {
            return vec![failure(
                &id,
                LIMIT_REACHED,
                format!("Internal Error: Subscription refused. at most {MAX_SUBSCRIPTIONS} subscriptions per connection"),
            )];
        }
        let subscription = match self.parse(method, &params) {
            Ok(s) => s,
            Err((code, message)) => return vec![failure(&id, code, message)],
        };
        let number = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let mut out = vec![json!({"jsonrpc": "2.0", "result": number, "id": id})];
        // Already landed: notified now, and the subscription ends, as it would on landing.
        if let Subscription::Signature { signature } = &subscription {
            match self.pubsub.chain.status(signature).await {
                Ok(Some((slot, err))) => {
                    out.push(notification(
                        "signature",
                        number,
                        with_context(slot, RpcSignatureResult::ProcessedSignature(ProcessedSignatureResult { err: err.map(Into::into) })),
                    ));
                    return out;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "pubsub: a signature's status could not be read"),
            }
        }
        self.subscriptions.insert(number, subscription);
        out
    }

    fn parse(&mut self, method: &str, params: &Value) -> Result<Subscription, (i64, String)> {
        let invalid = |m: String| (-32602, m);
        let address = |s: String| s.parse::<Pubkey>().map_err(|_| invalid("Invalid params: not a base58 address".into()));
        Ok(match method {
            "signatureSubscribe" => {
                let signature: String = param(params, 0).map_err(invalid)?;
                let _: Option<RpcSignatureSubscribeConfig> = param(params, 1).map_err(invalid)?;
                if bs58::decode(&signature).into_vec().map_or(true, |b| b.len() != 64) {
                    return Err(invalid("Invalid params: not a base58 signature".into()));
                }
                Subscription::Signature { signature }
            }
            "accountSubscribe" => {
                let address = address(param(params, 0).map_err(invalid)?)?;
                let config: Option<RpcAccountInfoConfig> = param(params, 1).map_err(invalid)?;
                let config = config.unwrap_or_default();
                let last = self.fingerprint_now(&address);
                Subscription::Account { address, config, last }
            }
            "programSubscribe" => {
                let program = address(param(params, 0).map_err(invalid)?)?;
                let config: Option<RpcProgramAccountsConfig> = param(params, 1).map_err(invalid)?;
                let config = config.unwrap_or_default();
                let filters = config.filters.unwrap_or_default();
                verify_filters(&filters)?;
                Subscription::Program { program, filters, config: config.account_config }
            }
            "logsSubscribe" => {
                let filter: RpcTransactionLogsFilter = param(params, 0).map_err(invalid)?;
                let mentions = match filter {
                    RpcTransactionLogsFilter::All | RpcTransactionLogsFilter::AllWithVotes => None,
                    RpcTransactionLogsFilter::Mentions(keys) if keys.len() == 1 => Some(address(keys[0].clone())?),
                    RpcTransactionLogsFilter::Mentions(_) => return Err(invalid("Invalid Request: Only 1 address supported".into())),
                };
                Subscription::Logs { mentions }
            }
            "slotSubscribe" => Subscription::Slot,
            "rootSubscribe" => Subscription::Root,
            other => return Err((-32601, format!("Method not found: {other}"))),
        })
    }

    /// `address`'s fingerprint as the bank holds it now (`None`: no such account), digested once
    /// for as many subscriptions as are taken of it before the ledger moves on.
    fn fingerprint_now(&mut self, address: &Pubkey) -> Option<AccountFingerprint> {
        let position = *self.confirmed.borrow_and_update();
        match &self.fingerprinted {
            Some((held, at, fingerprint)) if held == address && *at == position => fingerprint.clone(),
            _ => {
                let fingerprint = self.pubsub.chain.bank_account(address).as_ref().map(AccountFingerprint::of);
                self.fingerprinted = Some((*address, position, fingerprint.clone()));
                fingerprint
            }
        }
    }

    /// Tells the slot and root subscriptions that `slot` is the chain's newest. No forks here:
    /// a slot is rooted as soon as it ends.
    async fn notify_slot(&mut self, socket: &mut WebSocket, slot: u64) -> Result<(), Closed> {
        for (&number, subscription) in &self.subscriptions {
            match subscription {
                Subscription::Slot => {
                    let info = SlotInfo { slot, parent: slot.saturating_sub(1), root: slot };
                    send(socket, text(notification("slot", number, serde_json::to_value(info).unwrap_or(Value::Null)))).await?;
                }
                Subscription::Root => send(socket, text(notification("root", number, json!(slot)))).await?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Sends what `entry` means for this connection's subscriptions, one notification at a time.
    /// An account is read, digested and encoded once for all the subscriptions it concerns.
    async fn notify(&mut self, socket: &mut WebSocket, entry: &LedgerEntry) -> Result<(), Closed> {
        let chain = &self.pubsub.chain;
        let mut accounts: HashMap<Pubkey, Option<(AccountSharedData, AccountFingerprint)>> = HashMap::new();
        let mut encoded: HashMap<(Pubkey, String), Arc<str>> = HashMap::new();
        let mut read = |address: &Pubkey| -> Option<(AccountSharedData, AccountFingerprint)> {
            accounts
                .entry(*address)
                .or_insert_with(|| {
                    chain.bank_account(address).map(|a| {
                        let f = AccountFingerprint::of(&a);
                        (a, f)
                    })
                })
                .clone()
        };
        // The account's JSON under `config`, encoded once per transaction.
        let mut encode = |address: &Pubkey, account: &AccountSharedData, config: &RpcAccountInfoConfig| -> Arc<str> {
            let key = (*address, serde_json::to_string(config).unwrap_or_default());
            encoded.entry(key).or_insert_with(|| serde_json::to_string(&encoded_account(chain, address, account, config)).unwrap_or_default().into()).clone()
        };
        let slot = entry.slot;
        let mut finished = Vec::new();
        for (&number, subscription) in self.subscriptions.iter_mut() {
            match subscription {
                Subscription::Signature { signature } if *signature == entry.signature => {
                    let result = RpcSignatureResult::ProcessedSignature(ProcessedSignatureResult { err: entry.err.clone().map(Into::into) });
                    send(socket, text(notification("signature", number, with_context(slot, result)))).await?;
                    finished.push(number);
                }
                Subscription::Signature { .. } => {}
                Subscription::Account { address, config, last } => {
                    if !entry.account_keys.contains(address) {
                        continue;
                    }
                    // A closed account is notified as an empty system account, as a node does.
                    let (account, now) = read(address).unwrap_or_else(|| {
                        let closed = AccountSharedData::new(0, 0, &anchor_lang::system_program::ID);
                        let fingerprint = AccountFingerprint::of(&closed);
                        (closed, fingerprint)
                    });
                    if last.as_ref() == Some(&now) {
                        continue;
                    }
                    *last = Some(now);
                    let ui = encode(address, &account, config);
                    let message = format!(
                        r#"{{"jsonrpc":"2.0","method":"accountNotification","params":{{"result":{{"context":{{"slot":{slot}}},"value":{ui}}},"subscription":{number}}}}}"#
                    );
                    send(socket, Message::Text(message.into())).await?;
                }
                Subscription::Program { program, filters, config } => {
                    for address in &entry.account_keys {
                        let Some((account, _)) = read(address) else { continue };
                        if account.owner() != program || !filters.iter().all(|f| filter_passes(f, &account)) {
                            continue;
                        }
                        let ui = encode(address, &account, config);
                        let message = format!(
                            r#"{{"jsonrpc":"2.0","method":"programNotification","params":{{"result":{{"context":{{"slot":{slot}}},"value":{{"account":{ui},"pubkey":"{address}"}}}},"subscription":{number}}}}}"#
                        );
                        send(socket, Message::Text(message.into())).await?;
                    }
                }
                Subscription::Logs { mentions } => {
                    if mentions.as_ref().is_some_and(|m| !entry.account_keys.contains(m)) {
                        continue;
                    }
                    let logs = RpcLogsResponse { signature: entry.signature.clone(), err: entry.err.clone().map(Into::into), logs: entry.logs.clone() };
                    send(socket, text(notification("logs", number, with_context(slot, logs)))).await?;
                }
                // Notified from the slot clock (`notify_slot`), which counts transactions' slots too.
                Subscription::Slot | Subscription::Root => {}
            }
        }
        for number in finished {
            self.subscriptions.remove(&number);
        }
        Ok(())
    }
}

fn text(value: Value) -> Message {
    Message::Text(value.to_string().into())
}
