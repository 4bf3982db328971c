//! `funding-indexer`: follows the program on a cluster (`FM_RPC_URL`, confirmed commitment) into
//! Postgres (`DATABASE_URL`), for deployments that run the indexer apart from the API. Locally
//! the API runs the same indexer in-process (`FM_INDEXER=true`), which is also the only way to
//! follow the embedded chain (its bank lives in the API process).
//!
//! Environment: `DATABASE_URL` (default `postgres://postgres:postgres@127.0.0.1:5432/funding_market`),
//! `FM_RPC_URL` (required), `FM_INDEXER_PERIOD_MS` (default 1000), `RUST_LOG` (default info).

use std::time::Duration;

use chain_client::RpcChain;
use indexer::follow::Indexer;
use indexer::projection::Projector;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().json().with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into())).init();
    let database_url = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/funding_market".into());
    let rpc_url = std::env::var("FM_RPC_URL").ok().filter(|u| u.starts_with("http://") || u.starts_with("https://"));
    let rpc_url = rpc_url.ok_or("FM_RPC_URL is required: the cluster's JSON-RPC endpoint, http(s)://…")?;
    let period: u64 =
        std::env::var("FM_INDEXER_PERIOD_MS").unwrap_or_else(|_| "1000".into()).parse().map_err(|_| "FM_INDEXER_PERIOD_MS must be a number of milliseconds")?;

    let db = indexer::pool_options().max_connections(4).connect(&database_url).await?;
    indexer::MIGRATOR.run(&db).await?;
    let program = funding_market::ID.to_string();
    let indexer = Indexer::new(RpcChain::new(&rpc_url, Duration::from_secs(30)), Projector::new(db, &funding_market::ID), &program);
    tracing::info!(rpc = %rpc_url, %program, "following");
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("stopping after the pass in flight");
    };
    indexer.follow(Duration::from_millis(period.max(1)), None, stop).await;
    Ok(())
}
