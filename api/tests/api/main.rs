//! The API's integration tests: one binary (one link step), one module per concern.

mod auth;
mod binary;
mod cors;
mod crash;
mod envelope;
mod exchanges;
mod health;
mod helpers;
mod journey;
mod layers;
mod limits;
mod market_data;
mod markets;
mod metrics;
mod money;
mod oracle;
mod push;
mod roles;
mod scheduler;
mod settlement;
mod trading;
mod wallet_flow;
mod ws;
mod workers;
