//! The embedded chain's PubSub WebSocket, where web3.js, `@solana/kit` and the Anchor client look
//! for it (the RPC port + 1 unless told otherwise; `FM_PUBSUB_ADDR`): `signatureSubscribe`,
//! `accountSubscribe`, `programSubscribe`, `logsSubscribe`, `slotSubscribe`, `rootSubscribe`
//! and their unsubscribes, answered and notified in Solana's formats
//! (`{"jsonrpc":"2.0","method":"<kind>Notification","params":{"result":…,"subscription":<id>}}`).
//!
//! One follower per process reads each transaction the chain confirms from its ledger and
//! broadcasts it; every connection matches it against its own subscriptions. A signature
//! subscription for a transaction that already landed is notified at once (a client subscribes
//! after sending, and here sending returns once the transaction is confirmed). The embedded
//! chain has no forks: what lands is final, so every commitment level is notified alike, and a
//! root is the slot itself. Account and program notifications carry the account as the bank
//! holds it after the transaction, and only when it changed.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anchor_lang::prelude::Pubkey;
use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;
use indexer::chain::EmbeddedChain;
use indexer::chain::embedded::{LedgerEntry, encoded_account, filter_passes};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use solana_account::{AccountSharedData, ReadableAccount};
use solana_account_decoder_client_types::UiAccount;
use solana_rpc_client_api::config::{RpcAccountInfoConfig, RpcProgramAccountsConfig, RpcSignatureSubscribeConfig, RpcTransactionLogsFilter};
use solana_rpc_client_api::filter::RpcFilterType;
use solana_rpc_client_api::response::{ProcessedSignatureResult, RpcKeyedAccount, RpcLogsResponse, RpcSignatureResult, SlotInfo};
use tokio::sync::broadcast;

use super::message_rate::MessageRate;

/// Subscriptions one connection may hold.
pub const MAX_SUBSCRIPTIONS: usize = 1_000;
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
}

impl PubSub {
    /// Starts following `chain`'s confirmations (from the ledger's current end).
    pub async fn start(chain: EmbeddedChain) -> PubSub {
        let (landed, _) = broadcast::channel(BACKLOG);
        let follower = PubSub { chain: chain.clone(), landed: landed.clone() };
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
    pub fn router(self) -> Router {
        Router::new().route("/", get(upgrade)).fallback(upgrade).with_state(self)
    }
}

async fn upgrade(State(pubsub): State<PubSub>, ws: WebSocketUpgrade) -> Response {
    ws.max_message_size(MAX_MESSAGE_BYTES).on_upgrade(move |socket| Connection::new(pubsub).run(socket))
}

/// What a subscription is for.
enum Subscription {
    Signature { signature: String },
    Account { address: Pubkey, config: RpcAccountInfoConfig, last: Option<(u64, Vec<u8>, Pubkey)> },
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
        Connection { pubsub, subscriptions: HashMap::new() }
    }

    async fn run(mut self, mut socket: WebSocket) {
        let mut landed = self.pubsub.landed.subscribe();
        let mut rate = MessageRate::per_second(MESSAGES_PER_SEC);
        loop {
            let outgoing = tokio::select! {
                message = socket.recv() => match message {
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
                },
                entry = landed.recv() => match entry {
                    Ok(entry) => self.notifications(&entry),
                    // Too far behind to notify truthfully: close, as a node drops a slow client.
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "pubsub: a connection fell behind; closing it");
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            };
            for message in outgoing {
                if socket.send(Message::Text(message.to_string().into())).await.is_err() {
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
            return vec![failure(&id, -32602, format!("at most {MAX_SUBSCRIPTIONS} subscriptions per connection"))];
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
                    out.push(notification("signature", number, with_context(slot, RpcSignatureResult::ProcessedSignature(ProcessedSignatureResult { err: err.map(Into::into) }))));
                    return out;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "pubsub: a signature's status could not be read"),
            }
        }
        self.subscriptions.insert(number, subscription);
        out
    }

    fn parse(&self, method: &str, params: &Value) -> Result<Subscription, (i64, String)> {
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
                let last = self.pubsub.chain.bank_account(&address).map(|a| (a.lamports(), a.data().to_vec(), *a.owner()));
                Subscription::Account { address, config, last }
            }
            "programSubscribe" => {
                let program = address(param(params, 0).map_err(invalid)?)?;
                let config: Option<RpcProgramAccountsConfig> = param(params, 1).map_err(invalid)?;
                let config = config.unwrap_or_default();
                let filters = config.filters.unwrap_or_default();
                for filter in &filters {
                    filter.verify().map_err(|e| invalid(format!("Invalid params: {e}")))?;
                }
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

    /// What `entry` means for this connection's subscriptions.
    fn notifications(&mut self, entry: &LedgerEntry) -> Vec<Value> {
        let chain = &self.pubsub.chain;
        let mut out = Vec::new();
        let mut finished = Vec::new();
        for (&number, subscription) in self.subscriptions.iter_mut() {
            match subscription {
                Subscription::Signature { signature } if *signature == entry.signature => {
                    let result = RpcSignatureResult::ProcessedSignature(ProcessedSignatureResult { err: entry.err.clone().map(Into::into) });
                    out.push(notification("signature", number, with_context(entry.slot, result)));
                    finished.push(number);
                }
                Subscription::Signature { .. } => {}
                Subscription::Account { address, config, last } => {
                    if !entry.account_keys.contains(address) {
                        continue;
                    }
                    // A closed account is notified as an empty system account, as a node does.
                    let account = chain.bank_account(address).unwrap_or_else(|| AccountSharedData::new(0, 0, &anchor_lang::system_program::ID));
                    let now = (account.lamports(), account.data().to_vec(), *account.owner());
                    if last.as_ref() == Some(&now) {
                        continue;
                    }
                    *last = Some(now);
                    let ui: UiAccount = encoded_account(chain, address, &account, config);
                    out.push(notification("account", number, with_context(entry.slot, ui)));
                }
                Subscription::Program { program, filters, config } => {
                    for address in &entry.account_keys {
                        let Some(account) = chain.bank_account(address) else { continue };
                        if account.owner() != program || !filters.iter().all(|f| filter_passes(f, &account)) {
                            continue;
                        }
                        let keyed = RpcKeyedAccount { pubkey: address.to_string(), account: encoded_account(chain, address, &account, config) };
                        out.push(notification("program", number, with_context(entry.slot, keyed)));
                    }
                }
                Subscription::Logs { mentions } => {
                    if mentions.as_ref().is_some_and(|m| !entry.account_keys.contains(m)) {
                        continue;
                    }
                    let logs = RpcLogsResponse { signature: entry.signature.clone(), err: entry.err.clone().map(Into::into), logs: entry.logs.clone() };
                    out.push(notification("logs", number, with_context(entry.slot, logs)));
                }
                Subscription::Slot => {
                    let info = SlotInfo { slot: entry.slot, parent: entry.slot.saturating_sub(1), root: entry.slot };
                    out.push(notification("slot", number, serde_json::to_value(info).unwrap_or(Value::Null)));
                }
                Subscription::Root => out.push(notification("root", number, json!(entry.slot))),
            }
        }
        for number in finished {
            self.subscriptions.remove(&number);
        }
        out
    }
}
