//! `GET /health`: a real query to Postgres and a PING to Redis on every call, and the chain:
//! the embedded chain is down while a landed transaction waits to be persisted; an RPC node
//! is asked for its Clock sysvar.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{SecondsFormat, Utc};
use serde::Serialize;

use crate::chain::AnyChain;

use crate::http::AppState;
use crate::http::envelope::{Data, Meta};
use crate::http::openapi::Envelope;

#[derive(Serialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok` when every component is; otherwise `degraded` (and HTTP 503).
    status: &'static str,
    timestamp: String,
    components: Components,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = HealthComponents)]
struct Components {
    postgres: &'static str,
    redis: &'static str,
    /// Absent when the service runs without a chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    chain: Option<&'static str>,
}

/// The report is the `data` of a normal envelope even when a component is down: the
/// components are what the caller needs, and the 503 status says the service is not ready.
#[utoipa::path(
    get,
    path = "/health",
    tag = "health",
    responses(
        (status = 200, description = "Every component is ok", body = Envelope<Health>),
        (status = 503, description = "A component is down (the report says which)", body = Envelope<Health>),
    )
)]
pub async fn health(State(state): State<AppState>) -> Data<Health> {
    let limit = state.http.health_timeout;
    let (postgres, redis, chain) = tokio::join!(
        check("postgres", limit, state.services.ping_postgres()),
        check("redis", limit, state.services.redis.ping()),
        chain_status(&state, limit),
    );
    let healthy = postgres == "ok" && redis == "ok" && chain.is_none_or(|c| c == "ok");
    let report = Health {
        status: if healthy { "ok" } else { "degraded" },
        timestamp: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
        components: Components { postgres, redis, chain },
    };
    let status = if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    Data(status, report, Meta::default())
}

async fn chain_status(state: &AppState, limit: Duration) -> Option<&'static str> {
    let chain = state.services.onchain.as_ref()?.chain();
    Some(match chain {
        AnyChain::Embedded(embedded) if !embedded.is_persisting() => {
            tracing::warn!(component = "chain", "health check: the embedded chain is retrying a write to Postgres");
            "down"
        }
        AnyChain::Embedded(_) => "ok",
        AnyChain::Rpc(rpc) => check("chain", limit, async { rpc.clock().await.map(|_| ()) }).await,
    })
}

async fn check<E: std::fmt::Display>(component: &'static str, limit: Duration, probe: impl Future<Output = Result<(), E>>) -> &'static str {
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
