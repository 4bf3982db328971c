//! Chain access and the indexer (DESIGN §2, §8).
//!
//! `chain::rpc` reads and writes any Solana cluster through its JSON-RPC API at `confirmed`
//! commitment: signatures of the program since a cursor, transactions with their inner
//! instructions (where `emit_cpi!` events travel), accounts, the latest blockhash and the clock,
//! and sending a transaction until it confirms. `events` decodes the program's `emit_cpi!`
//! events, `projection` writes them into Postgres once each with the cursor, `follow` runs the
//! loop from the cursor over any `ChainSource`, `stats` keeps series statistics.
//! `chain::embedded` is the in-process chain for local runs and tests; `chain::AnyChain` is the
//! narrow interface over either.

pub mod chain;
pub mod deposits;
pub mod events;
pub mod follow;
pub mod projection;
pub mod stats;

/// The workspace's migrations (`migrations/`, the only schema), embedded at compile time; the
/// API and the indexer binary both apply them.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");
