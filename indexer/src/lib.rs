//! The projection: the program's events, read from any chain (`chain_client::ChainSource`:
//! a cluster, or the embedded chain), written into Postgres once each with the cursor.
//! `events` decodes the program's `emit_cpi!` events, `projection` writes them (trades,
//! positions, balances, stream events, trader totals), `follow` runs the loop from the cursor,
//! `deposits` matches sweeps to deposits, `stats` keeps series statistics. `MIGRATOR` and
//! `pool_options` are the database plumbing every process shares.

pub mod deposits;
pub mod events;
pub mod follow;
pub mod projection;
pub mod stats;

/// The workspace's migrations (`migrations/`, the only schema), embedded at compile time; the
/// API and the indexer binary both apply them.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// A connection idle at least this long is checked with a round trip before it is handed out.
pub const CHECK_IF_IDLE_FOR: std::time::Duration = std::time::Duration::from_secs(1);

/// The pool settings both processes use. sqlx's default checks every connection with a round
/// trip (`ping`) each time it is taken from the pool, on top of the one it makes when a
/// connection is given back: under load that doubles the round trips of every statement run on
/// the pool, and wakes Postgres as often. Here only a connection that sat idle for `CHECK_IF_IDLE_FOR` is checked — one
/// whose server went away while nobody used it (a restart, an idle timeout) is dropped and
/// another made. One that breaks while in steady use fails the statement that finds
/// it, as it would have failed the statement in flight anyway; sqlx's check on giving it back
/// then drops it.
pub fn pool_options() -> sqlx::postgres::PgPoolOptions {
    sqlx::postgres::PgPoolOptions::new().test_before_acquire(false).before_acquire(|connection, meta| {
        Box::pin(async move {
            if meta.idle_for >= CHECK_IF_IDLE_FOR {
                sqlx::Connection::ping(connection).await?;
            }
            Ok(true)
        })
    })
}

#[cfg(test)]
mod tests {
    use sqlx::Connection;
    use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};

    /// A pooled connection whose server went away while it sat idle (a restart, an idle
    /// timeout) is checked, dropped and replaced, not handed out to fail its statement.
    #[sqlx::test(migrations = false)]
    async fn a_connection_that_died_while_idle_is_replaced(_: PgPoolOptions, connect: PgConnectOptions) {
        let pool = super::pool_options().max_connections(1).connect_with(connect.clone()).await.unwrap();
        let backend = || sqlx::query_scalar::<_, i32>("SELECT pg_backend_pid()").fetch_one(&pool);
        let first = backend().await.unwrap();
        assert_eq!(backend().await.unwrap(), first, "one connection, reused");

        tokio::time::sleep(super::CHECK_IF_IDLE_FOR + std::time::Duration::from_millis(200)).await;
        let mut admin = PgConnection::connect_with(&connect).await.unwrap();
        let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1, 5000)").bind(first).fetch_one(&mut admin).await.unwrap();
        assert!(ended);

        let second = backend().await.expect("the dead connection was replaced");
        assert_ne!(second, first);
    }

    /// `migrations/schema.sql` is the schema the migrations make, as `pg_dump --schema-only`
    /// prints it (less its comments and session settings): what the database is now, readable
    /// in one file. It fails when a migration changes the schema and the file was not
    /// regenerated: `UPDATE_SCHEMA=1 cargo test -p indexer --lib schema`.
    #[sqlx::test(migrator = "crate::MIGRATOR")]
    async fn the_schema_file_is_what_the_migrations_make(_: PgPoolOptions, connect: PgConnectOptions) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations/schema.sql");
        let dump = std::process::Command::new("pg_dump")
            .args(["--schema-only", "--no-owner", "--no-privileges", "--exclude-table=_sqlx_migrations"])
            .args(["--host", connect.get_host(), "--port", &connect.get_port().to_string(), "--username", connect.get_username()])
            .args(["--dbname", connect.get_database().expect("sqlx::test names the database")])
            .env("PGPASSWORD", password_of(&std::env::var("DATABASE_URL").unwrap_or_default()))
            .output()
            .expect("pg_dump runs (it comes with Postgres: scripts/setup.sh)");
        assert!(dump.status.success(), "pg_dump: {}", String::from_utf8_lossy(&dump.stderr));
        let schema = readable(&String::from_utf8(dump.stdout).unwrap());
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(&path, &schema).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(committed == schema, "migrations/schema.sql is not the migrated schema: regenerate it with UPDATE_SCHEMA=1 cargo test -p indexer --lib schema");
    }

    /// The password in a `postgres://user:password@host/db` URL, if it has one.
    fn password_of(url: &str) -> String {
        url.split_once("://")
            .and_then(|(_, rest)| rest.split_once('@'))
            .and_then(|(auth, _)| auth.split_once(':'))
            .map(|(_, password)| password.to_owned())
            .unwrap_or_default()
    }

    /// A schema dump without what varies between runs and servers (comments with versions,
    /// session settings, psql's `\restrict` keys), blank lines collapsed, under a header.
    fn readable(dump: &str) -> String {
        let mut out = String::from(
            "-- The schema the migrations in this folder make, dumped from a migrated database (pg_dump\n\
             -- --schema-only). Generated: UPDATE_SCHEMA=1 cargo test -p indexer --lib schema; a test\n\
             -- fails when it no longer matches. The migrations are what runs; this file is for reading.\n",
        );
        let mut blank = true;
        for line in dump.lines() {
            let skip = line.starts_with("--") || line.starts_with("SET ") || line.starts_with("SELECT pg_catalog.set_config") || line.starts_with('\\');
            if skip {
                continue;
            }
            if line.trim().is_empty() {
                if !blank {
                    out.push('\n');
                }
                blank = true;
                continue;
            }
            out.push_str(line);
            out.push('\n');
            blank = false;
        }
        out
    }
}
