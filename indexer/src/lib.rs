//! Chain access and the indexer (DESIGN §2, §8).
//!
//! `chain::rpc` reads and writes any Solana cluster through its JSON-RPC API at `confirmed`
//! commitment: signatures of the program since a cursor, transactions with their inner
//! instructions (where `emit_cpi!` events travel), accounts, the latest blockhash and the clock,
//! and sending a transaction until it confirms. The embedded chain, event decoding and the
//! projection into Postgres are the next parts of this crate (see the indexer issue's note).

pub mod chain;
