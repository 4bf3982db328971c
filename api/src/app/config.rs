//! Configuration from environment variables, in sections by concern (server, database, Redis,
//! HTTP, auth, operator budgets, workers, venues, push, series, chain), each with a default that
//! runs the service locally (see `.env.example` at the workspace root for the documented list).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ipnet::IpNet;

use crate::domain::exchange::Exchange;
use crate::domain::push::EndpointPolicy;
use crate::domain::series::{self, SeriesSpec};
use crate::exchanges::RateSource;
use crate::http::HttpSettings;
use crate::services::SignInSettings;

/// Everything the service reads from its environment, by concern.
#[derive(Clone, Debug)]
pub struct Config {
    pub server: ServerSettings,
    pub database: DatabaseSettings,
    pub redis: RedisSettings,
    /// `FM_REQUEST_TIMEOUT_MS` (a request still running after this answers 500; default 10000),
    /// `FM_HEALTH_TIMEOUT_MS` (how long `/health` waits for each component; 2000),
    /// `FM_RATE_PUBLIC_PER_MIN` (per IP without credentials; 60), `FM_RATE_AUTH_PER_MIN` (per
    /// API key, per user for tokens; 300), `FM_RATE_TRADE_PER_SEC` (trading requests per user;
    /// 10), `FM_RATE_RPC_PER_SEC` (per client IP to the embedded chain's `/rpc`; 50),
    /// `FM_RATE_SYNC_MS` (how often each replica reconciles its rate-limit counts with Redis;
    /// 100), `FM_TRUSTED_PROXIES` (proxy addresses or CIDR ranges whose `X-Forwarded-For` is
    /// believed; none), `FM_DEPOSIT_WEBHOOK_AUTH` (the `Authorization` value deposit webhooks
    /// carry; unset: every delivery refused), `FM_CORS_ORIGINS` (origins browser front ends may
    /// call from, or `*`; `*`).
    pub http: HttpSettings,
    pub auth: AuthSettings,
    pub operator: OperatorBudgets,
    pub workers: WorkerSettings,
    pub venues: VenueSettings,
    pub push: PushSettings,
    /// `FM_SERIES`: the series to run, `exchange:SYMBOL[:interval]` comma-separated (`8`, `8h`,
    /// or minutes such as `5m` for short rounds on the simulated exchange). Default: the
    /// built-in twenty across the four venues.
    pub series: Vec<SeriesSpec>,
    /// `FM_CHAIN`: `embedded` (default: an in-process chain persisted in Postgres, with a test
    /// USDC mint) or `rpc` (a cluster at `FM_RPC_URL`).
    pub chain: ChainConfig,
}

/// Where the process listens and what it runs.
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// `FM_BIND_ADDR`: where the HTTP server listens. Default `127.0.0.1:8080`.
    pub bind_addr: SocketAddr,
    /// `FM_METRICS_ADDR`: the admin address serving Prometheus metrics at `/metrics`, apart from
    /// the API; `off` for none. Default `127.0.0.1:9464`.
    pub metrics_addr: Option<SocketAddr>,
    /// `FM_PUBSUB_ADDR`: where the embedded chain's PubSub WebSocket listens; `off` for none.
    /// Default: the HTTP address with the port + 1, where web3.js looks for it (an ephemeral
    /// port when the HTTP port is 0). Only with the embedded chain.
    pub pubsub_addr: Option<SocketAddr>,
    /// `FM_LOG_FORMAT`: `json` (structured, default) or `pretty`. Filter with `RUST_LOG`.
    pub log_format: LogFormat,
    /// `FM_ROLES`: what this process runs, comma-separated from `serve` (the HTTP API),
    /// `workers` (the background jobs: scheduler, …) and `indexer` (following the chain into
    /// Postgres). Default all three, for local use; in production each role can run in its own
    /// processes (singleton workers hold an advisory lock, so any number of `workers` is safe).
    pub roles: Roles,
}

/// Postgres.
#[derive(Clone, Debug)]
pub struct DatabaseSettings {
    /// `DATABASE_URL`. Default `postgres://postgres:postgres@127.0.0.1:5432/funding_market`.
    pub url: String,
    /// `FM_DB_MAX_CONNECTIONS`: Postgres pool size. Default 16.
    pub max_connections: u32,
    /// `FM_RUN_MIGRATIONS`: apply `migrations/` at start. Default `true`.
    pub run_migrations: bool,
}

/// Redis.
#[derive(Clone, Debug)]
pub struct RedisSettings {
    /// `REDIS_URL`. Default `redis://127.0.0.1:6379`.
    pub url: String,
    /// `FM_REDIS_NAMESPACE`: prefix of every Redis key, so deployments can share a Redis.
    /// Default `fm`.
    pub namespace: String,
}

