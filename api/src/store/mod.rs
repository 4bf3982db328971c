//! All SQL, one module per table family, and the connections it runs on (the Postgres pool and
//! migrations here, Redis in `cache`). Functions take a pool or a transaction and return rows
//! as domain types or plain row structs; no rule of the business lives here beyond what a
//! statement must do atomically (a cap reserved in one `UPDATE … WHERE`, a claim in one
//! `INSERT … ON CONFLICT`).

pub mod api_keys;
pub mod cache;
pub mod crowd;
pub mod deposits;
pub mod faucet;
pub mod idempotency;
pub mod intervals;
pub mod markets;
pub mod operator_budget;
pub mod oracle;
pub mod positions;
pub mod push;
pub mod rounds;
pub mod series;
pub mod stream;
pub mod types;
pub mod users;
pub mod withdrawals;

use std::time::Duration;

use sqlx::Postgres;
use sqlx::migrate::MigrateDatabase;
use sqlx::postgres::PgPool;

pub use indexer::MIGRATOR;

/// A pool that connects lazily; `acquire_timeout` bounds how long a request waits for a
/// connection, so a dead Postgres yields an error quickly instead of a hung request. Idle
/// connections are checked as `indexer::pool_options` says.
pub fn pool(url: &str, max_connections: u32, acquire_timeout: Duration) -> Result<PgPool, sqlx::Error> {
    indexer::pool_options().max_connections(max_connections).acquire_timeout(acquire_timeout).connect_lazy(url)
}

/// Creates the database named in `url` if it does not exist yet, then applies the migrations.
pub async fn prepare(url: &str, pool: &PgPool) -> Result<(), sqlx::Error> {
    if !Postgres::database_exists(url).await? {
        tracing::info!("creating the database");
        Postgres::create_database(url).await?;
    }
    MIGRATOR.run(pool).await?;
    Ok(())
}

/// A real round trip to Postgres.
pub async fn ping(pool: &PgPool) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT 1").execute(pool).await.map(|_| ())
}
