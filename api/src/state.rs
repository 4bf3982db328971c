//! What every handler can reach.

use std::sync::Arc;

use crate::onchain::OnChain;
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
    /// The chain the service trades on, with its keys. `None` where a test serves routes that
    /// never reach it, or on a cluster whose operator keys were not configured.
    pub onchain: Option<OnChain>,
}

impl AppState {
    pub fn new(config: Config, db: PgPool, redis: Redis) -> AppState {
        let tokens = Arc::new(TokenIssuer::new(&config.jwt_secret, config.token_ttl));
        AppState { config: Arc::new(config), db, redis, tokens, onchain: None }
    }

    pub fn with_onchain(self, onchain: OnChain) -> AppState {
        AppState { onchain: Some(onchain), ..self }
    }
}
