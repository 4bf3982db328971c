//! The WebSocket across two `serve` replicas sharing Postgres and Redis, with the real stream
//! publisher (the worker, woken by the triggers' NOTIFY): a trade through one replica reaches a
//! client of the other — the market's channel and the trader's account — each update once, after
//! its snapshot and numbered above it; the sixth connection from one IP is refused with 429 and
//! the envelope, whichever replica it reaches; garbage gets errors and the connection stays.

use std::sync::Arc;
use std::time::Duration;

use api::chain::OnChain;
use api::workers::Worker;
use api::workers::stream::StreamWorker;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::helpers::*;
use crate::settlement::{buy, trader};
use crate::trading::{Trading, open_market};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Two replicas of the trading app (the same configuration: JWT key, Redis namespace), and the
/// stream publisher running.
struct Replicas {
    a: Trading,
    b: TestApp,
    _publisher: tokio_util::sync::DropGuard,
}

async fn replicas(db: &PgPool) -> Replicas {
    let mut config = config();
    config.http.request_timeout = Duration::from_secs(10);
    let a = crate::trading::trading_with(db, config.clone()).await;
    let onchain = OnChain::embedded(&a.chain, db.clone()).await.unwrap();
    let b_state = state_with(config.clone(), db.clone(), &redis_url()).with_onchain(onchain);
    let services = b_state.services.clone();
    let b = spawn(b_state).await;
    let cancel = CancellationToken::new();
    tokio::spawn(Arc::new(StreamWorker { services, period: Duration::from_secs(1) }).run(cancel.clone()));
    Replicas { a, b, _publisher: cancel.drop_guard() }
}

async fn connect(app: &TestApp) -> Socket {
    let url = format!("{}/v1/ws", app.base.replacen("http://", "ws://", 1));
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.expect("the upgrade is accepted");
    let welcome = next(&mut socket).await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    socket
}

async fn send(socket: &mut Socket, message: Value) {
    socket.send(Message::Text(message.to_string().into())).await.unwrap();
}

/// The next JSON message (pings are answered by the client library).
async fn next(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(15), socket.next()).await.expect("a message within 15 s").unwrap().unwrap();
        if let Message::Text(text) = message {
            return serde_json::from_str(&text).unwrap();
        }
    }
}

