//! Anti-replay: a nonce is accepted once. Nonces live in Redis so every replica sees them;
//! the headers themselves are read by the HTTP layer (`http::auth::ReplayChecked`).

use super::{ServiceError, Services};

/// Accepted clock skew either way, seconds.
pub const WINDOW_SECS: i64 = 300;

/// Records `nonce` as used; `ReplayDetected` if it was already. Remembered for twice the
/// window: a nonce can never be replayed while its timestamp could still pass. Lower-cased so
/// hex case variants are the same nonce.
pub async fn use_nonce(s: &Services, nonce: &str) -> Result<(), ServiceError> {
    let key = s.redis.key("replay", &nonce.to_ascii_lowercase());
    if s.redis.set_new(&key, "1", 2 * WINDOW_SECS as u64).await? {
        Ok(())
    } else {
        Err(ServiceError::ReplayDetected("X-Request-Nonce was already used".into()))
    }
}
