//! Solana wallet addresses and their ed25519 signatures.

use ed25519_dalek::{Signature, VerifyingKey};

/// A wallet address: the base58 of a 32-byte ed25519 public key that lies on the curve (a
/// program-derived address cannot sign, so it cannot sign in).
#[derive(Clone, Debug)]
pub struct WalletAddress {
    base58: String,
    key: VerifyingKey,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("signature must be base58")]
    NotBase58,
    #[error("signature must be 64 bytes")]
    WrongLength,
    #[error("signature does not verify for this wallet and message")]
    Mismatch,
}

impl WalletAddress {
    pub fn parse(s: &str) -> Option<WalletAddress> {
        let bytes: [u8; 32] = bs58::decode(s).into_vec().ok()?.try_into().ok()?;
        let key = VerifyingKey::from_bytes(&bytes).ok()?;
        // Re-encoding rejects non-canonical spellings (leading zeros) of the same key.
        (bs58::encode(bytes).into_string() == s).then(|| WalletAddress { base58: s.to_owned(), key })
    }

    pub fn as_str(&self) -> &str {
        &self.base58
    }

    /// Checks a base58 ed25519 signature over exactly `message` (strict verification: no
    /// malleable or small-order signatures).
    pub fn verify(&self, message: &[u8], signature_base58: &str) -> Result<(), SignatureError> {
        let bytes = bs58::decode(signature_base58).into_vec().map_err(|_| SignatureError::NotBase58)?;
        let bytes: [u8; 64] = bytes.try_into().map_err(|_| SignatureError::WrongLength)?;
        self.key.verify_strict(message, &Signature::from_bytes(&bytes)).map_err(|_| SignatureError::Mismatch)
    }
}