/// Messages until `done` says the wanted ones arrived (or 15 s pass).
async fn collect(socket: &mut Socket, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut got = Vec::new();
    while !done(&got) {
        got.push(next(socket).await);
    }
    got
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_trade_through_one_replica_reaches_a_client_of_the_other(db: PgPool) {
    let r = replicas(&db).await;
    let market = open_market(&db, "open").await;
    let alice = trader(&r.a, "50").await;

    let mut watcher = connect(&r.b).await;
    send(&mut watcher, json!({"type": "subscribe", "channel": format!("market:{market}")})).await;
    let snapshot = next(&mut watcher).await;
    assert_eq!((snapshot["type"].as_str(), snapshot["channel"].as_str()), (Some("snapshot"), Some(format!("market:{market}").as_str())), "{snapshot}");
    assert_eq!(snapshot["data"]["market"]["yes_price"], "0.500000");
    assert_eq!(snapshot["data"]["trades"], json!([]));
    let from = snapshot["seq"].as_i64().unwrap();

    // Alice watches her own account on replica B too.
    let mut own = connect(&r.b).await;
    send(&mut own, json!({"type": "auth", "token": alice.token})).await;
    assert_eq!(next(&mut own).await, json!({"type": "authenticated", "wallet": alice.wallet}));
    send(&mut own, json!({"type": "subscribe", "channel": "account"})).await;
    let account = next(&mut own).await;
    assert_eq!(account["type"], "snapshot", "{account}");
    assert_eq!(account["data"]["balance"]["usdc_balance"], "50.000000");

    // The trade goes through replica A.
    buy(&r.a, &alice, market, "yes", "10").await;

    let updates =
        collect(&mut watcher, |got| got.iter().any(|m| m["event"] == "trade") && got.iter().any(|m| m["event"] == "market" && m["data"]["trade_count"] == 1))
            .await;
    for update in &updates {
        assert_eq!((update["type"].as_str(), update["channel"].as_str()), (Some("update"), Some(format!("market:{market}").as_str())), "{update}");
        assert!(update["seq"].as_i64().unwrap() > from, "numbered after the snapshot: {update}");
    }
    let seqs: Vec<i64> = updates.iter().map(|u| u["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order, each once: {seqs:?}");
    let trade = updates.iter().find(|u| u["event"] == "trade").unwrap();
    assert_eq!((trade["data"]["side"].as_str(), trade["data"]["kind"].as_str()), (Some("yes"), Some("buy")), "{trade}");
    let moved = updates.iter().rev().find(|u| u["event"] == "market").unwrap();
    assert!(moved["data"]["yes_price"].as_str().unwrap() > "0.500000", "{moved}");

    let mine = collect(&mut own, |got| {
        got.iter().any(|m| m["event"] == "trade") && got.iter().any(|m| m["event"] == "positions") && got.iter().any(|m| m["event"] == "balance")
    })
    .await;
    let balance = mine.iter().rev().find(|m| m["event"] == "balance").unwrap();
    assert_eq!(balance["channel"], "account");
    assert!(crate::trading::micros(&balance["data"]["usdc_balance"]) < 40_000_000, "10 USDC and the fee left the vault: {balance}");
    let positions = mine.iter().rev().find(|m| m["event"] == "positions").unwrap();
    assert_eq!(positions["data"][0]["market_id"], market.to_string(), "{positions}");

    // A deposit through replica A: found, recorded and credited, each shown to the account.
    assert_eq!(r.a.faucet(&alice.wallet, "3").await.0, 200);
    let deposits = collect(&mut own, |got| got.iter().any(|m| m["event"] == "deposit" && m["data"]["status"] == "credited")).await;
    let credited = deposits.iter().find(|m| m["event"] == "deposit" && m["data"]["status"] == "credited").unwrap();
    assert_eq!(credited["data"]["amount"], "3.000000", "{credited}");

    // Nothing else arrives: each event was forwarded once.
    send(&mut watcher, json!({"type": "ping"})).await;
    assert_eq!(next(&mut watcher).await, json!({"type": "pong"}));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_sixth_connection_from_one_ip_is_refused_across_replicas(db: PgPool) {
    let r = replicas(&db).await;
    let mut open = Vec::new();
    for i in 0..5 {
        open.push(connect(if i % 2 == 0 { &r.a.app } else { &r.b }).await);
    }
    for app in [&r.a.app, &r.b] {
        let url = format!("{}/v1/ws", app.base.replacen("http://", "ws://", 1));
        match tokio_tungstenite::connect_async(url).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 429);
                assert!(response.headers().contains_key("retry-after"));
                let body: Value = serde_json::from_slice(response.body().as_deref().unwrap()).unwrap();
                assert_eq!((body["data"].clone(), body["error"]["code"].as_str()), (Value::Null, Some("RATE_LIMITED")), "{body}");
                assert!(body["error"]["message"].as_str().unwrap().contains("5 WebSocket connections"));
            }
            other => panic!("the sixth connection was not refused: {:?}", other.map(|(_, r)| r.status())),
        }
    }
    // Closing one frees its slot.
    let mut first = open.remove(0);
    first.close(None).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let url = format!("{}/v1/ws", r.b.base.replacen("http://", "ws://", 1));
        if tokio_tungstenite::connect_async(url).await.is_ok() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the closed connection's slot was never freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn garbage_gets_errors_and_the_connection_stays(db: PgPool) {
    let r = replicas(&db).await;
    let mut socket = connect(&r.b).await;
    let unknown_market = Uuid::new_v4();
    let cases = [
        (Message::Text("not json".into()), "INVALID_INPUT", "not a message"),
        (Message::Text(json!({"type": "dance"}).to_string().into()), "INVALID_INPUT", "not a message"),
        (Message::Text(json!({"type": "subscribe"}).to_string().into()), "INVALID_INPUT", "channel"),
        (Message::Text(json!({"type": "subscribe", "channel": "prices"}).to_string().into()), "INVALID_INPUT", "unknown channel"),
        (Message::Text(json!({"type": "subscribe", "channel": "market:7"}).to_string().into()), "INVALID_INPUT", "not a market id"),
        (Message::Text(json!({"type": "subscribe", "channel": format!("market:{unknown_market}")}).to_string().into()), "NOT_FOUND", "no market"),
        (Message::Text(json!({"type": "subscribe", "channel": "series:nope"}).to_string().into()), "NOT_FOUND", "no series"),
        (Message::Text(json!({"type": "subscribe", "channel": "account"}).to_string().into()), "UNAUTHORIZED", "auth"),
        (Message::Text(json!({"type": "unsubscribe", "channel": "markets"}).to_string().into()), "NOT_FOUND", "not subscribed"),
        (Message::Text(json!({"type": "auth", "token": "nope"}).to_string().into()), "UNAUTHORIZED", "invalid access token"),
        (Message::Text(json!({"type": "auth", "api_key": "fmk_0000"}).to_string().into()), "UNAUTHORIZED", "API key"),
        (Message::Binary(vec![1, 2, 3].into()), "INVALID_INPUT", "JSON text"),
    ];
    for (message, code, why) in cases {
        socket.send(message.clone()).await.unwrap();
        let answer = next(&mut socket).await;
        assert_eq!((answer["type"].as_str(), answer["code"].as_str()), (Some("error"), Some(code)), "{message:?}: {answer}");
        assert!(answer["message"].as_str().unwrap().contains(why), "{message:?}: {answer}");
    }
    // Still there, and still serving.
    send(&mut socket, json!({"type": "subscribe", "channel": "series:binance-btcusdt"})).await;
    let snapshot = next(&mut socket).await;
    assert_eq!((snapshot["type"].as_str(), snapshot["data"]["slug"].as_str()), (Some("snapshot"), Some("binance-btcusdt")), "{snapshot}");
    send(&mut socket, json!({"type": "subscribe", "channel": "series:binance-btcusdt"})).await;
    assert!(next(&mut socket).await["message"].as_str().unwrap().contains("already subscribed"));
    send(&mut socket, json!({"type": "unsubscribe", "channel": "series:binance-btcusdt"})).await;
    assert_eq!(next(&mut socket).await, json!({"type": "unsubscribed", "channel": "series:binance-btcusdt"}));

    // Messages beyond 20 a second are refused unprocessed (each may cost a database read), and
    // the connection stays.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for _ in 0..25 {
        send(&mut socket, json!({"type": "ping"})).await;
    }
    let mut answers = Vec::new();
    for _ in 0..25 {
        answers.push(next(&mut socket).await);
    }
    let limited = answers.iter().filter(|a| a["code"] == "RATE_LIMITED").count();
    assert_eq!((answers.len() - limited, limited), (20, 5), "{answers:?}");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    send(&mut socket, json!({"type": "ping"})).await;
    assert_eq!(next(&mut socket).await, json!({"type": "pong"}));

    // A plain GET is not an upgrade: 400 with the envelope.
    let response = r.b.get("/v1/ws").await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "INVALID_INPUT");
}

