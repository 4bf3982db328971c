//! Who is calling, once authenticated.

use uuid::Uuid;

/// An authenticated caller.
#[derive(Clone, Debug)]
pub struct Caller {
    pub user_id: Uuid,
    pub wallet: String,
    pub method: AuthMethod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// `Authorization: Bearer <JWT>` from a wallet sign-in.
    Token,
    /// `X-API-Key`, with the key's id (its rate-limit bucket).
    ApiKey { key_id: Uuid },
}
