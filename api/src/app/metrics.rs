//! Prometheus metrics: the process-wide recorder, and `/metrics` on the admin listener
//! (`FM_METRICS_ADDR`, apart from the public API so it is never exposed with it).
//!
//! What is recorded, and where: requests by route and status with latency histograms
//! (`http::middleware`), rate-limit refusals (`http::ratelimit`), each worker's passes and
//! failures (`workers`), chain send-and-confirm latency (`chain_client`), the embedded
//! chain's bank turn (`fm_chain_turn_seconds`) and every group queue's group sizes and work
//! (`fm_group_size`, `fm_group_work_seconds`: `group_commit`); sampled at each scrape
//! here: the database pool's connections.

use std::sync::OnceLock;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use sqlx::PgPool;
use tokio::net::TcpListener;

/// Latency buckets (seconds): 1 ms to 30 s.
const SECONDS_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];
/// Buckets of the one-at-a-time turns (seconds): a bank turn takes a fraction of a millisecond, a
/// group's a few.
const TURN_BUCKETS: &[f64] = &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0];
/// Buckets of group sizes (items).
const GROUP_SIZE_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// How often recorded histogram samples are folded into their buckets. The recorder keeps every
/// sample until then (a scrape folds them too): without it, a process nobody scrapes would hold
/// every request's latency.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The process's recorder, installed on first use (metrics are process-wide), with a thread of
/// its own folding its samples every `UPKEEP_EVERY`.
pub fn recorder() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let handle = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("fm_chain_turn_seconds".into()), TURN_BUCKETS))
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("fm_group_work_seconds".into()), TURN_BUCKETS))
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("fm_group_size".into()), GROUP_SIZE_BUCKETS))
            .expect("buckets are not empty")
            .install_recorder()
            .expect("no other metrics recorder is installed");
        let upkeep = handle.clone();
        std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(UPKEEP_EVERY);
                    upkeep.run_upkeep();
                }
            })
            .expect("the metrics upkeep thread starts");
        handle
    })
}

/// Serves `GET /metrics` on `listener` until the process ends.
pub async fn serve(listener: TcpListener, db: PgPool) {
    recorder();
    let app = Router::new().route("/metrics", get(metrics)).with_state(db);
    if let Err(e) = axum::serve(listener, app).await {
        tracing::error!(error = %e, "the metrics listener stopped");
    }
}

async fn metrics(State(db): State<PgPool>) -> String {
    let handle = recorder();
    handle.run_upkeep();
    let (size, idle) = (db.size(), db.num_idle() as u32);
    metrics::gauge!("fm_db_pool_connections", "state" => "idle").set(f64::from(idle));
    metrics::gauge!("fm_db_pool_connections", "state" => "in_use").set(f64::from(size.saturating_sub(idle)));
    metrics::gauge!("fm_db_pool_max_connections").set(f64::from(db.options().get_max_connections()));
    handle.render()
}
