//! Access tokens: HS256 JWTs carrying the user id and wallet, with a fixed lifetime.

use std::time::Duration;

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    /// The user id.
    pub sub: Uuid,
    pub wallet: String,
    pub iat: i64,
    pub exp: i64,
}

pub struct TokenIssuer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    ttl: Duration,
}

impl TokenIssuer {
    pub fn new(secret: &[u8], ttl: Duration) -> TokenIssuer {
        // Only HS256 is accepted (no `none`, no algorithm confusion); expiry has no leeway.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "iat", "sub"]);
        TokenIssuer { encoding: EncodingKey::from_secret(secret), decoding: DecodingKey::from_secret(secret), validation, ttl }
    }

    /// A token for `user_id`, and when it expires.
    pub fn issue(&self, user_id: Uuid, wallet: &str, now: DateTime<Utc>) -> (String, DateTime<Utc>) {
        let expires_at = now + self.ttl;
        let claims = Claims { sub: user_id, wallet: wallet.to_owned(), iat: now.timestamp(), exp: expires_at.timestamp() };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).expect("HS256 encoding of plain claims cannot fail");
        (token, expires_at)
    }

    pub fn verify(&self, token: &str) -> Result<Claims, jsonwebtoken::errors::Error> {
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).map(|data| data.claims)
    }
}
