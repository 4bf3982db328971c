//! Structured logs through `tracing`: JSON lines by default, filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

use super::config::LogFormat;

pub fn init(format: LogFormat) {
    // The embedded chain's RPC layer (tarpc) logs every call at info; keep it to warnings.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,tarpc=warn,solana=warn,agave=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    // A second init (tests) keeps the first subscriber.
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Pretty => builder.try_init(),
    };
}
