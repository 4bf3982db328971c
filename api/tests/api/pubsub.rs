//! The embedded chain's PubSub WebSocket in Solana's formats: a wallet's transaction sent to
//! `/rpc` is notified to its signature, account, program, logs and slot subscribers, each once,
//! in the node's shapes; unsubscribing stops them; bad requests get JSON-RPC errors.

use std::time::Duration;

use funding_market::client;
use futures_util::{SinkExt, StreamExt};
use localnet::pubsub::PubSub;
use serde_json::{Value, json};
use solana_signer::Signer;
use sqlx::PgPool;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::helpers::*;
use crate::trading::trading;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A PubSub connection, keeping the notifications that arrive while a call waits for its
/// answer.
struct Client {
    socket: Socket,
    early: Vec<Value>,
}

impl Client {
    async fn next(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(Duration::from_secs(15), self.socket.next()).await.expect("a message in time").unwrap().unwrap();
            if let Message::Text(text) = message {
                return serde_json::from_str(&text).unwrap();
            }
        }
    }

    /// Sends a request and returns its answer.
    async fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.socket.send(Message::Text(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string().into())).await.unwrap();
        loop {
            let message = self.next().await;
            if message.get("method").is_some() {
                self.early.push(message);
                continue;
            }
            assert_eq!(message["id"], id, "{message}");
            return message;
        }
    }

    /// Notifications until `n` have arrived or none comes for five seconds.
    async fn notifications(&mut self, n: usize) -> Vec<Value> {
        let mut out = std::mem::take(&mut self.early);
        while out.len() < n {
            match tokio::time::timeout(Duration::from_secs(5), self.socket.next()).await {
                Ok(Some(Ok(Message::Text(text)))) => out.push(serde_json::from_str(&text).unwrap()),
                Ok(Some(Ok(_))) => {}
                _ => break,
            }
        }
        out
    }
}

