//! Spawning the real router on a random port against real Postgres and Redis.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use api::store::cache::Redis;
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

/// The Postgres URL of the suite's administrative database (`DATABASE_URL`).
pub fn admin_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into())
}

/// The URL of database `name` on the suite's server.
pub fn database_url(name: &str) -> String {
    let admin = admin_url();
    let (server, _) = admin.rsplit_once('/').expect("a database URL ends in its database");
    format!("{server}/{name}")
}

/// The amount of an SPL token account (micro-USDC for the chain's vaults).
pub fn token_amount(data: &[u8]) -> u64 {
    use anchor_lang::solana_program::program_pack::Pack;
    spl_token_interface::state::Account::unpack(data).expect("an SPL token account").amount
}

pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// The `Authorization` the test services expect on deposit webhooks.
pub const WEBHOOK_AUTH: &str = "Bearer test-webhook-secret";

/// The defaults, with short timeouts so failure cases answer fast, limits high enough not to
/// interfere, and a Redis namespace of its own so parallel tests never share a key.
pub fn config() -> Config {
    let mut config = Config::from_lookup(|_| None).unwrap();
    config.http.health_timeout = Duration::from_millis(800);
    config.http.rate_public_per_min = 10_000;
    config.http.rate_auth_per_min = 10_000;
    config.http.rate_trade_per_sec = 10_000;
    config.http.rate_rpc_per_sec = 10_000;
    config.redis.namespace = format!("fmtest-{}", uuid::Uuid::new_v4().simple());
    config.http.deposit_webhook_auth = Some(WEBHOOK_AUTH.into());
    config
}

pub fn state(db: PgPool, redis_url: &str) -> AppState {
    state_with(config(), db, redis_url)
}

pub fn state_with(config: Config, db: PgPool, redis_url: &str) -> AppState {
    let redis = Redis::new(redis_url, config.http.health_timeout, &config.redis.namespace).unwrap();
    AppState::new(&config, db, redis)
}

/// The use cases over `db`, without a chain (the tests' Redis).
pub fn services(db: &PgPool) -> api::services::Services {
    state(db.clone(), &redis_url()).into_parts().services
}

/// Serves `router` on 127.0.0.1 at a free port.
pub async fn serve(router: Router) -> TestApp {
    let listener = api::app::startup::listen(([127, 0, 0, 1], 0).into()).unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await.unwrap();
    });
    TestApp { base: format!("http://{addr}"), http: reqwest::Client::new() }
}

/// The whole application for `state`.
pub async fn spawn(state: AppState) -> TestApp {
    serve(api::http::app(state)).await
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A private redis-server on `port`, killed on drop.
pub struct RedisServer(Child);

impl RedisServer {
    pub async fn start(port: u16) -> RedisServer {
        let mut child = Command::new("redis-server")
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
        let _ = child.kill();
        let _ = child.wait();
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

/// A wallet with a real ed25519 key.
pub fn wallet() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&rand::random())
}

pub fn address(key: &ed25519_dalek::SigningKey) -> String {
    bs58::encode(key.verifying_key().as_bytes()).into_string()
}

pub fn sign(key: &ed25519_dalek::SigningKey, message: &str) -> String {
    use ed25519_dalek::Signer;
    bs58::encode(key.sign(message.as_bytes()).to_bytes()).into_string()
}

impl TestApp {
    pub async fn post_json(&self, path: &str, body: serde_json::Value) -> reqwest::Response {
        self.http.post(format!("{}{path}", self.base)).json(&body).send().await.unwrap()
    }

    /// A challenge for `key`'s wallet: (nonce, message).
    pub async fn challenge(&self, key: &ed25519_dalek::SigningKey) -> (String, String) {
        let body: serde_json::Value = self.post_json("/v1/auth/challenge", serde_json::json!({"wallet_address": address(key)})).await.json().await.unwrap();
        let data = &body["data"];
        (data["nonce"].as_str().unwrap().to_owned(), data["message"].as_str().unwrap().to_owned())
    }

    /// The full sign-in: challenge, sign, verify. Returns the access token.
    pub async fn sign_in(&self, key: &ed25519_dalek::SigningKey) -> String {
        let (nonce, message) = self.challenge(key).await;
        let body = serde_json::json!({"wallet_address": address(key), "signature": sign(key, &message), "nonce": nonce});
        let response: serde_json::Value = self.post_json("/v1/auth/verify", body).await.json().await.unwrap();
        response["data"]["token"].as_str().unwrap_or_else(|| panic!("sign-in failed: {response}")).to_owned()
    }

    pub async fn get_with(&self, path: &str, header: (&str, &str)) -> reqwest::Response {
        self.http.get(format!("{}{path}", self.base)).header(header.0, header.1).send().await.unwrap()
    }
}

/// Status and error code of a response.
pub async fn code_of(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap();
    (status, body["error"]["code"].as_str().unwrap_or("").to_owned())
}

/// Sends `n` requests built by `request` at once (each on its own task) and returns their
/// statuses and headers.
pub async fn concurrently<F, Fut>(n: usize, request: F) -> Vec<(u16, reqwest::header::HeaderMap)>
where
    F: Fn(reqwest::Client) -> Fut,
    Fut: Future<Output = reqwest::Result<reqwest::Response>> + Send + 'static,
{
    let client = reqwest::Client::new();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let sent = request(client.clone());
            tokio::spawn(async move {
                let r = sent.await.unwrap();
                (r.status().as_u16(), r.headers().clone())
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for task in tasks {
        out.push(task.await.unwrap());
    }
    out
}
