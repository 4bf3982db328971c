//! Spawning the real router on a random port against real Postgres and Redis.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use api::cache::Redis;
use api::{AppState, Config};
use axum::Router;
use sqlx::PgPool;

pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
}

impl TestApp {
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.http.get(format!("{}{path}", self.base)).send().await.unwrap()
    }
}

pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// The defaults, with short timeouts so failure cases answer fast, limits high enough not to
/// interfere, and a Redis namespace of its own so parallel tests never share a key.
pub fn config() -> Config {
    let mut config = Config::from_lookup(|_| None).unwrap();
    config.health_timeout = Duration::from_millis(800);
    config.rate_public_per_min = 10_000;
    config.rate_auth_per_min = 10_000;
    config.rate_trade_per_sec = 10_000;
    config.redis_namespace = format!("fmtest-{}", uuid::Uuid::new_v4().simple());
    config
}

pub fn state(db: PgPool, redis_url: &str) -> AppState {
    state_with(config(), db, redis_url)
}

pub fn state_with(config: Config, db: PgPool, redis_url: &str) -> AppState {
    let redis = Redis::new(redis_url, config.health_timeout).unwrap();
    AppState::new(config, db, redis)
}

/// Serves `router` on 127.0.0.1 at a free port.
pub async fn serve(router: Router) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await.unwrap();
    });
    TestApp { base: format!("http://{addr}"), http: reqwest::Client::new() }
}

/// The whole application for `state`.
pub async fn spawn(state: AppState) -> TestApp {
    serve(api::startup::app(state)).await
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A private redis-server on `port`, killed on drop.
pub struct RedisServer(Child);

impl RedisServer {
    pub async fn start(port: u16) -> RedisServer {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (scripts/setup.sh installs it)");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return RedisServer(child);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not start on port {port}");
    }

    pub fn stop(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