/// A connection whose queue is full is told to close; the others still get the event at once.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_slow_consumer_is_cut_off_and_never_holds_up_the_others(db: PgPool) {
    use api::http::routes::ws::hub::{Hub, Subscriber};
    use api::services::stream::Published;

    let services = services(&db);
    api::store::series::ensure(&db, &api::app::config::default_series()).await.unwrap();
    let market = open_market(&db, "open").await;
    let hub = Hub::new();
    let (slow_queue, mut slow_inbox) = tokio::sync::mpsc::channel(1);
    let (fast_queue, mut fast_inbox) = tokio::sync::mpsc::channel(1);
    let (slow, fast) = (CancellationToken::new(), CancellationToken::new());
    hub.subscribe("markets", 1, Subscriber { queue: slow_queue, overflow: slow.clone() }, None);
    hub.subscribe("markets", 2, Subscriber { queue: fast_queue, overflow: fast.clone() }, None);
    let event = |id, seq| Published { id, part: 0, seq, channel: "markets".into(), kind: "market".into(), reference: json!({"market_id": market}) };

    hub.dispatch(&services, event(1, 10)).await;
    assert!(!slow.is_cancelled());
    // The fast one reads; the slow one does not, and its queue (of one) is full at the next.
    assert_eq!(within(&mut fast_inbox).await.seq, 10);
    hub.dispatch(&services, event(2, 11)).await;
    assert!(slow.is_cancelled(), "the slow consumer is told to close");
    assert!(!fast.is_cancelled());
    let delivered = within(&mut fast_inbox).await;
    assert_eq!(delivered.seq, 11);
    let shown: Value = serde_json::from_str(&delivered.text).unwrap();
    assert_eq!((shown["event"].as_str(), shown["data"]["id"].as_str()), (Some("market"), Some(market.to_string().as_str())));
    // A republished event (same id) is forwarded once.
    hub.dispatch(&services, event(2, 12)).await;
    assert!(fast_inbox.try_recv().is_err(), "event 2 again is dropped");
    assert_eq!(within(&mut slow_inbox).await.seq, 10, "the slow one only ever got the first");
}