/// Access tokens and Sign-In With Solana.
#[derive(Clone, Debug)]
pub struct AuthSettings {
    /// `FM_JWT_SECRET`: HS256 key for access tokens, at least 32 bytes. Unset: a random key per
    /// process (tokens then do not survive a restart; fine locally, set it in production).
    pub jwt_secret: Vec<u8>,
    /// `FM_TOKEN_TTL_SECS`: access-token lifetime. Default 86400 (24 h).
    pub token_ttl: Duration,
    /// `FM_SIWS_DOMAIN`, `FM_SIWS_URI`, `FM_SIWS_CHAIN_ID` (the message's domain, URI and chain id;
    /// defaults `localhost:8080`, `http://localhost:8080`, `localnet`) and
    /// `FM_CHALLENGE_TTL_SECS` (how long a sign-in nonce can be redeemed; default 300).
    pub sign_in: SignInSettings,
}

/// What the operator pays for on users' behalf, per UTC day.
#[derive(Clone, Debug)]
pub struct OperatorBudgets {
    /// `FM_OPERATOR_NEW_USERS_PER_DAY`: users whose on-chain accounts (0.0057 SOL of rent each)
    /// the operator pays for per UTC day; past it, users create their own from their wallet.
    /// Default 1000.
    pub new_users_per_day: u32,
    /// `FM_OPERATOR_TOKEN_ACCOUNTS_PER_DAY`: withdrawal destinations whose USDC token account
    /// the operator creates (and pays the rent of) per UTC day, all users together; each user
    /// has 3 a day of these. Default 1000.
    pub token_accounts_per_day: u32,
}

/// The background jobs' switches and periods.
#[derive(Clone, Debug)]
pub struct WorkerSettings {
    /// `FM_SCHEDULER`: run the round scheduler in this process. Default `true`.
    pub scheduler: bool,
    /// `FM_SCHEDULER_PERIOD_SECS`: time between scheduler passes. Default 30.
    pub scheduler_period: Duration,
    /// `FM_ROUND_HORIZON_HOURS`: how far ahead rounds are created. Default 24.
    pub round_horizon: Duration,
    /// `FM_ORACLE_DEADLINE`: how long after settlement the oracle keeps asking for a consensus
    /// before it voids the round; seconds, or with a unit (`90s`, `30m`, `1h`). Default `1h`.
    pub oracle_deadline: Duration,
    /// `FM_INDEXER_PERIOD_MS`: time between indexer passes (the embedded chain also wakes it
    /// on every confirmation). Default 1000.
    pub indexer_period: Duration,
    /// `FM_DEPOSIT_RECONCILE_SECS`: time between reconciliation passes over every deposit
    /// address. Default 10 (deposits are promised within 30 s).
    pub deposit_reconcile_period: Duration,
    /// `FM_WITHDRAWAL_PERIOD_MS`: time between passes of the withdrawal queue. Default 1000.
    pub withdrawal_period: Duration,
}

/// The exchanges: where they are, and the market-data collectors.
#[derive(Clone, Debug)]
pub struct VenueSettings {
    /// `FM_BINANCE_URL`, `FM_BYBIT_URL`, `FM_OKX_URL`, `FM_HYPERLIQUID_URL`: the venues' REST
    /// base URLs, comma-separated (e.g. `https://fapi.binance.com,https://fapi1.binance.com`).
    /// The scheduler reads the first; the oracle reads every host's history, and OKX's
    /// settled-rate field on the first host. Each host at most once, and at least two hosts for a
    /// venue without a settled-rate field: the oracle needs two independent witnesses. A venue
    /// left unset is served by the simulated exchange, started in-process on three hosts (the
    /// embedded default).
    pub urls: ExchangeUrls,
    /// `FM_COLLECTORS`: run the market-data collectors (one per venue) in this process's
    /// workers. Default `true`.
    pub collectors: bool,
    /// `FM_INTERVALS_PERIOD_SECS`: time between two readings of a venue's listing (every perp's
    /// funding interval). Default 300.
    pub intervals_period: Duration,
    /// `FM_CROWD_PERIOD_SECS`: time between two sweeps of a venue's crowd positioning (one
    /// request per perp, paced by the venue's limits). Default 900.
    pub crowd_period: Duration,
    /// `FM_CROWD_RETENTION_DAYS`: how long crowd history is kept. Default 30.
    pub crowd_retention: Duration,
    /// `FM_VENUE_RATE_SHARE`: the percentage of each venue's published request limits the
    /// service uses (1–100). Default 50. The simulated exchange is not paced.
    pub rate_share: u32,
    /// `FM_SIM_PERPS_PER_VENUE`: perps the simulated exchange lists per venue (the configured
    /// series among them). Default 500.
    pub sim_perps: usize,
}

