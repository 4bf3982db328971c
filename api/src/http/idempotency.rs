//! `Idempotency-Key` at the HTTP edge: the header, and the response stored for the key (its
//! status and envelope) — the flow itself is `services::idempotency`.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::envelope::{self, Data};
use super::error::ApiError;
use crate::domain::caller::Caller;
use crate::services::idempotency::{self, Answer, SignatureLog};
use crate::services::{ServiceError, Services};

pub const HEADER: &str = "idempotency-key";

/// The key of a request, if it has one; 400 if it is malformed.
pub fn key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(HEADER) else { return Ok(None) };
    let key = value.to_str().map_err(|_| ApiError::InvalidInput("Idempotency-Key must be printable ASCII".into()))?;
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::InvalidInput("Idempotency-Key must be 1 to 255 printable characters without spaces".into()));
    }
    Ok(Some(key.to_owned()))
}

/// A transaction sent and not yet confirmed when the answer was due.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Pending {
    /// Always `pending`.
    #[schema(pattern = "^pending$", example = "pending")]
    status: &'static str,
    /// The transaction's signature (base-58).
    tx_sig: String,
    /// What to do next.
    message: &'static str,
}

/// 202 Accepted: the request's transaction was sent; it may still execute. The same request
/// with the same `Idempotency-Key` answers its outcome once the chain has it.
fn pending(signature: String) -> Response {
    let message = "sent, not confirmed yet: it may still execute; repeat the request with the same Idempotency-Key for its outcome, or look the signature up";
    Data(StatusCode::ACCEPTED, Pending { status: "pending", tx_sig: signature, message }, envelope::Meta::default()).into_response()
}

/// Answers a money-moving request under its `Idempotency-Key` (see `services::idempotency`);
/// what a key stores is the response as this layer renders it.
pub async fn idempotent<'a, T, Run, RunFut, Recover, RecoverFut>(
    services: &'a Services,
    caller: &Caller,
    headers: &HeaderMap,
    route: &str,
    body: &impl Serialize,
    run: Run,
    recover: Recover,
) -> Result<Response, ApiError>
where
    T: Serialize,
    Run: FnOnce(SignatureLog<'a>) -> RunFut,
    RunFut: Future<Output = Result<T, ServiceError>>,
    Recover: FnOnce(String) -> RecoverFut,
    RecoverFut: Future<Output = Result<Option<T>, ServiceError>>,
{
    let fingerprint = idempotency::fingerprint(route, body);
    let stored = |outcome: &Result<T, ServiceError>| match outcome {
        Ok(result) => (StatusCode::OK.as_u16(), envelope::data_json(result)),
        Err(e) => {
            let e = ApiError::from(e.clone());
            (e.status().as_u16(), envelope::error_json(e.status(), e.code(), &e.to_string()))
        }
    };
    match idempotency::run(services, caller.user_id, key(headers)?, &fingerprint, run, recover, stored).await? {
        Answer::Replayed { status, body } => Ok(envelope::stored(StatusCode::from_u16(status).unwrap_or(StatusCode::OK), body)),
        Answer::Fresh(Ok(result)) => Ok(Data::new(result).into_response()),
        Answer::Fresh(Err(ServiceError::Pending { signature })) => Ok(pending(signature)),
        Answer::Fresh(Err(e)) => Err(e.into()),
    }
}
