//! The route table: `/health` at the root, everything else under `/v1`.

mod health;

use axum::Router;
use axum::routing::get;

use crate::AppState;

pub fn router(state: AppState) -> Router {
    let v1 = Router::new();
    Router::new()
        .route("/health", get(health::health))
        .nest("/v1", v1)
        .with_state(state)
}
