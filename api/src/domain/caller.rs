//! Who is calling, once authenticated.

use uuid::Uuid;

use super::api_key::{Scope, Scopes};

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
    /// `X-API-Key`, with the key's id (its rate-limit bucket) and what it may do.
    ApiKey { key_id: Uuid, scopes: Scopes },
}

impl Caller {
    /// Whether the caller may act in `scope`: a sign-in token in any, a key in its own.
    pub fn may(&self, scope: Scope) -> bool {
        match self.method {
            AuthMethod::Token => true,
            AuthMethod::ApiKey { scopes, .. } => scopes.contains(scope),
        }
    }
}
