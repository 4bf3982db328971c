//! Wiring: configuration, the state handlers reach, start-up by role, telemetry. Everything
//! else is wired here; nothing depends on it but `main`, tests and benchmarks.

pub mod config;
pub mod metrics;
pub mod startup;
pub mod state;
pub mod telemetry;
