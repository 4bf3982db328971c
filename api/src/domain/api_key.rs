//! API keys: `fmk_` + 48 hex characters; only their SHA-256 is stored.

use sha2::{Digest, Sha256};

pub const PREFIX: &str = "fmk_";
/// Characters of the key that listings show: the prefix and 8 hex characters.
pub const VISIBLE: usize = 12;
/// Active keys one user may hold at once.
pub const MAX_ACTIVE_PER_USER: i64 = 25;
/// Longest label, in characters.
pub const MAX_LABEL: usize = 64;

pub fn is_well_formed(key: &str) -> bool {
    key.strip_prefix(PREFIX)
        .is_some_and(|hex| hex.len() == 48 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
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
}
