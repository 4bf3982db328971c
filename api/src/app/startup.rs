//! Wiring: the configured roles of this process (`FM_ROLES`), their state, workers under one
//! supervisor, the HTTP server with graceful shutdown.

use std::net::SocketAddr;
use std::time::Duration;

use crate::chain::AnyChain;
use axum::Router;
use chain_client::RpcChain;
use indexer::projection::Projector;
use localnet::EmbeddedChain;
use localnet::{EmbeddedError, GenesisParams, ProgramCode};
use solana_signer::Signer;
use sqlx::PgPool;
use tokio::net::TcpListener;

use super::config::{ChainConfig, Config, ProgramSource};
use super::state::AppState;
use crate::chain::{OnChain, OnChainError, ServiceKeys};
use crate::domain::series::SeriesSpec;
use crate::exchanges::{Exchange, ExchangeClient, RateSource};
use crate::http;
use crate::services::collector::Collector;
use crate::services::oracle::Oracle;
use crate::services::push::PushSender;
use crate::services::scheduler::Scheduler;
use crate::store::{self, cache::Redis};
use crate::workers::Supervisor;
use crate::workers::collectors::CollectorWorker;
use crate::workers::indexer::IndexerWorker;
use crate::workers::money::{DepositWorker, WithdrawalWorker};
use crate::workers::oracle::OracleWorker;
use crate::workers::push::PushWorker;
use crate::workers::scheduler::SchedulerWorker;
use crate::workers::settlement::SettlementWorker;
use crate::workers::stream::StreamWorker;

/// How long shutdown waits for workers to finish the job in hand.
const WORKER_GRACE: Duration = Duration::from_secs(20);

