//! The indexer: follows the program's confirmed transactions from a stored cursor, decodes the
//! `emit_cpi!` events from their inner instructions and projects them into Postgres, each event
//! once (DESIGN §2, §8).
//!
//! This crate is the workspace's slot for it; the chain interface and the projection arrive
//! with the chain-access issue, and nothing here pretends to index yet.
