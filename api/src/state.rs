//! What every handler can reach.

use std::sync::Arc;

use sqlx::PgPool;

use crate::cache::Redis;
use crate::config::Config;

#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub db: PgPool,
    pub redis: Redis,
}