/// The whole HTTP application for `state`.
pub fn app(state: AppState) -> Router {
    http::app(state)
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
    OnChain(#[from] OnChainError),
    #[error("keys: {0}")]
    Keys(String),
    #[error("FM_PROGRAM_SO: {0}")]
    ProgramBinary(String),
}

/// A process ready to run its roles: the bound listener (role `serve`) and the supervised
/// workers (roles `workers` and `indexer`).
pub struct Application {
    /// Role `serve`: the bound listener and what it serves.
    server: Option<(TcpListener, Router)>,
    chain: Option<AnyChain>,
    supervisor: Supervisor,
    /// The admin listener serving `/metrics` (`FM_METRICS_ADDR`), and the pool it samples.
    metrics: Option<(TcpListener, PgPool)>,
    /// The embedded chain's PubSub WebSocket (`FM_PUBSUB_ADDR`), with role `serve`.
    pubsub: Option<(TcpListener, Router)>,
}

/// How often the settlement crank looks for rounds to pay out.
const CRANK_PERIOD: Duration = Duration::from_secs(2);
/// How often the oracle looks for rounds past settlement (each round also waits out its own
/// backoff between attempts).
const ORACLE_PERIOD: Duration = Duration::from_secs(1);
/// A venue's request (each retried by the adapters' policy).
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest the stream publisher waits without a notification.
const STREAM_PERIOD: Duration = Duration::from_secs(1);
/// A push service's answer to one message.
const PUSH_TIMEOUT: Duration = Duration::from_secs(15);
/// Hosts the embedded simulated exchange serves: three history sources per venue, so the
/// oracle settles with one of them wrong or missing.
const SIMULATED_HOSTS: usize = 3;

impl Application {
    /// Connects to Postgres (waiting for it up to 30 s, creating the database and applying
    /// migrations when configured), prepares Redis, opens the chain where a role needs it,
    /// starts the workers and binds the listener.
    pub async fn build(config: Config) -> Result<Application, StartupError> {
        let db = store::pool(&config.database.url, config.database.max_connections, Duration::from_secs(3))?;
        if config.database.run_migrations {
            let mut attempt = 0;
            while let Err(e) = store::prepare(&config.database.url, &db).await {
                attempt += 1;
                if attempt == 30 {
                    return Err(e.into());
                }
                tracing::warn!(error = %e, attempt, "postgres not ready, retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        let roles = config.server.roles;
        let redis = Redis::new(&config.redis.url, config.http.health_timeout, &config.redis.namespace)?;
        let metrics = match config.server.metrics_addr {
            Some(addr) => {
                let listener = listen(addr).map_err(|source| StartupError::Bind { addr, source })?;
                super::metrics::recorder();
                Some((listener, db.clone()))
            }
            None => None,
        };
        let listener = match roles.serve {
            true => Some(listen(config.server.bind_addr).map_err(|source| StartupError::Bind { addr: config.server.bind_addr, source })?),
            false => None,
        };
        // The chain is opened by the roles that use it: the API (trading), the indexer, and the
        // workers' settlement crank on a cluster (the embedded chain has one writer process,
        // the one serving or indexing it; its crank runs there when that process has workers).
        let crank_on_cluster = roles.workers && matches!(config.chain, ChainConfig::Rpc { .. });
        let chain = if roles.serve || roles.indexer || crank_on_cluster { Some(open_chain(&config, &db).await?) } else { None };
        // The use cases, for the routes and the workers (an indexer-only process needs neither).
        let state = match roles.serve || roles.workers {
            true => Some(serving_state(&config, db.clone(), redis, chain.as_ref()).await?),
            false => None,
        };
        let server = listener.zip(state.clone()).map(|(listener, state)| (listener, app(state)));
        // The local chain's node answers subscriptions beside its /rpc, as a validator does.
        let pubsub = match (&chain, config.server.pubsub_addr) {
            (Some(AnyChain::Embedded(embedded)), Some(addr)) if roles.serve => {
                let listener = listen(addr).map_err(|source| StartupError::Bind { addr, source })?;
                Some((listener, localnet::pubsub::PubSub::start(embedded.clone()).await.router()))
            }
            _ => None,
        };
        // Workers start last, once the chain and the server are ready.
        let supervisor = Supervisor::new(&config.database.url);
        // The oracle and the crank end rounds on chain: they run where the service has its keys.
        if let Some(services) = state.as_ref().map(|s| s.services.clone()).filter(|_| roles.workers) {
            supervisor.spawn(StreamWorker { services, period: STREAM_PERIOD });
        }
        if let Some(services) = state.as_ref().map(|s| s.services.clone()).filter(|_| roles.workers && config.push.enabled) {
            supervisor.spawn(PushWorker { services, sender: PushSender::new(PUSH_TIMEOUT, config.push.endpoints.clone()), period: config.push.period });
        }
        // The indexer shares the projector of the service's trades (see `IndexerWorker::new`).
        let projector = state.as_ref().and_then(|s| s.services.onchain.as_ref()).map(|o| o.projector().clone());
        let settling = state.map(|s| s.services.clone()).filter(|s| roles.workers && s.onchain.is_some());
        let scheduling = roles.workers && config.workers.scheduler;
        let collecting = roles.workers && config.venues.collectors;
        // The venues, for the jobs that read them: one client per host, shared by those jobs.
        let venues = match scheduling || collecting || settling.is_some() {
            true => venue_clients(&config, &supervisor).await?,
            false => Vec::new(),
        };
        let first_hosts: Vec<ExchangeClient> = venues.iter().map(|(_, hosts)| hosts[0].clone()).collect();
        if scheduling {
            store::series::ensure(&db, &config.series).await?;
            let scheduler = Scheduler::new(db.clone(), first_hosts.clone(), config.workers.round_horizon);
            supervisor.spawn(SchedulerWorker { scheduler, period: config.workers.scheduler_period });
        }
        if collecting {
            // Interval changes of configured series are replanned at once by a scheduler of the
            // collectors' own (idempotent beside the scheduler worker's: rounds are unique).
            let scheduler = scheduling.then(|| std::sync::Arc::new(Scheduler::new(db.clone(), first_hosts.clone(), config.workers.round_horizon)));
            let retention = chrono::Duration::from_std(config.venues.crowd_retention).unwrap_or(chrono::Duration::days(30));
            for venue in &first_hosts {
                let collector = Collector::new(db.clone(), venue.clone(), scheduler.clone(), retention);
                supervisor.spawn(CollectorWorker { collector, intervals_period: config.venues.intervals_period, crowd_period: config.venues.crowd_period });
            }
        }
        if let Some(services) = settling {
            let sources = venues.iter().map(|(exchange, hosts)| (*exchange, RateSource::for_venue(hosts)));
            let oracle = Oracle::new(sources, config.workers.oracle_deadline);
            supervisor.spawn(OracleWorker { oracle, services: services.clone(), period: ORACLE_PERIOD });
            supervisor.spawn(SettlementWorker { services: services.clone(), period: CRANK_PERIOD });
            supervisor.spawn(DepositWorker { services: services.clone(), period: config.workers.deposit_reconcile_period });
            supervisor.spawn(WithdrawalWorker { services, period: config.workers.withdrawal_period });
        }
        if let (true, Some(chain)) = (roles.indexer, &chain) {
            let projector = projector.unwrap_or_else(|| Projector::new(db, &funding_market::ID));
            supervisor.spawn(IndexerWorker::new(chain.clone(), projector, config.workers.indexer_period));
        }
        tracing::info!(serve = roles.serve, workers = roles.workers, indexer = roles.indexer, "roles");
        Ok(Application { server, chain, supervisor, metrics, pubsub })
    }

    /// The chain the process runs on, if a role opened one (benchmarks and tests drive it).
    pub fn chain(&self) -> Option<&AnyChain> {
        self.chain.as_ref()
    }

    /// The HTTP address (role `serve`).
    /// The admin address serving `/metrics`, when configured.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|(l, _)| l.local_addr().expect("a bound listener has an address"))
    }

    /// The embedded chain's PubSub address, when it is served.
    pub fn pubsub_addr(&self) -> Option<SocketAddr> {
        self.pubsub.as_ref().map(|(l, _)| l.local_addr().expect("a bound listener has an address"))
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.server.as_ref().map(|(l, _)| l.local_addr().expect("a bound listener has an address"))
    }

    /// Runs until `shutdown` completes: then finishes in-flight requests, lets every worker
    /// finish its current job, and returns.
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
        let Application { server, supervisor, metrics, pubsub, .. } = self;
        if let Some((listener, db)) = metrics {
            tracing::info!(addr = %listener.local_addr()?, "metrics at /metrics");
            tokio::spawn(super::metrics::serve(listener, db));
        }
        if let Some((listener, router)) = pubsub {
            tracing::info!(addr = %listener.local_addr()?, "chain pubsub (WebSocket)");
            tokio::spawn(async move { axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await });
        }
        let served = match server {
            Some((listener, router)) => {
                tracing::info!(addr = %listener.local_addr()?, "listening");
                axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).with_graceful_shutdown(shutdown).await
            }
            None => {
                shutdown.await;
                Ok(())
            }
        };
        supervisor.shutdown(WORKER_GRACE).await;
        served
    }
}

/// The state the API serves: the use cases, with the chain they trade on where the service has
/// its keys there (always on the embedded chain).
async fn serving_state(config: &Config, db: PgPool, redis: Redis, chain: Option<&AnyChain>) -> Result<AppState, StartupError> {
    let state = AppState::new(config, db.clone(), redis);
    Ok(match (chain, &config.chain) {
        (Some(AnyChain::Embedded(embedded)), _) => state.with_onchain(OnChain::embedded(embedded, db).await?),
        (Some(chain), ChainConfig::Rpc { keys: Some(files), .. }) => {
            let keys = ServiceKeys::load(&files.operator, &files.authority, files.oracle.as_deref(), &files.usdc_mint).map_err(StartupError::Keys)?;
            state.with_onchain(OnChain::connect(chain.clone(), keys, db).await?)
        }
        _ => {
            tracing::warn!("no operator keys (FM_OPERATOR_KEYPAIR, FM_AUTHORITY_KEYPAIR, FM_USDC_MINT): trading and co-signing are off");
            state
        }
    })
}

/// The configured chain; the embedded one is opened from (or created in) Postgres.
async fn open_chain(config: &Config, db: &PgPool) -> Result<AnyChain, StartupError> {
    Ok(match &config.chain {
        ChainConfig::Embedded { program } => {
            let path = match program {
                ProgramSource::Auto => Some(std::path::PathBuf::from(ProgramSource::BUILT)).filter(|path| path.is_file()),
                ProgramSource::Native => None,
                ProgramSource::Sbf(path) => Some(path.clone()),
            };
            let program = match &path {
                None => ProgramCode::Native,
                Some(path) => ProgramCode::Sbf(std::fs::read(path).map_err(|e| StartupError::ProgramBinary(format!("{}: {e}", path.display())))?.into()),
            };
            let chain = EmbeddedChain::open(db.clone(), &GenesisParams { program, ..GenesisParams::default() }).await?;
            let program = path.map_or_else(|| "native".to_owned(), |path| path.display().to_string());
            tracing::info!(mint = %chain.mint(), operator = %chain.keys().operator.pubkey(), %program, "embedded chain ready");
            AnyChain::Embedded(chain)
        }
        ChainConfig::Rpc { url, .. } => AnyChain::Rpc(RpcChain::new(url, Duration::from_secs(30))),
    })
}

/// A client for each host of each venue, in the configured order (never empty): a venue without
/// a configured URL is served by the simulated exchange, started here on free local ports (two
/// hosts), listing the configured series among a universe of `FM_SIM_PERPS_PER_VENUE` perps a
/// venue.
async fn venue_clients(config: &Config, supervisor: &Supervisor) -> Result<Vec<(Exchange, Vec<ExchangeClient>)>, StartupError> {
    let simulated = match Exchange::ALL.iter().any(|e| config.venues.urls.of(*e).is_empty()) {
        true => start_simulator(&config.series, config.venues.sim_perps, supervisor).await?,
        false => Vec::new(),
    };
    Ok(Exchange::ALL
        .into_iter()
        .map(|exchange| {
            let urls = match config.venues.urls.of(exchange) {
                [] => &simulated,
                configured => configured,
            };
            // A real venue's host is paced within its published limits; the simulator is not.
            let is_simulated = config.venues.urls.of(exchange).is_empty();
            let client = |url: &String| match is_simulated {
                true => ExchangeClient::new(exchange, url, EXCHANGE_TIMEOUT),
                false => ExchangeClient::new(exchange, url, EXCHANGE_TIMEOUT).paced(config.venues.rate_share),
            };
            (exchange, urls.iter().map(client).collect())
        })
        .collect())
}

/// The simulated exchange on free local ports, one per host; their base URLs. It stops with
/// the process.
async fn start_simulator(series: &[SeriesSpec], per_venue: usize, supervisor: &Supervisor) -> Result<Vec<String>, StartupError> {
    let symbols = series.iter().map(|s| sim_exchange::SimSymbol::new(s.exchange.id(), &s.symbol, s.interval_minutes as i64)).collect();
    let sim = std::sync::Arc::new(sim_exchange::Sim::new(sim_exchange::Model::with_universe(42, symbols, per_venue)));
    let mut bases = Vec::new();
    for host in 0..SIMULATED_HOSTS {
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let bind_error = |source| StartupError::Bind { addr, source };
        let listener = listen(addr).map_err(bind_error)?;
        bases.push(format!("http://{}", listener.local_addr().map_err(bind_error)?));
        let (router, stop) = (sim_exchange::router_for(sim.clone(), host), supervisor.cancellation());
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).with_graceful_shutdown(stop.cancelled_owned()).await;
        });
    }
    tracing::info!(?bases, "simulated exchange serving the venues without a configured URL");
    Ok(bases)
}