/// The next message of `inbox`, which must come at once.
async fn within(inbox: &mut tokio::sync::mpsc::Receiver<Arc<api::http::routes::ws::hub::Outgoing>>) -> Arc<api::http::routes::ws::hub::Outgoing> {
    tokio::time::timeout(Duration::from_secs(5), inbox.recv()).await.expect("delivered at once").unwrap()
}

/// A statement's trades are one stream row holding an event per channel (the `stream_trades`
/// trigger), published as one update per trade: in the statement's order, each with its own
/// sequence number, and a republished update dropped by its (row, part).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_statements_trades_are_one_event_a_channel_and_one_update_a_trade(db: PgPool) {
    use api::http::routes::ws::hub::{Hub, Subscriber};
    use api::services::stream::{self, Published};

    let services = services(&db);
    api::store::series::ensure(&db, &api::app::config::default_series()).await.unwrap();
    let (m1, m2) = (open_market(&db, "open").await, open_market(&db, "open").await);
    let trades = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
    let mut pubsub = services.redis.pubsub().await.unwrap();
    pubsub.subscribe(stream::redis_channel(&services)).await.unwrap();
    sqlx::query(
        "INSERT INTO trades (id, market_id, wallet, side, is_buy, shares, amount, fee, yes_price_ppm)
         SELECT id, market_id, wallet, 'yes', true, 1000000, 500000, 5000, 500000
         FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS t(id, market_id, wallet)",
    )
    .bind(&trades[..])
    .bind(&[m1, m2, m1][..])
    .bind(&["w1", "w2", "w1"][..])
    .execute(&db)
    .await
    .unwrap();

    // One row for the statement, holding an event per channel, channels in the order of their
    // first trade, a market before its trader.
    let trade_rows: i64 = sqlx::query_scalar("SELECT count(DISTINCT id) FROM unpublished_events WHERE kind = 'trade'").fetch_one(&db).await.unwrap();
    assert_eq!(trade_rows, 1, "one row for the statement's trades");
    let rows: Vec<(String, Value)> =
        sqlx::query_as("SELECT channel, ref FROM unpublished_events WHERE kind = 'trade' ORDER BY id, n").fetch_all(&db).await.unwrap();
    let ids = |t: &[usize]| json!({"trade_ids": t.iter().map(|&i| trades[i].to_string()).collect::<Vec<_>>()});
    assert_eq!(
        rows,
        vec![
            (format!("market:{m1}"), ids(&[0, 2])),
            ("account:w1".to_owned(), ids(&[0, 2])),
            (format!("market:{m2}"), ids(&[1])),
            ("account:w2".to_owned(), ids(&[1])),
        ]
    );

    // (The markets' own events, appended before, come first.)
    let rows = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM stream_events").fetch_one(&db).await.unwrap();
    assert_eq!(stream::publish(&services).await.unwrap(), stream::Batch { rows: rows as usize, more: false });
    assert_eq!(stream::publish(&services).await.unwrap().rows, 0, "each event is published once");
    let mut messages = pubsub.on_message();
    let mut published = Vec::new();
    while published.len() < 6 {
        let message = tokio::time::timeout(Duration::from_secs(5), messages.next()).await.expect("published").unwrap();
        let update = serde_json::from_str::<Published>(&message.get_payload::<String>().unwrap()).unwrap();
        if update.kind == "trade" {
            published.push(update);
        }
    }
    let shown: Vec<(String, u32, String)> =
        published.iter().map(|p| (p.channel.clone(), p.part, p.reference["trade_id"].as_str().unwrap().to_owned())).collect();
    let update = |channel: String, part, trade: usize| (channel, part, trades[trade].to_string());
    assert_eq!(
        shown,
        vec![
            update(format!("market:{m1}"), 0, 0),
            update(format!("market:{m1}"), 1, 2),
            update("account:w1".into(), 2, 0),
            update("account:w1".into(), 3, 2),
            update(format!("market:{m2}"), 4, 1),
            update("account:w2".into(), 5, 1),
        ]
    );
    let seqs: Vec<i64> = published.iter().map(|p| p.seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "one number per update, in order: {seqs:?}");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM stream_events").fetch_one(&db).await.unwrap();
    assert_eq!(left, 0, "a published event's row is deleted by the batch that published it");

    // A subscriber of m1 gets both of its trades once, whatever is republished.
    let hub = Hub::new();
    let (queue, mut inbox) = tokio::sync::mpsc::channel(8);
    hub.subscribe(&format!("market:{m1}"), 1, Subscriber { queue, overflow: CancellationToken::new() }, None);
    for p in published.iter().chain(&published[..2]) {
        hub.dispatch(&services, p.clone()).await;
    }
    let delivered: Vec<Value> = [within(&mut inbox).await, within(&mut inbox).await].iter().map(|o| serde_json::from_str(&o.text).unwrap()).collect();
    assert_eq!(
        delivered.iter().map(|d| (d["seq"].as_i64().unwrap(), d["data"]["trade_id"].as_str().unwrap().to_owned())).collect::<Vec<_>>(),
        vec![(seqs[0], trades[0].to_string()), (seqs[1], trades[2].to_string())]
    );
    assert!(inbox.try_recv().is_err(), "a republished update is dropped");
}