async fn rpc(t: &crate::trading::Trading, method: &str, params: Value) -> Value {
    let answer: Value = t
        .app
        .http
        .post(format!("{}/rpc", t.app.base))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_wallets_transaction_reaches_every_kind_of_subscriber(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let node = serve(PubSub::start(t.chain.clone()).await.router()).await;
    let (socket, _) = tokio_tungstenite::connect_async(node.base.replacen("http://", "ws://", 1)).await.unwrap();
    let mut client = Client { socket, early: Vec::new() };

    let wallet = wallet();
    let address = address(&wallet);
    let user = client::user_pda(&wallet.verifying_key().to_bytes().into()).to_string();
    let account_sub = client.call(1, "accountSubscribe", json!([user, {"encoding": "base64", "commitment": "confirmed"}])).await["result"].as_u64().unwrap();
    let program_sub = client.call(3, "programSubscribe", json!([funding_market::ID.to_string(), {"encoding": "base64"}])).await["result"].as_u64().unwrap();
    let logs_sub =
        client.call(4, "logsSubscribe", json!([{"mentions": [funding_market::ID.to_string()]}, {"commitment": "confirmed"}])).await["result"].as_u64().unwrap();
    let slot_sub = client.call(5, "slotSubscribe", json!([])).await["result"].as_u64().unwrap();
    let root_sub = client.call(6, "rootSubscribe", json!([])).await["result"].as_u64().unwrap();
    let ids = [account_sub, program_sub, logs_sub, slot_sub, root_sub];
    assert_eq!(ids.iter().collect::<std::collections::HashSet<_>>().len(), ids.len(), "ids are unique");

    // The wallet creates its user account itself, through /rpc as web3.js sends it.
    let keypair = solana_keypair::Keypair::try_from(&wallet.to_keypair_bytes()[..]).unwrap();
    rpc(&t, "requestAirdrop", json!([address, 2_000_000_000u64])).await;
    let blockhash = rpc(&t, "getLatestBlockhash", json!([])).await["value"]["blockhash"].as_str().unwrap().parse().unwrap();
    let tx = solana_transaction::Transaction::new_signed_with_payer(
        &[client::create_user(keypair.pubkey(), keypair.pubkey(), t.chain.mint())],
        Some(&keypair.pubkey()),
        &[&keypair],
        blockhash,
    );
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bincode::serialize(&tx).unwrap());
    let signature = rpc(&t, "sendTransaction", json!([encoded, {"encoding": "base64"}])).await;
    let signature = signature.as_str().unwrap();

    // Subscribed after it landed (as a client does after sending): notified at once, then over.
    let sig_answer = client.call(7, "signatureSubscribe", json!([signature, {"commitment": "confirmed"}])).await;
    let sig_sub = sig_answer["result"].as_u64().unwrap();

    // The airdrop and the creation: slots and roots for both, the rest for the creation only.
    let got = client.notifications(20).await;
    let of = |method: &str, sub: u64| got.iter().filter(|n| n["method"] == method && n["params"]["subscription"] == sub).cloned().collect::<Vec<_>>();
    let signature_n = of("signatureNotification", sig_sub);
    assert_eq!(signature_n.len(), 1, "{got:?}");
    assert_eq!(signature_n[0]["params"]["result"]["value"], json!({"err": null}));
    assert!(signature_n[0]["params"]["result"]["context"]["slot"].as_u64().unwrap() > 0);
    let account_n = of("accountNotification", account_sub);
    assert_eq!(account_n.len(), 1, "{got:?}");
    let value = &account_n[0]["params"]["result"]["value"];
    assert_eq!(value["owner"], funding_market::ID.to_string());
    assert_eq!(value["data"][1], "base64");
    assert!(value["lamports"].as_u64().unwrap() > 0 && value["executable"] == false && value["space"].as_u64().unwrap() > 0);
    let program_n = of("programNotification", program_sub);
    assert!(program_n.iter().any(|n| n["params"]["result"]["value"]["pubkey"] == user), "{program_n:?}");
    let logs_n = of("logsNotification", logs_sub);
    assert_eq!(logs_n.len(), 1, "only the transaction mentioning the program: {logs_n:?}");
    assert_eq!(logs_n[0]["params"]["result"]["value"]["signature"], signature);
    assert!(logs_n[0]["params"]["result"]["value"]["logs"].as_array().unwrap().iter().any(|l| l.as_str().unwrap().contains("invoke [1]")));
    // Slots: the transactions' and the slot clock's empty ones, rising, each rooted at once.
    let slot_n = of("slotNotification", slot_sub);
    let slots: Vec<u64> = slot_n.iter().map(|n| n["params"]["result"]["slot"].as_u64().unwrap()).collect();
    assert!(!slots.is_empty() && slots.windows(2).all(|w| w[0] < w[1]), "{slots:?}");
    assert!(slot_n.iter().all(|n| n["params"]["result"]["parent"].as_u64().unwrap() + 1 == n["params"]["result"]["slot"].as_u64().unwrap()), "{slot_n:?}");
    let roots: Vec<u64> = of("rootNotification", root_sub).iter().map(|n| n["params"]["result"].as_u64().unwrap()).collect();
    assert!(!roots.is_empty() && roots.windows(2).all(|w| w[0] < w[1]), "{roots:?}");
    let created_in = signature_n[0]["params"]["result"]["context"]["slot"].as_u64().unwrap();
    // With nothing sent, the next slot is notified all the same.
    let quiet_from = slots.last().copied().unwrap().max(created_in);
    loop {
        let message = client.next().await;
        if message["method"] == "slotNotification"
            && message["params"]["subscription"] == slot_sub
            && message["params"]["result"]["slot"].as_u64().unwrap() > quiet_from
        {
            break;
        }
    }

    // A signature subscribed before it lands is notified when it does, and only once.
    let (tx2, signature2) = {
        let blockhash = rpc(&t, "getLatestBlockhash", json!([])).await["value"]["blockhash"].as_str().unwrap().parse().unwrap();
        let tx = solana_transaction::Transaction::new_signed_with_payer(
            &[solana_system_interface_transfer(&keypair.pubkey(), 1_000_000)],
            Some(&keypair.pubkey()),
            &[&keypair],
            blockhash,
        );
        let signature = tx.signatures[0].to_string();
        (tx, signature)
    };
    for (id, sub) in [(8, account_sub), (9, program_sub), (10, logs_sub), (11, slot_sub), (12, root_sub)] {
        let kind = ["account", "program", "logs", "slot", "root"][(id - 8) as usize];
        assert_eq!(client.call(id, &format!("{kind}Unsubscribe"), json!([sub])).await["result"], true);
    }
    let again = client.call(13, "slotUnsubscribe", json!([slot_sub])).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    // Slots notified before the unsubscriptions were answered.
    client.early.clear();
    let pending = client.call(14, "signatureSubscribe", json!([signature2])).await["result"].as_u64().unwrap();
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bincode::serialize(&tx2).unwrap());
    rpc(&t, "sendTransaction", json!([encoded, {"encoding": "base64"}])).await;
    let got = client.notifications(3).await;
    assert_eq!(got.len(), 1, "only the signature: the rest were unsubscribed: {got:?}");
    assert_eq!((got[0]["method"].as_str(), got[0]["params"]["subscription"].as_u64()), (Some("signatureNotification"), Some(pending)));

    // Bad requests.
    assert_eq!(client.call(15, "accountSubscribe", json!(["not-an-address"])).await["error"]["code"], -32602);
    assert_eq!(client.call(16, "blockSubscribe", json!([])).await["error"]["code"], -32601);
    assert_eq!(client.call(17, "signatureSubscribe", json!(["abc"])).await["error"]["code"], -32602);
    client.socket.send(Message::Text("{not json".into())).await.unwrap();
    assert_eq!(client.next().await["error"]["code"], -32700);

    // At most MESSAGES_PER_SEC requests a second are processed; the rest get -32005 unread.
    let burst = 2 * localnet::pubsub::MESSAGES_PER_SEC as usize + 50;
    for id in 0..burst {
        let request = json!({"jsonrpc": "2.0", "id": 1000 + id, "method": "slotUnsubscribe", "params": [999_999]});
        client.socket.send(Message::Text(request.to_string().into())).await.unwrap();
    }
    let mut codes = Vec::new();
    for _ in 0..burst {
        codes.push(client.next().await["error"]["code"].as_i64().unwrap());
    }
    let refused = codes.iter().filter(|c| **c == -32005).count();
    assert!(refused > 0 && codes.iter().all(|c| *c == -32005 || *c == -32602), "{refused} of {burst}: {codes:?}");
}