/// Web push notifications.
#[derive(Clone, Debug)]
pub struct PushSettings {
    /// `FM_PUSH`: run the push sender in this process's workers. Default `true`.
    pub enabled: bool,
    /// `FM_PUSH_PERIOD_MS`: time between passes of the push sender. Default 1000.
    pub period: Duration,
    /// `FM_VAPID_PRIVATE_KEY`: the VAPID key (a raw P-256 private key, base64url, as
    /// `web-push generate-vapid-keys` prints it). Unset: generated once and kept in Postgres.
    pub vapid_private_key: Option<String>,
    /// `FM_VAPID_SUBJECT`: the contact push services may write to (`mailto:` or `https:`).
    /// Default `mailto:operator@localhost`.
    pub vapid_subject: String,
    /// `FM_PUSH_TTL_SECS`: how long a push service keeps a notification for an offline device
    /// (and a failing delivery is retried). Default 86400.
    pub ttl_secs: u32,
    /// `FM_PUSH_ALLOW_HTTP`: accept `http://` push endpoints (a push service on a private
    /// network, tests). Default `false`: https only.
    /// `FM_PUSH_ALLOW_NETWORKS`: networks (addresses or CIDR ranges, comma-separated) push
    /// endpoints may be in although they are not public — a push service on the operator's own
    /// network. Default none: loopback, private, link-local, unique-local, CGNAT and metadata
    /// addresses are refused.
    pub endpoints: EndpointPolicy,
}

/// The roles of a process (`FM_ROLES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Roles {
    pub serve: bool,
    pub workers: bool,
    pub indexer: bool,
}

impl Roles {
    pub const ALL: Roles = Roles { serve: true, workers: true, indexer: true };

    pub fn parse(list: &str) -> Result<Roles, String> {
        let mut roles = Roles { serve: false, workers: false, indexer: false };
        for role in list.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            match role {
                "serve" => roles.serve = true,
                "workers" => roles.workers = true,
                "indexer" => roles.indexer = true,
                other => return Err(format!("unknown role {other:?}: expected serve, workers or indexer")),
            }
        }
        if roles == (Roles { serve: false, workers: false, indexer: false }) {
            return Err("no role: give at least one of serve, workers, indexer".into());
        }
        Ok(roles)
    }
}