/// A market's row trigger appends a row per change it streams, holding its events in order: a
/// new round or a status change on its own channel, its series' and the listing's; a price,
/// volume or count change on its own channel only; anything else nothing.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_markets_change_is_one_row_of_its_events_in_order(db: PgPool) {
    api::store::series::ensure(&db, &api::app::config::default_series()).await.unwrap();
    let rows = || {
        let db = db.clone();
        async move {
            let events: Vec<(i64, String, String)> =
                sqlx::query_as("SELECT id, channel, kind FROM unpublished_events ORDER BY id, n").fetch_all(&db).await.unwrap();
            sqlx::query("DELETE FROM stream_events").execute(&db).await.unwrap();
            let mut rows: Vec<Vec<String>> = Vec::new();
            let mut last = None;
            for (id, channel, kind) in events {
                if last != Some(id) {
                    rows.push(Vec::new());
                    last = Some(id);
                }
                rows.last_mut().unwrap().push(format!("{channel} {kind}"));
            }
            rows
        }
    };
    rows().await;
    let market = open_market(&db, "open").await;
    let own = format!("market:{market} market");
    let round_and_listing = |own: &str| vec![own.to_owned(), "series:binance-btcusdt round".to_owned(), "markets market".to_owned()];
    assert_eq!(rows().await, [round_and_listing(&own)], "a new round");
    let update = |set: &str| {
        let (db, sql) = (db.clone(), format!("UPDATE markets SET {set} WHERE id = $1"));
        async move { sqlx::query(&sql).bind(market).execute(&db).await.unwrap() }
    };
    update("yes_price_ppm = 510000, trade_count = 1").await;
    assert_eq!(rows().await, [vec![own.clone()]], "a trade's change");
    update("ou_confidence_ppm = 1").await;
    assert!(rows().await.is_empty(), "nothing the stream shows");
    update("status = 'closed'").await;
    assert_eq!(rows().await, [round_and_listing(&own)], "a status change");
}