fn solana_system_interface_transfer(from: &anchor_lang::prelude::Pubkey, lamports: u64) -> anchor_lang::solana_program::instruction::Instruction {
    anchor_lang::solana_program::system_instruction::transfer(from, &anchor_lang::prelude::Pubkey::new_unique(), lamports)
}

/// The process's resident memory, bytes (`VmRSS`).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// The largest account the chain holds (Token-2022's ProgramData, about 507 KB) and its size.
async fn largest_account(chain: &localnet::EmbeddedChain) -> (String, u64) {
    let loader = anchor_lang::solana_program::bpf_loader_upgradeable::ID.to_string();
    let request =
        json!({"jsonrpc": "2.0", "id": 1, "method": "getProgramAccounts", "params": [loader, {"encoding": "base64", "dataSlice": {"offset": 0, "length": 0}}]});
    let listing = chain.json_rpc(&request).await;
    let largest = listing["result"].as_array().unwrap().iter().max_by_key(|a| a["account"]["space"].as_u64().unwrap()).unwrap().clone();
    (largest["pubkey"].as_str().unwrap().to_owned(), largest["account"]["space"].as_u64().unwrap())
}

/// Sends `n` requests made by `request(i)` no faster than the connection's message rate allows,
/// and returns their answers in order. A second's share is sent, and its answers read, before the
/// next second's wait begins: the node counts a message when it processes it, so a share delayed
/// on a loaded host cannot fall into the next share's second.
async fn send_paced(socket: &mut Socket, n: usize, request: impl Fn(usize) -> Value) -> Vec<Value> {
    let per_second = localnet::pubsub::MESSAGES_PER_SEC as usize - 10;
    let mut answers = Vec::with_capacity(n);
    for (i, start) in (0..n).step_by(per_second).enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(1_050)).await;
        }
        let end = (start + per_second).min(n);
        for id in start..end {
            socket.send(Message::Text(request(id).to_string().into())).await.unwrap();
        }
        while answers.len() < end {
            let message = tokio::time::timeout(Duration::from_secs(15), socket.next()).await.expect("an answer in time").unwrap().unwrap();
            if let Message::Text(text) = message {
                answers.push(serde_json::from_str::<Value>(&text).unwrap());
            }
        }
    }
    answers
}

