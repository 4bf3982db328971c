//! `funding-api`: the service — the HTTP API, the workers and the indexer, as `FM_ROLES` says.
//! Configuration from the environment (`.env.example`).

use std::process::ExitCode;

use api::Config;
use api::app::startup::{Application, shutdown_signal};
use api::app::telemetry;

#[tokio::main]
async fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    telemetry::init(config.server.log_format);
    let app = match Application::build(config).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!(error = %e, "startup failed");
            return ExitCode::FAILURE;
        }
    };
    match app.run_until(shutdown_signal()).await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!(error = %e, "server error");
            ExitCode::FAILURE
        }
    }
}