/// Balance events, a statement's at a time: one per balance inserted, one per balance updated
/// to a different amount, none for a balance written unchanged.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn balances_stream_an_event_per_change(db: PgPool) {
    let events = || {
        let db = db.clone();
        async move { sqlx::query_scalar::<_, String>("SELECT channel FROM unpublished_events WHERE kind = 'balance' ORDER BY id, n").fetch_all(&db).await.unwrap() }
    };
    let write = |wallets: &[&str], balances: &[i64], slot: i64| {
        sqlx::query(
            "INSERT INTO vault_balances (wallet, balance, slot, tx_index, updated_at)
             SELECT wallet, balance, $3, 0, now() FROM unnest($1::text[], $2::bigint[]) AS b(wallet, balance)
             ON CONFLICT (wallet) DO UPDATE SET balance = EXCLUDED.balance, slot = EXCLUDED.slot",
        )
        .bind(wallets.iter().map(|w| w.to_string()).collect::<Vec<_>>())
        .bind(balances.to_vec())
        .bind(slot)
        .execute(&db)
    };
    write(&["w1", "w2"], &[5, 7], 1).await.unwrap();
    let mut seen = events().await;
    seen.sort();
    assert_eq!(seen, ["account:w1", "account:w2"], "one event per inserted balance");
    // w1 changes, w2 is written as it was, w3 is new.
    write(&["w1", "w2", "w3"], &[6, 7, 1], 2).await.unwrap();
    let mut later = events().await.split_off(2);
    later.sort();
    assert_eq!(later, ["account:w1", "account:w3"], "none for the unchanged balance");
}

/// A publisher's batch holds at most `MAX_UPDATES` updates, so a batch republished after a crash
/// fits what replicas remember; a row holding more is published on its own.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_publish_batch_holds_at_most_max_updates_unless_one_row_holds_more(db: PgPool) {
    use api::services::stream::{self, MAX_UPDATES};

    let services = services(&db);
    api::store::series::ensure(&db, &api::app::config::default_series()).await.unwrap();
    let market = open_market(&db, "open").await;
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM stream_events").fetch_one(&db).await.unwrap();
    // Two statements of trades, a row each: the first's without a wallet, one event on the
    // market's channel; the second's by one trader, an event on the market's channel and one on
    // the trader's, each under the bound and together over it.
    let trades = |n: usize, wallet: Option<&'static str>| {
        sqlx::query(
            "INSERT INTO trades (id, market_id, wallet, side, is_buy, shares, amount, fee, yes_price_ppm)
             SELECT gen_random_uuid(), $1, $3, 'yes', true, 1, 1, 0, 500000 FROM generate_series(1, $2)",
        )
        .bind(market)
        .bind(n as i32)
        .bind(wallet)
    };
    trades(MAX_UPDATES * 3 / 5, None).execute(&db).await.unwrap();
    trades(MAX_UPDATES / 2 + 1, Some("w1")).execute(&db).await.unwrap();
    let unpublished = || {
        let db = db.clone();
        async move { sqlx::query_scalar::<_, i64>("SELECT count(*) FROM unpublished_events WHERE kind = 'trade'").fetch_one(&db).await.unwrap() }
    };
    // The markets' events and the first statement's (together under the bound), not the second.
    assert_eq!(stream::publish(&services).await.unwrap(), stream::Batch { rows: before as usize + 1, more: true }, "the second is left");
    assert_eq!(unpublished().await, 2, "the first statement's row is deleted as published");
    // The second alone, over the bound.
    assert_eq!(stream::publish(&services).await.unwrap(), stream::Batch { rows: 1, more: false });
    assert_eq!(unpublished().await, 0);
    assert_eq!(stream::publish(&services).await.unwrap(), stream::Batch { rows: 0, more: false });
}

