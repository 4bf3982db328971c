//! `GET /health`: a real query to Postgres and a PING to Redis on every call.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{SecondsFormat, Utc};
use serde::Serialize;

use crate::http::AppState;
use crate::http::envelope::{Data, Meta};

#[derive(Serialize)]
pub struct Health {
    /// `ok` when every component is; otherwise `degraded` (and HTTP 503).
    status: &'static str,
    timestamp: String,
    components: Components,
}

#[derive(Serialize)]
struct Components {
    postgres: &'static str,
    redis: &'static str,
}

/// The report is the `data` of a normal envelope even when a component is down: the
/// components are what the caller needs, and the 503 status says the service is not ready.
pub async fn health(State(state): State<AppState>) -> Data<Health> {
    let limit = state.http.health_timeout;
    let (postgres, redis) = tokio::join!(
        check("postgres", limit, state.services.ping_postgres()),
        check("redis", limit, state.services.redis.ping()),
    );
    let healthy = postgres == "ok" && redis == "ok";
    let report = Health {
        status: if healthy { "ok" } else { "degraded" },
        timestamp: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
        components: Components { postgres, redis },
    };
    let status = if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    Data(status, report, Meta::default())
}

async fn check<E: std::fmt::Display>(
    component: &'static str,
    limit: Duration,
    probe: impl Future<Output = Result<(), E>>,
) -> &'static str {
    match tokio::time::timeout(limit, probe).await {
        Ok(Ok(())) => "ok",
        Ok(Err(e)) => {
            tracing::warn!(component, error = %e, "health check failed");
            "down"
        }
        Err(_) => {
            tracing::warn!(component, "health check timed out");
            "down"
        }
    }
}
