//! Wiring: state from configuration, the router with its middleware, and the server with
//! graceful shutdown.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;

use indexer::chain::embedded::{EmbeddedError, GenesisParams};
use indexer::chain::{AnyChain, EmbeddedChain, RpcChain};
use indexer::follow::Indexer;
use indexer::projection::Projector;
use solana_signer::Signer;
use sqlx::PgPool;

use crate::cache::Redis;
use crate::config::ChainConfig;
use crate::onchain::OnChain;
use crate::exchanges::{Exchange, ExchangeClient};
use crate::markets::{scheduler, series};
use crate::{AppState, Config, db, middleware, routes};

/// The whole HTTP application for `state`.
pub fn app(state: AppState) -> Router {
    let timeout = state.config.request_timeout;
    middleware::apply(routes::router(state), timeout)
}

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("postgres: {0}")]
    Postgres(#[from] sqlx::Error),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("chain: {0}")]
    Chain(#[from] EmbeddedError),
    #[error("chain: {0}")]
    OnChain(#[from] crate::onchain::OnChainError),
    #[error("keys: {0}")]
    Keys(String),
}

/// A bound, ready-to-serve service, with its background workers.
pub struct Application {
    listener: TcpListener,
    router: Router,
    chain: AnyChain,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Application {
    /// Connects to Postgres (waiting for it up to 30 s, creating the database and applying
    /// migrations when configured), prepares Redis and binds the listener.
    pub async fn build(config: Config) -> Result<Application, StartupError> {
        let db = db::pool(&config.database_url, config.db_max_connections, Duration::from_secs(3))?;
        if config.run_migrations {
            let mut attempt = 0;
            while let Err(e) = db::prepare(&config.database_url, &db).await {
                attempt += 1;
                if attempt == 30 {
                    return Err(e.into());
                }
                tracing::warn!(error = %e, attempt, "postgres not ready, retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        let redis = Redis::new(&config.redis_url, config.health_timeout)?;
        let listener = TcpListener::bind(config.bind_addr)
            .await
            .map_err(|source| StartupError::Bind { addr: config.bind_addr, source })?;
        let mut workers = if config.scheduler_enabled { start_scheduler(&config, &db).await? } else { Vec::new() };
        let chain = open_chain(&config, &db).await?;
        if config.indexer_enabled {
            workers.push(start_indexer(&chain, &db, config.indexer_period));
        }
        let mut state = AppState::new(config, db.clone(), redis);
        match &chain {
            AnyChain::Embedded(embedded) => state = state.with_onchain(OnChain::embedded(embedded, db).await?),
            AnyChain::Rpc(_) => match &state.config.chain {
                ChainConfig::Rpc { keys: Some(files), .. } => {
                    let keys = files.load().map_err(StartupError::Keys)?;
                    state = state.with_onchain(OnChain::connect(chain.clone(), keys, db).await?);
                }
                _ => tracing::warn!("no operator keys (FM_OPERATOR_KEYPAIR, FM_AUTHORITY_KEYPAIR, FM_USDC_MINT): trading and co-signing are off"),
            },
        }
        Ok(Application { listener, router: app(state), chain, workers })
    }

    /// The chain the service runs on (benchmarks and tests drive it directly).
    pub fn chain(&self) -> &AnyChain {
        &self.chain
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// Serves until `shutdown` completes, then finishes in-flight requests and returns.
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
        tracing::info!(addr = %self.local_addr(), "listening");
        let served = axum::serve(self.listener, self.router.into_make_service_with_connect_info::<SocketAddr>())
            .with_graceful_shutdown(shutdown)
            .await;
        self.workers.iter().for_each(|w| w.abort());
        served
    }
}

/// The configured chain; the embedded one is opened from (or created in) Postgres.
async fn open_chain(config: &Config, db: &PgPool) -> Result<AnyChain, StartupError> {
    Ok(match &config.chain {
        ChainConfig::Embedded => {
            let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await?;
            tracing::info!(mint = %chain.mint(), operator = %chain.keys().operator.pubkey(), "embedded chain ready");
            AnyChain::Embedded(chain)
        }
        ChainConfig::Rpc { url, .. } => AnyChain::Rpc(RpcChain::new(url, Duration::from_secs(30))),
    })
}

/// The indexer, following the program on `chain` into Postgres. Two replicas following at
/// once would be harmless (every event is recorded once), only wasteful.
fn start_indexer(chain: &AnyChain, db: &PgPool, period: Duration) -> tokio::task::JoinHandle<()> {
    let program = funding_market::ID.to_string();
    let indexer = Indexer::new(chain.clone(), Projector::new(db.clone(), &funding_market::ID), &program);
    let confirmations = match chain {
        AnyChain::Embedded(c) => Some(c.subscribe()),
        AnyChain::Rpc(_) => None,
    };
    tokio::spawn(async move { indexer.follow(period, confirmations).await })
}

/// Seeds the default series and runs the scheduler against the configured venues; venues
/// without a URL are served by the simulated exchange, started here on a free local port.
async fn start_scheduler(config: &Config, db: &sqlx::PgPool) -> Result<Vec<tokio::task::JoinHandle<()>>, StartupError> {
    let mut workers = Vec::new();
    series::ensure(db, &config.series).await?;
    let urls = &config.exchange_urls;
    let configured = [
        (Exchange::Binance, &urls.binance),
        (Exchange::Bybit, &urls.bybit),
        (Exchange::Okx, &urls.okx),
        (Exchange::Hyperliquid, &urls.hyperliquid),
    ];
    let simulated = if configured.iter().any(|(_, url)| url.is_none()) {
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let bind_error = |source| StartupError::Bind { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        let base = format!("http://{}", listener.local_addr().map_err(bind_error)?);
        let model = sim_exchange::Model::new(42, series::simulated(&config.series));
        let sim = std::sync::Arc::new(sim_exchange::Sim::new(model));
        workers.push(tokio::spawn(async move {
            let _ = axum::serve(listener, sim_exchange::router(sim)).await;
        }));
        tracing::info!(%base, "simulated exchange serving the venues without a configured URL");
        Some(base)
    } else {
        None
    };
    let venues = configured
        .iter()
        .map(|(exchange, url)| {
            let base = (*url).clone().or_else(|| simulated.clone()).expect("a simulated base when a URL is missing");
            ExchangeClient::new(*exchange, &base, Duration::from_secs(10))
        })
        .collect();
    let scheduler = scheduler::Scheduler::new(db.clone(), venues, config.round_horizon);
    workers.push(scheduler::spawn(scheduler, config.scheduler_period));
    Ok(workers)
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = terminate => {} }
    tracing::info!("shutdown signal received, draining requests");
}
