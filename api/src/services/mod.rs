//! Use cases: what the API and the workers do, in the domain's terms. Each takes the
//! [`Services`] handle and plain arguments, and returns domain values or a [`ServiceError`];
//! none knows HTTP. They call the store (SQL), the chain (transactions the service signs) and
//! the domain (rules).

pub mod api_keys;
pub mod collector;
pub mod deposits;
pub mod error;
pub mod idempotency;
pub mod key_gates;
pub mod leaderboard_cache;
pub mod market_cache;
pub mod market_data;
pub mod markets;
pub mod notices;
pub mod oracle;
pub mod push;
pub mod rate_counts;
pub mod replay;
pub mod scheduler;
pub mod series_cards;
pub mod settlement;
pub mod sign_in;
pub mod stream;
pub mod tokens;
pub mod trade_plans;
pub mod trading;
pub mod users;
pub mod wallet_flow;
pub mod withdrawals;

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;

pub use error::ServiceError;

use crate::chain::OnChain;
use crate::domain::quote::TradeTerms;
use crate::store::{self, cache::Redis};
use tokens::TokenIssuer;

/// A page of a listing: how many, from where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    pub limit: i64,
    pub offset: i64,
}

/// The Sign-In With Solana message's fixed parts (configuration).
#[derive(Clone, Debug)]
pub struct SignInSettings {
    pub domain: String,
    pub uri: String,
    pub chain_id: String,
    /// How long a challenge can be redeemed.
    pub challenge_ttl: Duration,
}

/// Everything a use case can reach. Cheap to clone (handles and `Arc`s).
#[derive(Clone)]
pub struct Services {
    pub db: PgPool,
    pub redis: Redis,
    pub tokens: Arc<TokenIssuer>,
    pub sign_in: Arc<SignInSettings>,
    /// The chain the service trades on, with its keys. `None` where a test serves routes that
    /// never reach it, or on a cluster whose operator keys were not configured.
    pub onchain: Option<OnChain>,
    /// How long a use case waits for the chain to confirm what it sent before answering that
    /// it is pending (`ServiceError::Pending`): a little less than the request deadline, so a
    /// sent transaction is never answered with the deadline's 500.
    pub answer_within: std::time::Duration,
    /// How many users' on-chain accounts the operator pays for per UTC day.
    pub new_users_per_day: u32,
    /// How many withdrawal destinations' token accounts the operator pays for per UTC day.
    pub token_accounts_per_day: u32,
    /// Web push: the VAPID key and the rules for subscriptions and messages.
    pub push: Arc<push::PushSettings>,
    /// The reads of concurrent trades before they are signed, grouped.
    pub trade_plans: Arc<trade_plans::TradePlans>,
    /// Market rows in memory, for market reads and quotes.
    pub market_cache: Arc<market_cache::MarketCache>,
    /// Active series' cards in memory, for the series listing.
    pub series_cards: Arc<series_cards::SeriesCards>,
    /// The leaderboard's rankings in memory.
    pub leaderboard: Arc<leaderboard_cache::LeaderboardCache>,
    /// The market data's version (responses are kept while it holds).
    pub market_data_version: Arc<notices::Version>,
}

impl Services {
    /// The chain, or the error a request that needs one gets without it.
    pub fn onchain(&self) -> Result<&OnChain, ServiceError> {
        self.onchain.as_ref().ok_or_else(|| ServiceError::NotFound("this service runs without a trading chain (no operator keys configured)".into()))
    }

    /// The terms trades run on: the chain's program config, or — where the service has no
    /// chain, so nothing can trade — the config the embedded chain is created with.
    pub fn terms(&self) -> TradeTerms {
        self.onchain.as_ref().map_or_else(
            || {
                let genesis = localnet::GenesisParams::default();
                TradeTerms { fee_bps: genesis.fee_bps, min_trade: genesis.min_trade, min_deposit: genesis.min_deposit }
            },
            OnChain::terms,
        )
    }

    /// A real round trip to Postgres (health checks).
    pub async fn ping_postgres(&self) -> Result<(), sqlx::Error> {
        store::ping(&self.db).await
    }
}
