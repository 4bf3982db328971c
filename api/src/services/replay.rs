//! Anti-replay: a nonce is accepted once. Nonces live in Redis so every replica sees them;
//! the headers themselves are read by the HTTP layer (`http::auth::ReplayChecked`).

use super::{ServiceError, Services};

use uuid::Uuid;

/// Accepted clock skew either way, seconds.
pub const WINDOW_SECS: i64 = 300;

/// How far replicas' clocks may disagree, seconds: a nonce is remembered that much longer.
const REPLICA_SKEW_SECS: i64 = 60;

/// How long a nonce is remembered: as long as a request carrying it could still pass the
/// timestamp check. A request stamped up to `WINDOW_SECS` ahead is accepted until
/// `2 × WINDOW_SECS` after it was first used (on another replica, up to `REPLICA_SKEW_SECS`
/// later still); remembering it exactly `2 × WINDOW_SECS` would free it in the very second the
/// timestamp still passed.
pub const REMEMBERED_SECS: i64 = 2 * WINDOW_SECS + REPLICA_SKEW_SECS;

/// Records `nonce` as used by `user`; `ReplayDetected` if that user already used it. Bound to
/// the caller, so nobody can spend another caller's nonce ahead of them. Lower-cased so hex
/// case variants are the same nonce.
pub async fn use_nonce(s: &Services, user: Uuid, nonce: &str) -> Result<(), ServiceError> {
    let key = s.redis.key("replay", format_args!("{}:{}", user.simple(), nonce.to_ascii_lowercase()));
    if s.redis.set_new(&key, "1", REMEMBERED_SECS as u64).await? {
        Ok(())
    } else {
        Err(ServiceError::ReplayDetected("X-Request-Nonce was already used".into()))
    }
}
