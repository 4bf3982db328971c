//! API keys: `fmk_` + 48 hex characters; only their SHA-256 is stored.

use sha2::{Digest, Sha256};

pub const PREFIX: &str = "fmk_";
/// Characters of the key that listings show: the prefix and 8 hex characters.
pub const VISIBLE: usize = 12;
/// Active keys one user may hold at once.
pub const MAX_ACTIVE_PER_USER: i64 = 25;
/// Longest label, in characters.
pub const MAX_LABEL: usize = 64;

/// What a key may do. A wallet sign-in token may do everything; a key only what it was made
/// with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// `GET` endpoints.
    Read,
    /// Every other endpoint a key may call, but withdrawals: trades, profile changes.
    Trade,
    /// `POST /v1/withdraw`.
    Withdraw,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Trade, Scope::Withdraw];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Trade => "trade",
            Scope::Withdraw => "withdraw",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name)
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of scopes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Scopes(u8);

impl Scopes {
    /// What a key is made with when its request names none, and what keys made before scopes
    /// existed have.
    pub const DEFAULT: Scopes = Scopes(1 | 2);

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    /// The set of `names`; an unknown name, or none at all, is an error that says which.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Scopes, String> {
        let mut set = 0;
        for name in names {
            let scope = Scope::parse(name).ok_or_else(|| format!("unknown scope {name:?}: the scopes are read, trade and withdraw"))?;
            set |= scope.bit();
        }
        if set == 0 {
            return Err("scopes must name at least one of read, trade and withdraw".into());
        }
        Ok(Scopes(set))
    }

    /// The names, in the order of [`Scope::ALL`].
    pub fn names(self) -> Vec<&'static str> {
        Scope::ALL.into_iter().filter(|s| self.contains(*s)).map(Scope::as_str).collect()
    }
}

pub fn is_well_formed(key: &str) -> bool {
    key.strip_prefix(PREFIX).is_some_and(|hex| hex.len() == 48 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// A new random key.
pub fn generate() -> String {
    format!("{PREFIX}{}", hex::encode(rand::random::<[u8; 24]>()))
}

pub fn hash(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format() {
        assert!(is_well_formed(&format!("fmk_{}", "a1".repeat(24))));
        assert!(!is_well_formed(&format!("fmk_{}", "A1".repeat(24))));
        assert!(!is_well_formed(&format!("fmk_{}", "a1".repeat(23))));
        assert!(!is_well_formed(&format!("xyz_{}", "a1".repeat(24))));
        assert!(is_well_formed(&generate()));
    }

    #[test]
    fn scopes() {
        assert_eq!(Scopes::DEFAULT.names(), ["read", "trade"]);
        assert!(!Scopes::DEFAULT.contains(Scope::Withdraw));
        let all = Scopes::parse(["withdraw", "read", "trade", "read"]).unwrap();
        assert_eq!(all.names(), ["read", "trade", "withdraw"]);
        assert_eq!(Scopes::parse(["withdraw"]).unwrap().names(), ["withdraw"]);
        assert!(Scopes::parse([]).unwrap_err().contains("at least one"));
        assert!(Scopes::parse(["admin"]).unwrap_err().contains("\"admin\""));
        assert!(Scopes::parse(["READ"]).is_err(), "names are exact");
    }
}
