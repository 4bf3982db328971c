//! What every handler can reach.

use std::sync::Arc;

use indexer::chain::AnyChain;
use sqlx::PgPool;

use crate::auth::jwt::TokenIssuer;
use crate::cache::Redis;
use crate::config::Config;

#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub db: PgPool,
    pub redis: Redis,
    pub tokens: Arc<TokenIssuer>,
    /// The chain the service trades on. `None` only where a test serves routes that never
    /// reach it.
    pub chain: Option<AnyChain>,
}

impl AppState {
    pub fn new(config: Config, db: PgPool, redis: Redis) -> AppState {
        let tokens = Arc::new(TokenIssuer::new(&config.jwt_secret, config.token_ttl));
        AppState { config: Arc::new(config), db, redis, tokens, chain: None }
    }

    pub fn with_chain(self, chain: AnyChain) -> AppState {
        AppState { chain: Some(chain), ..self }
    }
}
