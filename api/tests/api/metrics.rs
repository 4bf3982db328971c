//! Metrics recorded in process (the binary test scrapes the admin address): rate-limit refusals
//! by bucket, the chain's send-and-confirm latency, and the one-at-a-time turns a trade passes.

use std::time::Duration;

use sqlx::PgPool;

use crate::helpers::*;
use crate::settlement::{buy, trader};
use crate::trading::{open_market, trading};

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn refusals_and_chain_latency_are_recorded(db: PgPool) {
    let metrics = api::app::metrics::recorder();
    let mut strict = config();
    strict.http.rate_public_per_min = 1;
    let app = spawn(state_with(strict, db.clone(), &redis_url())).await;
    assert_eq!(app.get("/v1/series").await.status(), 200);
    assert_eq!(app.get("/v1/series").await.status(), 429);
    let t = trading(&db, Duration::from_secs(10)).await;
    let alice = trader(&t, "20").await;
    buy(&t, &alice, open_market(&db, "open").await, "yes", "5").await;

    let shown = metrics.render();
    let count = |prefix: &str| -> u64 {
        shown.lines().find(|l| l.starts_with(prefix)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) as u64
    };
    assert!(count(r#"fm_rate_limited_total{bucket="ip"}"#) >= 1, "{shown}");
    assert!(count(r#"fm_chain_send_confirm_seconds_count{outcome="confirmed"}"#) >= 2, "the faucet and the trade: {shown}");
    assert!(count(r#"fm_http_requests_total{method="GET",route="/v1/series",status="429"}"#) >= 1, "{shown}");
    assert!(count(r#"fm_http_requests_total{method="POST",route="/v1/markets/{id}/trade",status="200"}"#) >= 1, "{shown}");
    // The trade's read, its ledger write and its projection each went through a group queue's
    // turn, and its landing through the bank's.
    for queue in ["trade_reads", "chain_ledger", "projection"] {
        assert!(count(&format!(r#"fm_group_size_count{{queue="{queue}"}}"#)) >= 1, "{queue}: {shown}");
        assert!(count(&format!(r#"fm_group_work_seconds_count{{queue="{queue}"}}"#)) >= 1, "{queue}: {shown}");
    }
    assert!(count(r#"fm_chain_turn_seconds_count{held_for="transaction"}"#) >= 2, "the faucet and the trade: {shown}");
}
