//! `Idempotency-Key` on requests that move money (DESIGN §7): the same key with the same
//! request answers the first response again and never acts twice; with another request it is
//! 409 `IDEMPOTENCY_KEY_REUSED`; while the first is running, 409 `IDEMPOTENCY_KEY_IN_USE`.
//!
//! Crash safety: the chain signature of the transaction a request sends is stored before it is
//! sent. A retry that finds its key unfinished after `store::idempotency::RECOVER_AFTER`
//! (longer than a blockhash stays valid, so the transaction can no longer land later) asks the
//! chain whether that signature landed: if so the response is rebuilt from it, if not the
//! request runs again.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::envelope::{self, Data};
use super::error::ApiError;
use crate::domain::caller::Caller;
use crate::services::{ServiceError, Services};
use crate::store::idempotency::{self, Claim, IdempotencyKey};

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

/// Runs a money-moving request under its `Idempotency-Key`, if it has one. `run` gets a
/// callback that records the transaction's signature before sending; `recover` rebuilds the
/// answer from a signature sent by a crashed attempt (`None`: it never landed, run again).
pub async fn idempotent<T, Run, RunFut, Recover, RecoverFut>(
    services: &Services,
    caller: &Caller,
    headers: &HeaderMap,
    route: &str,
    body: &impl Serialize,
    run: Run,
    recover: Recover,
) -> Result<Response, ApiError>
where
    T: Serialize,
    Run: FnOnce(Option<IdempotencyKey>) -> RunFut,
    RunFut: Future<Output = Result<T, ServiceError>>,
    Recover: FnOnce(String) -> RecoverFut,
    RecoverFut: Future<Output = Result<Option<T>, ServiceError>>,
{
    let Some(key) = key(headers)? else {
        return Ok(Data::new(run(None).await?).into_response());
    };
    let key = IdempotencyKey { user_id: caller.user_id, key };
    let db = &services.db;
    let fingerprint = idempotency::fingerprint(route, body);
    let again = || IdempotencyKey { user_id: key.user_id, key: key.key.clone() };
    let outcome = match key.claim(db, &fingerprint).await? {
        Claim::Replay { status, body } => {
            return Ok(envelope::stored(StatusCode::from_u16(status).unwrap_or(StatusCode::OK), body));
        }
        Claim::Mismatch => return Err(ApiError::IdempotencyKeyReused("this Idempotency-Key was used with a different request".into())),
        Claim::InUse => return Err(ApiError::IdempotencyKeyInUse("a request with this Idempotency-Key is still running; retry later".into())),
        Claim::Recover { signature } => match recover(signature).await {
            Ok(Some(done)) => Ok(done),
            Ok(None) => run(Some(again())).await,
            Err(e) => Err(e),
        },
        Claim::Run => run(Some(again())).await,
    };
    match outcome.map_err(ApiError::from) {
        Ok(result) => {
            key.finish(db, 200, &envelope::data_json(&result)).await?;
            Ok(Data::new(result).into_response())
        }
        // A fault of ours may have left a transaction in flight: keep the key unfinished so a
        // retry recovers it from the chain; if nothing was sent, forget it.
        Err(e @ ApiError::Internal(_)) => {
            key.release(db).await?;
            Err(e)
        }
        Err(e) => {
            key.finish(db, e.status().as_u16(), &envelope::error_json(e.status(), e.code(), &e.to_string())).await?;
            Err(e)
        }
    }
}