/// 20 connections from one address, each asking for 1,000 subscriptions of the largest account
/// and one more: the connections past `MAX_CONNECTIONS_PER_IP` and the subscriptions past
/// `MAX_SUBSCRIPTIONS` are refused with Agave's JSON-RPC error, and the process's memory stays
/// far below what a copy of the account per subscription was (10 × 1,000 × 507 KB).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn connections_and_subscriptions_are_bounded(db: PgPool) {
    use localnet::pubsub::{LIMIT_REACHED, MAX_CONNECTIONS_PER_IP, MAX_SUBSCRIPTIONS};
    let chain = localnet::EmbeddedChain::open(db.clone(), &localnet::GenesisParams::default()).await.unwrap();
    let pubsub = PubSub::start(chain.clone()).await;
    let node = serve(pubsub.clone().router()).await;
    let (largest, space) = largest_account(&chain).await;
    assert!(space > 400_000, "{space}");
    let before = resident_bytes();

    let url = node.base.replacen("http://", "ws://", 1);
    let mut admitted = Vec::new();
    let mut refused = 0;
    for _ in 0..20 {
        let (mut socket, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        // A refused connection is told at once; an admitted one says nothing until asked.
        match tokio::time::timeout(Duration::from_millis(300), socket.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => {
                let answer: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(answer["error"]["code"], LIMIT_REACHED, "{answer}");
                assert!(answer["error"]["message"].as_str().unwrap().contains("per IP address"), "{answer}");
                refused += 1;
            }
            Err(_) => admitted.push(socket),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((admitted.len(), refused), (MAX_CONNECTIONS_PER_IP, 20 - MAX_CONNECTIONS_PER_IP));
    assert_eq!(pubsub.open_connections(), MAX_CONNECTIONS_PER_IP);

    let subscribe = |id: usize| json!({"jsonrpc": "2.0", "id": id, "method": "accountSubscribe", "params": [largest, {"encoding": "base64"}]});
    let answers = futures_util::future::join_all(admitted.iter_mut().map(|socket| send_paced(socket, MAX_SUBSCRIPTIONS + 1, subscribe))).await;
    let peak = resident_bytes();
    for answers in &answers {
        assert!(answers[..MAX_SUBSCRIPTIONS].iter().all(|a| a["result"].is_u64()), "{:?}", answers.iter().find(|a| !a["result"].is_u64()));
        let last = &answers[MAX_SUBSCRIPTIONS];
        assert_eq!((last["id"].as_u64(), last["error"]["code"].as_i64()), (Some(MAX_SUBSCRIPTIONS as u64), Some(LIMIT_REACHED)), "{last}");
    }
    let grown = peak.saturating_sub(before);
    let copies = MAX_CONNECTIONS_PER_IP as u64 * MAX_SUBSCRIPTIONS as u64 * space;
    println!(
        "pubsub RSS before {before} B, after {} subscriptions {peak} B (grew {grown} B); a copy per subscription: {copies} B",
        MAX_CONNECTIONS_PER_IP * MAX_SUBSCRIPTIONS
    );
    assert!(grown < 200 * 1024 * 1024, "grew {grown} bytes");

    // A connection closed gives its place back.
    drop(admitted);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while pubsub.open_connections() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(pubsub.open_connections(), 0);
    let (socket, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    let mut client = Client { socket, early: Vec::new() };
    assert!(client.call(1, "slotSubscribe", json!([])).await["result"].is_u64());
}

/// A client that stops reading while notifications flow to it is closed once a message has
/// waited `SEND_TIMEOUT` for it, and its place is given back.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_client_that_stops_reading_is_dropped(db: PgPool) {
    use localnet::pubsub::{MAX_SUBSCRIPTIONS, SEND_TIMEOUT};
    let chain = localnet::EmbeddedChain::open(db.clone(), &localnet::GenesisParams::default()).await.unwrap();
    let pubsub = PubSub::start(chain.clone()).await;
    let node = serve(pubsub.clone().router()).await;
    let (mut socket, _) = tokio_tungstenite::connect_async(node.base.replacen("http://", "ws://", 1)).await.unwrap();
    // Every airdrop to this address is MAX_SUBSCRIPTIONS notifications; the client reads none
    // (only its subscriptions' answers).
    let target = anchor_lang::prelude::Pubkey::new_unique();
    send_paced(&mut socket, MAX_SUBSCRIPTIONS, |id| json!({"jsonrpc": "2.0", "id": id, "method": "accountSubscribe", "params": [target.to_string()]})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(pubsub.open_connections(), 1);
    let started = tokio::time::Instant::now();
    let deadline = started + SEND_TIMEOUT + Duration::from_secs(30);
    let mut airdrops = 0;
    while pubsub.open_connections() > 0 && tokio::time::Instant::now() < deadline {
        chain.airdrop(&target, 1_000_000).await.unwrap();
        airdrops += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("a client that stopped reading was dropped after {airdrops} airdrops, {:?}", started.elapsed());
    assert_eq!(pubsub.open_connections(), 0, "still connected after {airdrops} airdrops");
    drop(socket);
}
