//! The WebSocket fan-out benchmark: 5,000 subscribers of one market on loopback (five per source
//! address across 1,000 addresses of 127.0.0.0/8, the per-IP limit), the real service (its
//! stream publisher, Redis pub/sub, the hub), and `UPDATES` changes of the market's price and
//! trade count written to Postgres as the projection writes them — each fans out to every
//! subscriber. Reported: connection set-up, delivery latency from the committed change to each
//! subscriber's receipt (p50, p99, max), and messages delivered per second.
//!
//! `bash scripts/bench-ws.sh` (release build; needs Postgres and Redis).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpSocket;
use tokio_tungstenite::tungstenite::Message;

mod support;

const SUBSCRIBERS: usize = 5_000;
const PER_ADDRESS: usize = 5;
const UPDATES: usize = 100;
/// Time between two changes of the market (ms).
const SPACING_MS: usize = 20;
/// Connections being opened at once.
const OPENING: usize = 200;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let subscribers = env("WS_SUBSCRIBERS", SUBSCRIBERS);
    let updates = env("WS_UPDATES", UPDATES);
    let spacing = Duration::from_millis(env("WS_SPACING_MS", SPACING_MS) as u64);
    let service = support::serve_fresh("fm_bench_ws", |config| {
        config.venues.collectors = false;
        config.push.enabled = false;
        config.http.rate_public_per_min = u32::MAX;
        // A namespace of its own: the previous run's connection slots live on for a minute.
        config.redis.namespace = format!("fmbench-ws-{}", uuid::Uuid::new_v4().simple());
    })
    .await;
    let series = support::series(&service.db, 100_000_000).await;
    let now = Utc::now();
    let market = support::open_market(&service.db, series, 1, now, now + chrono::Duration::hours(1), now + chrono::Duration::hours(2), 100_000_000).await;
    let port: u16 = service.base.rsplit(':').next().unwrap().parse().unwrap();
    let url = format!("ws://127.0.0.1:{port}/v1/ws");
    let channel = format!("market:{market}");

    // When each change was committed, by its price (micros since `start`), and what arrived.
    let start = Instant::now();
    let sent: Arc<Vec<AtomicU64>> = Arc::new((0..updates).map(|_| AtomicU64::new(0)).collect());
    let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<Vec<(usize, u64)>>(subscribers);
    let opening = Arc::new(tokio::sync::Semaphore::new(OPENING));
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(subscribers);
    let connecting = Instant::now();
    for i in 0..subscribers {
        let address = i / PER_ADDRESS;
        let source = Ipv4Addr::new(127, 1 + (address / 62_500) as u8, (address / 250 % 250) as u8, (address % 250 + 1) as u8);
        let (url, channel, done_tx, ready_tx, opening) = (url.clone(), channel.clone(), done_tx.clone(), ready_tx.clone(), opening.clone());
        tokio::spawn(async move {
            let permit = opening.acquire_owned().await.unwrap();
            let socket = TcpSocket::new_v4().unwrap();
            socket.bind(SocketAddr::new(source.into(), 0)).unwrap();
            let stream = socket.connect(format!("127.0.0.1:{port}").parse().unwrap()).await.unwrap();
            let Ok((mut ws, _)) = tokio_tungstenite::client_async(url, stream).await else {
                eprintln!("a subscriber was refused; stopping");
                std::process::exit(1);
            };
            ws.send(Message::Text(json!({"type": "subscribe", "channel": channel}).to_string().into())).await.unwrap();
            // Welcome, then the snapshot.
            loop {
                let Some(Ok(Message::Text(text))) = ws.next().await else { panic!("closed before the snapshot") };
                if serde_json::from_str::<Value>(&text).unwrap()["type"] == "snapshot" {
                    break;
                }
            }
            drop(permit);
            ready_tx.send(()).await.unwrap();
            let mut received = Vec::with_capacity(updates);
            while received.len() < updates {
                match tokio::time::timeout(Duration::from_secs(30), ws.next()).await {
                    Ok(Some(Ok(Message::Text(text)))) => {
                        let at = start.elapsed().as_micros() as u64;
                        // Only the trade count is read (a full parse of every message would
                        // take the service's CPU on this 2-core machine).
                        if let Some(count) = trade_count(&text) {
                            received.push((count - 1, at));
                        }
                    }
                    Ok(Some(Ok(_))) => {}
                    other => {
                        eprintln!("a subscriber stopped after {} updates: {other:?}", received.len());
                        break;
                    }
                }
            }
            done_tx.send(received).await.unwrap();
        });
    }
    drop((done_tx, ready_tx));
    for _ in 0..subscribers {
        ready_rx.recv().await.unwrap();
    }
    let connected = connecting.elapsed();
    println!(
        "{subscribers} subscribers of one market from {} source addresses, subscribed in {:.1} s",
        subscribers.div_ceil(PER_ADDRESS),
        connected.as_secs_f64()
    );

    // The changes, as the projection makes them on each trade.
    let first = Instant::now();
    for k in 0..updates {
        // Counted from before the statement: the latency includes the commit.
        sent[k].store(start.elapsed().as_micros() as u64, Ordering::Relaxed);
        sqlx::query("UPDATE markets SET yes_price_ppm = $2, trade_count = $3 WHERE id = $1")
            .bind(market)
            .bind(400_000 + k as i32)
            .bind(k as i32 + 1)
            .execute(&service.db)
            .await
            .unwrap();
        tokio::time::sleep(spacing).await;
    }
    let mut latencies = Vec::with_capacity(subscribers * updates);
    let mut last = 0;
    let mut short = Vec::new();
    while let Some(received) = done_rx.recv().await {
        if received.len() < updates {
            short.push(received.len());
        }
        for (k, at) in received {
            latencies.push(at.saturating_sub(sent[k].load(Ordering::Relaxed)));
            last = last.max(at);
        }
    }
    let expected = subscribers * updates;
    if !short.is_empty() {
        println!("{} subscribers got fewer than {updates} updates: {short:?}", short.len());
    }
    latencies.sort_unstable();
    let pct = |p: f64| support::quantile(&latencies, p) as f64 / 1000.0;
    let window = Duration::from_micros(last) - (first - start);
    println!("{updates} changes {} ms apart: {} of {expected} messages delivered", spacing.as_millis(), latencies.len());
    println!(
        "delivery latency min {:.1} ms, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {:.0} messages/s over {:.2} s",
        pct(0.0),
        pct(0.5),
        pct(0.99),
        pct(1.0),
        latencies.len() as f64 / window.as_secs_f64(),
        window.as_secs_f64()
    );
}

/// The `trade_count` of a market update.
fn trade_count(text: &str) -> Option<usize> {
    if !text.contains(r#""event":"market""#) {
        return None;
    }
    let rest = &text[text.find(r#""trade_count":"#)? + 14..];
    rest[..rest.find(|c: char| !c.is_ascii_digit())?].parse().ok()
}