/// A client that floods the connection with requests and never reads an answer is closed once
/// an answer has waited `SEND_TIMEOUT` for it, and its slot is given back: five more connections
/// from its address are then accepted (it does not hold a slot until the slot's expiry).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_client_that_stops_reading_is_closed_and_frees_its_slot(db: PgPool) {
    use api::http::routes::ws::{MAX_PER_IP, SEND_TIMEOUT};
    let app = spawn(state(db.clone(), &redis_url())).await;
    let mut stuck = connect(&app).await;
    // Every ping is answered (a pong, or RATE_LIMITED past 20 a second); none is read.
    let flood = tokio::spawn(async move {
        let ping = json!({"type": "ping"}).to_string();
        for sent in 0u64.. {
            if stuck.send(Message::Text(ping.clone().into())).await.is_err() {
                break;
            }
            if sent % 1_000 == 0 {
                tokio::task::yield_now().await;
            }
        }
    });
    let started = tokio::time::Instant::now();
    let deadline = started + SEND_TIMEOUT + Duration::from_secs(15);
    let url = format!("{}/v1/ws", app.base.replacen("http://", "ws://", 1));
    let mut open = Vec::new();
    while open.len() < MAX_PER_IP as usize {
        match tokio_tungstenite::connect_async(&url).await {
            Ok((mut socket, _)) => {
                assert_eq!(next(&mut socket).await["type"], "welcome");
                open.push(socket);
            }
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) if response.status() == 429 => {
                assert!(tokio::time::Instant::now() < deadline, "the stuck connection still holds its slot after {:?}", started.elapsed());
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    println!("five connections accepted {:?} after the stuck one stopped reading", started.elapsed());
    flood.abort();
}

/// Failed API keys in the WebSocket's `auth` messages are counted with the HTTP API's failed
/// keys (per client IP, up to the public limit a minute): past it, both refuse keys unread.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn failed_api_keys_on_the_websocket_are_counted_with_http_ones(db: PgPool) {
    let mut config = config();
    config.http.rate_public_per_min = 5;
    let app = spawn(state_with(config, db.clone(), &redis_url())).await;
    let mut socket = connect(&app).await;
    let unknown = || format!("fmk_{}", Uuid::new_v4().simple().to_string().repeat(2)[..48].to_owned());
    for _ in 0..5 {
        send(&mut socket, json!({"type": "auth", "api_key": unknown()})).await;
        let answer = next(&mut socket).await;
        assert_eq!((answer["type"].as_str(), answer["code"].as_str()), (Some("error"), Some("UNAUTHORIZED")), "{answer}");
    }
    send(&mut socket, json!({"type": "auth", "api_key": unknown()})).await;
    let answer = next(&mut socket).await;
    assert_eq!(answer["code"], "RATE_LIMITED", "the sixth failed key in a minute: {answer}");
    // The HTTP API refuses this address's keys too, before looking them up.
    let response = app.http.get(format!("{}/v1/me", app.base)).header("x-api-key", unknown()).send().await.unwrap();
    assert_eq!(code_of(response).await, (429, "RATE_LIMITED".into()));
}

