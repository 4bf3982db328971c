//! The Redis connection: one multiplexed connection shared by all requests, created on first
//! use and re-established by redis' `ConnectionManager` whenever it breaks, with timeouts on
//! connecting and on every command so a dead Redis never hangs a request. Every key is prefixed
//! with the deployment's namespace (`FM_REDIS_NAMESPACE`), so deployments can share a Redis.

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
    namespace: Arc<str>,
    timeout: Duration,
}

impl Redis {
    /// Parses the URL; connects lazily (the service starts even while Redis is down).
    pub fn new(url: &str, timeout: Duration, namespace: &str) -> RedisResult<Redis> {
        let config = ConnectionManagerConfig::new().set_connection_timeout(timeout).set_response_timeout(timeout).set_number_of_retries(1);
        Ok(Redis { client: Client::open(url)?, manager: Arc::new(OnceCell::new()), config, namespace: namespace.into(), timeout })
    }

    /// `namespace:kind:id`.
    pub fn key(&self, kind: &str, id: impl std::fmt::Display) -> String {
        format!("{}:{kind}:{id}", self.namespace)
    }

    /// A handle on the shared connection (cheap to clone), connecting first if needed.
    pub async fn connection(&self) -> RedisResult<ConnectionManager> {
        self.manager.get_or_try_init(|| ConnectionManager::new_with_config(self.client.clone(), self.config.clone())).await.cloned()
    }

    /// A connection of its own in subscriber mode (pub/sub cannot share the multiplexed one).
    pub async fn pubsub(&self) -> RedisResult<redis::aio::PubSub> {
        tokio::time::timeout(self.timeout, self.client.get_async_pubsub())
            .await
            .unwrap_or_else(|_| Err(redis::RedisError::from((redis::ErrorKind::IoError, "timed out connecting to redis"))))
    }

    /// PING; `Ok` when Redis answered PONG.
    pub async fn ping(&self) -> RedisResult<()> {
        let mut conn = self.connection().await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await.map(|_| ())
    }

    /// `INCRBY key n` for each `(key, n, ttl_secs)`, each key then set to expire in `ttl_secs`,
    /// in one pipeline; the counts after, in order (the rate limiter's reconciliation).
    pub async fn add_to_counts(&self, batch: &[(String, u64, u64)]) -> RedisResult<Vec<u64>> {
        let mut conn = self.connection().await?;
        let mut pipe = redis::pipe();
        for (key, n, ttl) in batch {
            pipe.cmd("INCRBY").arg(key).arg(n).cmd("EXPIRE").arg(key).arg(ttl).ignore();
        }
        pipe.query_async(&mut conn).await
    }

    /// `SET key value NX EX ttl`: whether the key was new.
    pub async fn set_new(&self, key: &str, value: &str, ttl_secs: u64) -> RedisResult<bool> {
        let mut conn = self.connection().await?;
        let set: Option<String> = redis::cmd("SET").arg(key).arg(value).arg("NX").arg("EX").arg(ttl_secs).query_async(&mut conn).await?;
        Ok(set.is_some())
    }
}