/// The default set: twenty series across the four venues (the simulated exchange serves the
/// same ones).
pub fn default_series() -> Vec<SeriesSpec> {
    sim_exchange::default_symbols()
        .into_iter()
        .map(|s| SeriesSpec {
            exchange: Exchange::parse(s.venue).expect("the simulator's venues are ours"),
            symbol: s.symbol,
            interval_minutes: s.interval_minutes as u32,
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainConfig {
    /// `FM_PROGRAM_SO`: the program's code the embedded chain runs.
    Embedded { program: ProgramSource },
    /// `FM_RPC_URL`: the cluster's JSON-RPC endpoint. `keys`: the service's signing keys there
    /// (without them the service reads and indexes the chain but does not trade or co-sign).
    Rpc { url: String, keys: Option<KeyFiles> },
}

/// `FM_PROGRAM_SO`: a path to the program's SBF binary, or `native`. Unset, the chain runs
/// `target/deploy/funding_market.so` where `scripts/build-sbf.sh` left one, else the program
/// compiled into the service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramSource {
    Auto,
    Native,
    Sbf(std::path::PathBuf),
}

impl ProgramSource {
    /// Where `scripts/build-sbf.sh` leaves the binary, from the repository's root.
    pub const BUILT: &str = "target/deploy/funding_market.so";
}

/// `FM_OPERATOR_KEYPAIR`, `FM_AUTHORITY_KEYPAIR`: solana-keygen JSON keypair files of the
/// program config's operator and authority; `FM_USDC_MINT`: the config's USDC mint. All three
/// or none. `FM_ORACLE_KEYPAIR` (optional): the config's oracle, for ending markets on chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyFiles {
    pub operator: std::path::PathBuf,
    pub authority: std::path::PathBuf,
    pub oracle: Option<std::path::PathBuf>,
    pub usdc_mint: String,
}

/// Each venue's base URLs, in order (empty: served by the simulated exchange).
#[derive(Clone, Debug, Default)]
pub struct ExchangeUrls {
    pub binance: Vec<String>,
    pub bybit: Vec<String>,
    pub okx: Vec<String>,
    pub hyperliquid: Vec<String>,
}

impl ExchangeUrls {
    pub fn of(&self, exchange: Exchange) -> &[String] {
        match exchange {
            Exchange::Binance => &self.binance,
            Exchange::Bybit => &self.bybit,
            Exchange::Okx => &self.okx,
            Exchange::Hyperliquid => &self.hyperliquid,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Pretty,
}

/// A variable that is set but cannot be used, named so the operator can fix it.
#[derive(Debug, thiserror::Error)]
#[error("environment variable {name}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    pub name: &'static str,
    pub value: String,
    pub reason: String,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads configuration through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let get = |name: &'static str, default: &str| lookup(name).unwrap_or_else(|| default.to_owned());
        let bind_addr: SocketAddr = parse("FM_BIND_ADDR", get("FM_BIND_ADDR", "127.0.0.1:8080"))?;
        let config = Config {
            server: ServerSettings {
                bind_addr,
                metrics_addr: match get("FM_METRICS_ADDR", "127.0.0.1:9464").trim() {
                    "off" | "" => None,
                    addr => Some(parse("FM_METRICS_ADDR", addr.to_owned())?),
                },
                pubsub_addr: match lookup("FM_PUBSUB_ADDR").as_deref().map(str::trim) {
                    Some("off") => None,
                    Some(addr) if !addr.is_empty() => Some(parse("FM_PUBSUB_ADDR", addr.to_owned())?),
                    _ => {
                        let port = match bind_addr.port() {
                            0 => 0,
                            u16::MAX => return Err(invalid("FM_PUBSUB_ADDR", "", "FM_BIND_ADDR's port is 65535: set FM_PUBSUB_ADDR (or off)")),
                            p => p + 1,
                        };
                        Some(SocketAddr::new(bind_addr.ip(), port))
                    }
                },
                log_format: match get("FM_LOG_FORMAT", "json").as_str() {
                    "json" => LogFormat::Json,
                    "pretty" => LogFormat::Pretty,
                    other => return Err(invalid("FM_LOG_FORMAT", other, "expected json or pretty")),
                },
                roles: match lookup("FM_ROLES") {
                    Some(list) => Roles::parse(&list).map_err(|reason| invalid("FM_ROLES", &list, &reason))?,
                    None => Roles::ALL,
                },
            },
            database: DatabaseSettings {
                url: get("DATABASE_URL", "postgres://postgres:postgres@127.0.0.1:5432/funding_market"),
                max_connections: parse("FM_DB_MAX_CONNECTIONS", get("FM_DB_MAX_CONNECTIONS", "16"))?,
                run_migrations: parse("FM_RUN_MIGRATIONS", get("FM_RUN_MIGRATIONS", "true"))?,
            },
            redis: RedisSettings { url: get("REDIS_URL", "redis://127.0.0.1:6379"), namespace: get("FM_REDIS_NAMESPACE", "fm") },
            http: HttpSettings {
                request_timeout: millis("FM_REQUEST_TIMEOUT_MS", get("FM_REQUEST_TIMEOUT_MS", "10000"))?,
                health_timeout: millis("FM_HEALTH_TIMEOUT_MS", get("FM_HEALTH_TIMEOUT_MS", "2000"))?,
                rate_public_per_min: positive("FM_RATE_PUBLIC_PER_MIN", get("FM_RATE_PUBLIC_PER_MIN", "60"))?,
                rate_auth_per_min: positive("FM_RATE_AUTH_PER_MIN", get("FM_RATE_AUTH_PER_MIN", "300"))?,
                rate_trade_per_sec: positive("FM_RATE_TRADE_PER_SEC", get("FM_RATE_TRADE_PER_SEC", "10"))?,
                rate_rpc_per_sec: positive("FM_RATE_RPC_PER_SEC", get("FM_RATE_RPC_PER_SEC", "50"))?,
                rate_sync_every: millis("FM_RATE_SYNC_MS", get("FM_RATE_SYNC_MS", "100"))?,
                trusted_proxies: networks("FM_TRUSTED_PROXIES", &get("FM_TRUSTED_PROXIES", ""))?,
                deposit_webhook_auth: lookup("FM_DEPOSIT_WEBHOOK_AUTH").filter(|a| !a.is_empty()),
                cors_origins: match get("FM_CORS_ORIGINS", "*").trim() {
                    "*" => None,
                    list => Some(
                        list.split(',')
                            .map(str::trim)
                            .filter(|o| !o.is_empty())
                            .map(|origin| match origin_ok(origin) {
                                true => Ok(origin.trim_end_matches('/').to_owned()),
                                false => Err(invalid(
                                    "FM_CORS_ORIGINS",
                                    origin,
                                    "expected * or origins such as https://app.example.com (scheme, host, optional port)",
                                )),
                            })
                            .collect::<Result<_, _>>()?,
                    ),
                },
            },
            auth: AuthSettings {
                jwt_secret: match lookup("FM_JWT_SECRET") {
                    Some(secret) if secret.len() >= 32 => secret.into_bytes(),
                    Some(secret) => return Err(invalid("FM_JWT_SECRET", &"*".repeat(secret.len()), "at least 32 bytes")),
                    None => rand::random::<[u8; 32]>().to_vec(),
                },
                token_ttl: secs("FM_TOKEN_TTL_SECS", get("FM_TOKEN_TTL_SECS", "86400"))?,
                sign_in: SignInSettings {
                    domain: get("FM_SIWS_DOMAIN", "localhost:8080"),
                    uri: get("FM_SIWS_URI", "http://localhost:8080"),
                    chain_id: get("FM_SIWS_CHAIN_ID", "localnet"),
                    challenge_ttl: secs("FM_CHALLENGE_TTL_SECS", get("FM_CHALLENGE_TTL_SECS", "300"))?,
                },
            },
            operator: OperatorBudgets {
                new_users_per_day: parse("FM_OPERATOR_NEW_USERS_PER_DAY", get("FM_OPERATOR_NEW_USERS_PER_DAY", "1000"))?,
                token_accounts_per_day: parse("FM_OPERATOR_TOKEN_ACCOUNTS_PER_DAY", get("FM_OPERATOR_TOKEN_ACCOUNTS_PER_DAY", "1000"))?,
            },
            workers: WorkerSettings {
                scheduler: parse("FM_SCHEDULER", get("FM_SCHEDULER", "true"))?,
                scheduler_period: secs("FM_SCHEDULER_PERIOD_SECS", get("FM_SCHEDULER_PERIOD_SECS", "30"))?,
                round_horizon: Duration::from_secs(3600 * positive::<u64>("FM_ROUND_HORIZON_HOURS", get("FM_ROUND_HORIZON_HOURS", "24"))?),
                oracle_deadline: duration("FM_ORACLE_DEADLINE", get("FM_ORACLE_DEADLINE", "1h"))?,
                indexer_period: millis("FM_INDEXER_PERIOD_MS", get("FM_INDEXER_PERIOD_MS", "1000"))?,
                deposit_reconcile_period: secs("FM_DEPOSIT_RECONCILE_SECS", get("FM_DEPOSIT_RECONCILE_SECS", "10"))?,
                withdrawal_period: millis("FM_WITHDRAWAL_PERIOD_MS", get("FM_WITHDRAWAL_PERIOD_MS", "1000"))?,
            },
            venues: VenueSettings {
                urls: ExchangeUrls {
                    binance: urls("FM_BINANCE_URL", Exchange::Binance, lookup("FM_BINANCE_URL"))?,
                    bybit: urls("FM_BYBIT_URL", Exchange::Bybit, lookup("FM_BYBIT_URL"))?,
                    okx: urls("FM_OKX_URL", Exchange::Okx, lookup("FM_OKX_URL"))?,
                    hyperliquid: urls("FM_HYPERLIQUID_URL", Exchange::Hyperliquid, lookup("FM_HYPERLIQUID_URL"))?,
                },
                collectors: parse("FM_COLLECTORS", get("FM_COLLECTORS", "true"))?,
                intervals_period: secs("FM_INTERVALS_PERIOD_SECS", get("FM_INTERVALS_PERIOD_SECS", "300"))?,
                crowd_period: secs("FM_CROWD_PERIOD_SECS", get("FM_CROWD_PERIOD_SECS", "900"))?,
                crowd_retention: Duration::from_secs(86_400 * positive::<u64>("FM_CROWD_RETENTION_DAYS", get("FM_CROWD_RETENTION_DAYS", "30"))?),
                rate_share: match positive::<u32>("FM_VENUE_RATE_SHARE", get("FM_VENUE_RATE_SHARE", "50"))? {
                    share @ 1..=100 => share,
                    other => return Err(invalid("FM_VENUE_RATE_SHARE", &other.to_string(), "expected a percentage from 1 to 100")),
                },
                sim_perps: positive("FM_SIM_PERPS_PER_VENUE", get("FM_SIM_PERPS_PER_VENUE", "500"))?,
            },
            push: PushSettings {
                enabled: parse("FM_PUSH", get("FM_PUSH", "true"))?,
                period: millis("FM_PUSH_PERIOD_MS", get("FM_PUSH_PERIOD_MS", "1000"))?,
                vapid_private_key: match lookup("FM_VAPID_PRIVATE_KEY").filter(|k| !k.is_empty()) {
                    Some(key) => match crate::services::push::VapidKey::from_private(&key) {
                        Ok(_) => Some(key),
                        Err(why) => return Err(invalid("FM_VAPID_PRIVATE_KEY", &"*".repeat(key.len()), &why)),
                    },
                    None => None,
                },
                vapid_subject: match get("FM_VAPID_SUBJECT", "mailto:operator@localhost") {
                    subject if subject.starts_with("mailto:") || subject.starts_with("https://") => subject,
                    other => return Err(invalid("FM_VAPID_SUBJECT", &other, "expected a mailto: or https: URL")),
                },
                ttl_secs: positive("FM_PUSH_TTL_SECS", get("FM_PUSH_TTL_SECS", "86400"))?,
                endpoints: EndpointPolicy {
                    allow_http: parse("FM_PUSH_ALLOW_HTTP", get("FM_PUSH_ALLOW_HTTP", "false"))?,
                    allowed_networks: networks("FM_PUSH_ALLOW_NETWORKS", &get("FM_PUSH_ALLOW_NETWORKS", ""))?,
                },
            },
            series: match lookup("FM_SERIES") {
                Some(list) => series::parse_list(&list).map_err(|reason| invalid("FM_SERIES", &list, &reason))?,
                None => default_series(),
            },
            chain: match get("FM_CHAIN", "embedded").as_str() {
                "embedded" => ChainConfig::Embedded {
                    program: match lookup("FM_PROGRAM_SO").as_deref().map(str::trim) {
                        None | Some("") => ProgramSource::Auto,
                        Some("native") => ProgramSource::Native,
                        Some(path) => ProgramSource::Sbf(path.into()),
                    },
                },
                "rpc" => match lookup("FM_RPC_URL") {
                    Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
                        let keys = match (lookup("FM_OPERATOR_KEYPAIR"), lookup("FM_AUTHORITY_KEYPAIR"), lookup("FM_USDC_MINT")) {
                            (None, None, None) => None,
                            (Some(operator), Some(authority), Some(usdc_mint)) => Some(KeyFiles {
                                operator: operator.into(),
                                authority: authority.into(),
                                oracle: lookup("FM_ORACLE_KEYPAIR").map(Into::into),
                                usdc_mint,
                            }),
                            _ => return Err(invalid("FM_OPERATOR_KEYPAIR", "", "set FM_OPERATOR_KEYPAIR, FM_AUTHORITY_KEYPAIR and FM_USDC_MINT together")),
                        };
                        ChainConfig::Rpc { url, keys }
                    }
                    Some(url) => return Err(invalid("FM_RPC_URL", &url, "expected an http(s) URL")),
                    None => return Err(invalid("FM_RPC_URL", "", "required when FM_CHAIN=rpc")),
                },
                other => return Err(invalid("FM_CHAIN", other, "expected embedded or rpc")),
            },
        };
        // A real venue settles on its own interval: rounds shorter than it would never settle.
        if let Some(s) = config.series.iter().find(|s| s.round_minutes().is_some() && !config.venues.urls.of(s.exchange).is_empty()) {
            let item = format!("{}:{}:{}m", s.exchange.id(), s.symbol, s.interval_minutes);
            return Err(invalid("FM_SERIES", &item, "minute intervals run on the simulated exchange only (unset that venue's FM_*_URL)"));
        }
        Ok(config)
    }
}