/// Connections the kernel holds for a listener until the server accepts them. The standard
/// library's and tokio's `bind` ask for 128: a burst of more new connections than that (clients
/// arriving together at a settlement, a reconnecting fleet) while the accepting task waits for a
/// core overflows the queue, and Linux then answers with SYN cookies it cannot complete, a reset
/// for each client (`nstat`'s `TcpExtListenOverflows`, `TcpExtSyncookiesFailed`). The kernel
/// caps the figure at `net.core.somaxconn` (4096 by default since Linux 5.4).
const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `addr` whose queue of connections not yet accepted is `LISTEN_BACKLOG` long,
/// the address reusable at once after a restart (as tokio's `TcpListener::bind` sets it).
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// 500 clients connect at once to a listener that accepts none of them yet (a server busy
    /// elsewhere): every handshake completes, where a queue of 128 leaves the rest retrying
    /// their SYNs until the server catches up, or reset.
    #[tokio::test]
    async fn a_burst_of_connections_waits_in_the_listeners_queue() {
        let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn").map_or(4096, |s| s.trim().parse().unwrap());
        let clients = somaxconn.min(500);
        assert!(clients > 128, "net.core.somaxconn is {somaxconn}: the kernel caps every listener's queue there");
        let listener = listen(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        let addr = listener.local_addr().unwrap();
        let connects: Vec<_> = (0..clients).map(|_| tokio::spawn(tokio::net::TcpStream::connect(addr))).collect();
        for connect in connects {
            let stream = tokio::time::timeout(Duration::from_secs(10), connect).await.expect("a client's handshake is held waiting");
            stream.unwrap().unwrap();
        }
    }
}
