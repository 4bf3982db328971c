//! The Sign-In With Solana message (CAIP-122), byte for byte what the wallet signs.

use chrono::{DateTime, SecondsFormat, Utc};

pub const STATEMENT: &str = "Sign in to Funding Markets to trade funding-rate prediction markets.";

pub struct SignInMessage<'a> {
    pub domain: &'a str,
    pub address: &'a str,
    pub uri: &'a str,
    pub chain_id: &'a str,
    pub nonce: &'a str,
    pub issued_at: DateTime<Utc>,
    pub expiration: DateTime<Utc>,
}

impl std::fmt::Display for SignInMessage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ts = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Millis, true);
        write!(
            f,
            "{domain} wants you to sign in with your Solana account:\n{address}\n\n{STATEMENT}\n\n\
             URI: {uri}\nVersion: 1\nChain ID: {chain}\nNonce: {nonce}\nIssued At: {issued}\n\
             Expiration Time: {expires}",
            domain = self.domain,
            address = self.address,
            uri = self.uri,
            chain = self.chain_id,
            nonce = self.nonce,
            issued = ts(self.issued_at),
            expires = ts(self.expiration),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_caip_122_layout() {
        let at = DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z").unwrap().to_utc();
        let m = SignInMessage {
            domain: "app.example",
            address: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",
            uri: "https://app.example",
            chain_id: "mainnet",
            nonce: "0123456789abcdef0123456789abcdef",
            issued_at: at,
            expiration: at + chrono::Duration::minutes(5),
        };
        let expected = format!(
            "app.example wants you to sign in with your Solana account:\n\
             9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin\n\n{STATEMENT}\n\n\
             URI: https://app.example\nVersion: 1\nChain ID: mainnet\n\
             Nonce: 0123456789abcdef0123456789abcdef\nIssued At: 2026-11-21T10:00:00.000Z\n\
             Expiration Time: 2026-11-21T10:05:00.000Z"
        );
        assert_eq!(m.to_string(), expected);
    }
}