/// A comma-separated list of networks (trusted proxies, push networks).
fn networks(name: &'static str, list: &str) -> Result<Vec<IpNet>, ConfigError> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|entry| network(entry).ok_or_else(|| invalid(name, entry, "expected an IP address or a CIDR range")))
        .collect()
}

/// A network entry: a CIDR range, or one address (its /32 or /128).
fn network(entry: &str) -> Option<IpNet> {
    entry.parse::<IpNet>().ok().or_else(|| entry.parse::<IpAddr>().ok().map(IpNet::from))
}

fn parse<T: std::str::FromStr>(name: &'static str, value: String) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    value.parse().map_err(|e: T::Err| invalid(name, &value, &e.to_string()))
}

fn millis(name: &'static str, value: String) -> Result<Duration, ConfigError> {
    match parse::<u64>(name, value.clone())? {
        0 => Err(invalid(name, &value, "must be positive")),
        ms => Ok(Duration::from_millis(ms)),
    }
}

/// A comma-separated list of http(s) base URLs.
/// A venue's base URLs: http(s), each host once, and enough independent sources for the oracle
/// (`RateSource::check_independent`).
fn urls(name: &'static str, exchange: Exchange, value: Option<String>) -> Result<Vec<String>, ConfigError> {
    let Some(value) = value else { return Ok(Vec::new()) };
    let list: Vec<String> = value.split(',').map(str::trim).filter(|u| !u.is_empty()).map(|u| u.trim_end_matches('/').to_owned()).collect();
    match list.iter().find(|u| !(u.starts_with("http://") || u.starts_with("https://"))) {
        Some(bad) => Err(invalid(name, &value, &format!("{bad:?} is not an http(s) URL"))),
        None if list.is_empty() => Err(invalid(name, &value, "no URL")),
        None => RateSource::check_independent(exchange, &list).map(|()| list).map_err(|reason| invalid(name, &value, &reason)),
    }
}

