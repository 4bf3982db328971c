//! The `Idempotency-Key` flow for requests that move money (the key's rows are
//! `store::idempotency`): the same key with the same request answers the stored response again
//! and never acts twice; with another request it is `IdempotencyKeyReused`; while the first is
//! running, `IdempotencyKeyInUse`.
//!
//! Crash safety: the signature of the transaction a request sends is recorded ([`SignatureLog`])
//! before it is sent. A retry that finds its key unfinished after
//! `store::idempotency::RECOVER_AFTER` (longer than a blockhash stays valid, so the transaction
//! can no longer land later) asks the chain whether it landed: if so the answer is rebuilt from
//! it, if not the request runs again.

use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::{ServiceError, Services};
use crate::store::idempotency::{Claim, IdempotencyKey};

/// What pins a key to one request: its route and body.
pub fn fingerprint(route: &str, body: &impl serde::Serialize) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(route.as_bytes());
    hash.update([0]);
    hash.update(serde_json::to_vec(body).unwrap_or_default());
    hash.finalize().to_vec()
}

/// Where a money-moving use case records its transaction's signature before sending it: on
/// the request's idempotency key, or nowhere when the request has none.
pub struct SignatureLog<'a> {
    services: &'a Services,
    key: Option<IdempotencyKey>,
}

impl SignatureLog<'_> {
    pub async fn sending(&self, signature: &str) -> Result<(), ServiceError> {
        if let Some(key) = &self.key {
            key.sending(&self.services.db, signature).await?;
        }
        Ok(())
    }
}

fn in_use() -> ServiceError {
    ServiceError::IdempotencyKeyInUse("a request with this Idempotency-Key is still running; retry later".into())
}

/// The answer to an idempotent request.
pub enum Answer<T> {
    /// Run now (or recovered from the chain).
    Fresh(Result<T, ServiceError>),
    /// Answered before: the stored response, as `stored` encoded it then.
    Replayed { status: u16, body: Value },
}

/// Runs `run` under the request's key (if any). `recover` rebuilds the answer from a signature
/// a crashed attempt sent (`None`: it never landed, so the request runs again). `stored`
/// encodes an outcome as the response every later use of the key gets; a fault of ours is not
/// stored (the key is kept unfinished if a transaction may be in flight, forgotten otherwise).
pub async fn run<'a, T, Run, RunFut, Recover, RecoverFut>(
    services: &'a Services,
    user_id: Uuid,
    key: Option<String>,
    fingerprint: &[u8],
    run: Run,
    recover: Recover,
    stored: impl FnOnce(&Result<T, ServiceError>) -> (u16, Value),
) -> Result<Answer<T>, ServiceError>
where
    Run: FnOnce(SignatureLog<'a>) -> RunFut,
    RunFut: Future<Output = Result<T, ServiceError>>,
    Recover: FnOnce(String) -> RecoverFut,
    RecoverFut: Future<Output = Result<Option<T>, ServiceError>>,
{
    let Some(key) = key else {
        return Ok(Answer::Fresh(run(SignatureLog { services, key: None }).await));
    };
    let key = IdempotencyKey { user_id, key };
    let db = &services.db;
    let log = || SignatureLog { services, key: Some(IdempotencyKey { user_id: key.user_id, key: key.key.clone() }) };
    let outcome = match key.claim(db, fingerprint).await? {
        Claim::Replay { status, body } => return Ok(Answer::Replayed { status, body }),
        Claim::Mismatch => return Err(ServiceError::IdempotencyKeyReused("this Idempotency-Key was used with a different request".into())),
        // The first attempt sent its transaction and has not answered (it may have been told
        // "pending"): if the transaction landed, that is the answer, whoever gives it first.
        Claim::InUse { signature: Some(signature) } => match recover(signature).await? {
            Some(done) => Ok(done),
            None => return Err(in_use()),
        },
        Claim::InUse { signature: None } => return Err(in_use()),
        Claim::Recover { signature } => match recover(signature).await {
            Ok(Some(done)) => Ok(done),
            Ok(None) => run(log()).await,
            Err(e) => Err(e),
        },
        Claim::Run => run(log()).await,
    };
    match &outcome {
        Err(ServiceError::Internal(_)) => key.release(db).await?,
        // Sent, outcome unknown: the key keeps its signature for the retry to ask about.
        Err(ServiceError::Pending { .. }) => {}
        _ => {
            let (status, body) = stored(&outcome);
            key.finish(db, status, &body).await?;
        }
    }
    Ok(Answer::Fresh(outcome))
}
