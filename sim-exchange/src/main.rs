//! `sim-exchange`: serves the simulated venues on `SIM_BIND_ADDR` (default 127.0.0.1:8090),
//! seeded by `SIM_SEED` (default 42), listing `SIM_PERPS_PER_VENUE` perps a venue (default 500).

use std::sync::Arc;

use sim_exchange::{Model, Sim, default_symbols, router};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::var("SIM_BIND_ADDR").unwrap_or_else(|_| "127.0.0.1:8090".into());
    let seed = std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(42);
    let per_venue = std::env::var("SIM_PERPS_PER_VENUE").ok().and_then(|s| s.parse().ok()).unwrap_or(500);
    let sim = Arc::new(Sim::new(Model::with_universe(seed, default_symbols(), per_venue)));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("sim-exchange listening on {addr} (seed {seed})");
    axum::serve(listener, router(sim)).await
}