/// A positive duration: seconds, or a number with `s`, `m` or `h`.
fn duration(name: &'static str, value: String) -> Result<Duration, ConfigError> {
    let (number, unit) = match value.trim().char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => value.trim().split_at(i),
        None => (value.trim(), "s"),
    };
    let per_unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return Err(invalid(name, &value, "expected seconds, or a number with s, m or h")),
    };
    Ok(Duration::from_secs(positive::<u64>(name, number.to_owned())? * per_unit))
}

fn secs(name: &'static str, value: String) -> Result<Duration, ConfigError> {
    Ok(Duration::from_secs(positive::<u64>(name, value)?))
}

/// `scheme://host[:port]`, nothing after (a browser's `Origin`).
fn origin_ok(origin: &str) -> bool {
    let origin = origin.trim_end_matches('/');
    let rest = origin.strip_prefix("https://").or_else(|| origin.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && !r.contains(['/', '?', '#', ' ', '*']) && origin.is_ascii())
}

fn positive<T: std::str::FromStr + PartialOrd + Default>(name: &'static str, value: String) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    let parsed: T = parse(name, value.clone())?;
    if parsed <= T::default() {
        return Err(invalid(name, &value, "must be positive"));
    }
    Ok(parsed)
}

fn invalid(name: &'static str, value: &str, reason: &str) -> ConfigError {
    ConfigError { name, value: value.to_owned(), reason: reason.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_run_locally() {
        let c = with(&[]).unwrap();
        assert_eq!(c.server.bind_addr.to_string(), "127.0.0.1:8080");
        assert_eq!(c.redis.url, "redis://127.0.0.1:6379");
        assert_eq!(c.http.request_timeout, Duration::from_secs(10));
        assert!(c.database.run_migrations);
    }

    #[test]
    fn pubsub_listens_next_to_the_http_port_unless_told() {
        assert_eq!(with(&[]).unwrap().server.pubsub_addr.unwrap().to_string(), "127.0.0.1:8081", "where web3.js looks");
        assert_eq!(with(&[("FM_BIND_ADDR", "0.0.0.0:9000")]).unwrap().server.pubsub_addr.unwrap().to_string(), "0.0.0.0:9001");
        assert_eq!(with(&[("FM_BIND_ADDR", "127.0.0.1:0")]).unwrap().server.pubsub_addr.unwrap().port(), 0, "ephemeral beside ephemeral");
        assert_eq!(with(&[("FM_PUBSUB_ADDR", "127.0.0.1:7000")]).unwrap().server.pubsub_addr.unwrap().to_string(), "127.0.0.1:7000");
        assert_eq!(with(&[("FM_PUBSUB_ADDR", "off")]).unwrap().server.pubsub_addr, None);
        assert_eq!(with(&[("FM_BIND_ADDR", "127.0.0.1:65535")]).unwrap_err().name, "FM_PUBSUB_ADDR");
        assert_eq!(with(&[("FM_PUBSUB_ADDR", "nope")]).unwrap_err().name, "FM_PUBSUB_ADDR");
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = with(&[("FM_DB_MAX_CONNECTIONS", "many")]).unwrap_err();
        assert_eq!(e.name, "FM_DB_MAX_CONNECTIONS");
        assert!(with(&[("FM_REQUEST_TIMEOUT_MS", "0")]).is_err());
        assert!(with(&[("FM_LOG_FORMAT", "xml")]).is_err());
        assert!(with(&[("FM_BIND_ADDR", "localhost")]).is_err());
        assert!(with(&[("FM_JWT_SECRET", "short")]).is_err());
        assert!(with(&[("FM_RATE_PUBLIC_PER_MIN", "0")]).is_err());
        assert!(with(&[("FM_TRUSTED_PROXIES", "10.0.0.1, nope")]).is_err());
        assert_eq!(with(&[("FM_SERIES", "ftx:BTCUSDT")]).unwrap_err().name, "FM_SERIES");
        assert_eq!(with(&[("FM_SERIES", "okx:BTCUSDT")]).unwrap().series.len(), 1);
        assert_eq!(with(&[("FM_SERIES", "okx:BTCUSDT:5m")]).unwrap().series[0].round_minutes(), Some(5));
        assert_eq!(with(&[("FM_SERIES", "okx:BTCUSDT:5m"), ("FM_OKX_URL", "https://www.okx.com")]).unwrap_err().name, "FM_SERIES");
        assert_eq!(with(&[]).unwrap().series.len(), 20);
        let c = with(&[("FM_TRUSTED_PROXIES", "10.0.0.1, ::1, 172.16.0.0/12, fd00::/8")]).unwrap();
        assert_eq!(c.http.trusted_proxies.len(), 4);
        assert!(c.http.trusted_proxies[2].contains(&"172.31.255.1".parse::<IpAddr>().unwrap()));
        assert!(with(&[("FM_TRUSTED_PROXIES", "10.0.0.0/33")]).is_err());
    }

    #[test]
    fn venues_take_several_hosts_and_the_oracle_a_deadline() {
        let c = with(&[("FM_BINANCE_URL", "https://fapi.binance.com/, https://fapi1.binance.com")]).unwrap();
        assert_eq!(c.venues.urls.binance, ["https://fapi.binance.com", "https://fapi1.binance.com"]);
        assert!(c.venues.urls.okx.is_empty());
        assert_eq!(with(&[("FM_OKX_URL", "www.okx.com")]).unwrap_err().name, "FM_OKX_URL");
        assert_eq!(with(&[("FM_OKX_URL", " , ")]).unwrap_err().name, "FM_OKX_URL");
        // Independent witnesses: one host is refused where the history is the only source, a
        // host twice anywhere; OKX's settled-rate field makes one host enough.
        assert_eq!(with(&[("FM_BYBIT_URL", "https://api.bybit.com")]).unwrap_err().name, "FM_BYBIT_URL");
        assert_eq!(with(&[("FM_BINANCE_URL", "https://fapi.binance.com,https://fapi.binance.com/")]).unwrap_err().name, "FM_BINANCE_URL");
        assert_eq!(with(&[("FM_OKX_URL", "https://www.okx.com")]).unwrap().venues.urls.okx, ["https://www.okx.com"]);
        assert_eq!(c.workers.oracle_deadline, Duration::from_secs(3600));
        assert_eq!(with(&[("FM_ORACLE_DEADLINE", "90")]).unwrap().workers.oracle_deadline, Duration::from_secs(90));
        assert_eq!(with(&[("FM_ORACLE_DEADLINE", "30m")]).unwrap().workers.oracle_deadline, Duration::from_secs(1800));
        assert_eq!(with(&[("FM_ORACLE_DEADLINE", "2h")]).unwrap().workers.oracle_deadline, Duration::from_secs(7200));
        for bad in ["0", "1d", "h", "-5s", ""] {
            assert_eq!(with(&[("FM_ORACLE_DEADLINE", bad)]).unwrap_err().name, "FM_ORACLE_DEADLINE", "{bad}");
        }
    }

    #[test]
    fn the_chain_is_embedded_unless_an_rpc_url_is_given() {
        assert_eq!(with(&[]).unwrap().chain, ChainConfig::Embedded { program: ProgramSource::Auto });
        assert_eq!(with(&[("FM_PROGRAM_SO", "native")]).unwrap().chain, ChainConfig::Embedded { program: ProgramSource::Native });
        assert_eq!(with(&[("FM_PROGRAM_SO", "/p/fm.so")]).unwrap().chain, ChainConfig::Embedded { program: ProgramSource::Sbf("/p/fm.so".into()) });
        assert_eq!(with(&[("FM_CHAIN", "devnet")]).unwrap_err().name, "FM_CHAIN");
        assert_eq!(with(&[("FM_CHAIN", "rpc")]).unwrap_err().name, "FM_RPC_URL");
        assert_eq!(with(&[("FM_CHAIN", "rpc"), ("FM_RPC_URL", "localhost:8899")]).unwrap_err().name, "FM_RPC_URL");
        let rpc = with(&[("FM_CHAIN", "rpc"), ("FM_RPC_URL", "http://127.0.0.1:8899")]).unwrap();
        assert_eq!(rpc.chain, ChainConfig::Rpc { url: "http://127.0.0.1:8899".into(), keys: None });
        // The keys come as a set.
        let partial = with(&[("FM_CHAIN", "rpc"), ("FM_RPC_URL", "http://x"), ("FM_OPERATOR_KEYPAIR", "/k/op.json")]);
        assert_eq!(partial.unwrap_err().name, "FM_OPERATOR_KEYPAIR");
        let keyed = with(&[
            ("FM_CHAIN", "rpc"),
            ("FM_RPC_URL", "https://api.devnet.solana.com"),
            ("FM_OPERATOR_KEYPAIR", "/k/op.json"),
            ("FM_AUTHORITY_KEYPAIR", "/k/auth.json"),
            ("FM_USDC_MINT", "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"),
        ])
        .unwrap();
        assert!(matches!(keyed.chain, ChainConfig::Rpc { keys: Some(KeyFiles { ref usdc_mint, .. }), .. } if usdc_mint.starts_with("4zMMC")));
        assert_eq!(with(&[("FM_ROLES", "serve,gardening")]).unwrap_err().name, "FM_ROLES");
        assert_eq!(with(&[("FM_ROLES", " , ")]).unwrap_err().name, "FM_ROLES");
        assert_eq!(with(&[]).unwrap().server.roles, Roles::ALL);
        assert_eq!(with(&[("FM_ROLES", "workers")]).unwrap().server.roles, Roles { serve: false, workers: true, indexer: false });
    }
}