/// An API key revoked while its WebSocket session is subscribed to `account` ends the session:
/// an `UNAUTHORIZED` error, no more account updates, and `account` needs a new `auth`.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_revoked_api_key_ends_the_private_subscriptions(db: PgPool) {
    use api::http::routes::ws::CREDENTIAL_RECHECK;
    let t = crate::trading::trading(&db, Duration::from_secs(10)).await;
    let alice = trader(&t, "5").await;
    let created: Value = t
        .app
        .http
        .post(format!("{}/v1/api-keys", t.app.base))
        .header("authorization", format!("Bearer {}", alice.token))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (key, id) = (created["data"]["key"].as_str().unwrap().to_owned(), created["data"]["id"].as_str().unwrap().to_owned());

    let mut socket = connect(&t.app).await;
    send(&mut socket, json!({"type": "auth", "api_key": key})).await;
    assert_eq!(next(&mut socket).await, json!({"type": "authenticated", "wallet": alice.wallet}));
    send(&mut socket, json!({"type": "subscribe", "channel": "account"})).await;
    assert_eq!(next(&mut socket).await["type"], "snapshot");

    let revoked =
        t.app.http.delete(format!("{}/v1/api-keys/{id}", t.app.base)).header("authorization", format!("Bearer {}", alice.token)).send().await.unwrap();
    assert_eq!(revoked.status(), 200);
    let deadline = tokio::time::Instant::now() + CREDENTIAL_RECHECK + Duration::from_secs(10);
    let ended = loop {
        let message = tokio::time::timeout_at(deadline, socket.next()).await.expect("the session ends in time").unwrap().unwrap();
        if let Message::Text(text) = message {
            let message: Value = serde_json::from_str(&text).unwrap();
            if message["type"] == "error" {
                break message;
            }
        }
    };
    assert_eq!(ended["code"], "UNAUTHORIZED", "{ended}");
    assert!(ended["message"].as_str().unwrap().contains("revoked"), "{ended}");
    send(&mut socket, json!({"type": "unsubscribe", "channel": "account"})).await;
    assert_eq!(next(&mut socket).await["code"], "NOT_FOUND", "account was unsubscribed");
    send(&mut socket, json!({"type": "subscribe", "channel": "account"})).await;
    assert_eq!(next(&mut socket).await["code"], "UNAUTHORIZED");
}

/// Snapshots (each a Postgres read) are limited per connection: a burst of `SNAPSHOT_BURST`,
/// then `SNAPSHOTS_PER_SEC`; a client that subscribes and unsubscribes in a loop is refused
/// with `RATE_LIMITED` once its burst is spent, and the connection stays.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn snapshot_reads_are_limited_per_connection(db: PgPool) {
    use api::http::routes::ws::SNAPSHOT_BURST;
    api::store::series::ensure(&db, &api::app::config::default_series()).await.unwrap();
    let app = spawn(state(db.clone(), &redis_url())).await;
    let mut socket = connect(&app).await;
    let channel = "series:binance-btcusdt";
    let mut served = 0;
    let refused = loop {
        // Ten pairs a second: within the connection's 20 messages a second.
        if served > 0 && served % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(1_050)).await;
        }
        send(&mut socket, json!({"type": "subscribe", "channel": channel})).await;
        let answer = next(&mut socket).await;
        if answer["type"] != "snapshot" {
            break answer;
        }
        served += 1;
        assert!(served < 2 * SNAPSHOT_BURST, "never refused");
        send(&mut socket, json!({"type": "unsubscribe", "channel": channel})).await;
        assert_eq!(next(&mut socket).await["type"], "unsubscribed");
    };
    assert_eq!(refused["code"], "RATE_LIMITED", "{refused}");
    assert!(served >= SNAPSHOT_BURST, "{served} served first");
    send(&mut socket, json!({"type": "ping"})).await;
    assert_eq!(next(&mut socket).await, json!({"type": "pong"}));
}
