//! The Redis connection: one multiplexed connection shared by all requests, created on first
//! use and re-established by redis' `ConnectionManager` whenever it breaks, with timeouts on
//! connecting and on every command so a dead Redis never hangs a request.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, RedisResult};
use tokio::sync::OnceCell;

#[derive(Clone)]
pub struct Redis {
    client: Client,
    manager: Arc<OnceCell<ConnectionManager>>,
    config: ConnectionManagerConfig,
}

impl Redis {
    /// Parses the URL; connects lazily (the service starts even while Redis is down).
    pub fn new(url: &str, timeout: Duration) -> RedisResult<Redis> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(timeout)
            .set_response_timeout(timeout)
            .set_number_of_retries(1);
        Ok(Redis { client: Client::open(url)?, manager: Arc::new(OnceCell::new()), config })
    }

    /// A handle on the shared connection (cheap to clone), connecting first if needed.
    pub async fn connection(&self) -> RedisResult<ConnectionManager> {
        self.manager
            .get_or_try_init(|| ConnectionManager::new_with_config(self.client.clone(), self.config.clone()))
            .await
            .cloned()
    }

    /// PING; `Ok` when Redis answered PONG.
    pub async fn ping(&self) -> RedisResult<()> {
        let mut conn = self.connection().await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await.map(|_| ())
    }
}
