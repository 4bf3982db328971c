//! What a market is to the API: the side of a trade, the status of a round, and the one rule
//! for a price per share.

use serde::{Deserialize, Serialize};

/// A side of a binary market. The only `Side` of the API; the math and the program have their
/// own, converted at their boundaries (`lmsr::Side` here, the program's in `chain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Yes,
    No,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Yes => "yes",
            Side::No => "no",
        }
    }

    /// `yes` or `no`, exactly.
    pub fn parse(s: &str) -> Option<Side> {
        match s {
            "yes" => Some(Side::Yes),
            "no" => Some(Side::No),
            _ => None,
        }
    }
}

impl From<Side> for lmsr::Side {
    fn from(side: Side) -> lmsr::Side {
        match side {
            Side::Yes => lmsr::Side::Yes,
            Side::No => lmsr::Side::No,
        }
    }
}

impl From<lmsr::Side> for Side {
    fn from(side: lmsr::Side) -> Side {
        match side {
            lmsr::Side::Yes => Side::Yes,
            lmsr::Side::No => Side::No,
        }
    }
}

/// Where a round is in its life: pending → open → closed → resolving → settled |
/// voided. The first four follow the clock; the last two are final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarketStatus {
    Pending,
    Open,
    Closed,
    Resolving,
    Settled,
    Voided,
}

impl MarketStatus {
    pub const ALL: [MarketStatus; 6] =
        [MarketStatus::Pending, MarketStatus::Open, MarketStatus::Closed, MarketStatus::Resolving, MarketStatus::Settled, MarketStatus::Voided];

    pub fn as_str(self) -> &'static str {
        match self {
            MarketStatus::Pending => "pending",
            MarketStatus::Open => "open",
            MarketStatus::Closed => "closed",
            MarketStatus::Resolving => "resolving",
            MarketStatus::Settled => "settled",
            MarketStatus::Voided => "voided",
        }
    }

    pub fn parse(s: &str) -> Option<MarketStatus> {
        MarketStatus::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// Settled or voided: nothing about the round changes any more.
    pub fn is_final(self) -> bool {
        matches!(self, MarketStatus::Settled | MarketStatus::Voided)
    }

    /// The program can still create the market (the wallet-signed path).
    pub fn is_creatable(self) -> bool {
        matches!(self, MarketStatus::Pending | MarketStatus::Open)
    }
}

impl std::fmt::Display for MarketStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The price per share of `amount` micro-USDC for `shares` micro-shares, in micro-USDC per
/// share, rounded half up. The one rule for every price a trade, a quote or a position shows
/// (a trade's average price, a quote's `avg_price`, a position's `avg_price` from its basis).
pub fn per_share(amount: i64, shares: i64) -> i64 {
    if shares <= 0 {
        return 0;
    }
    ((amount as i128 * 1_000_000 + shares as i128 / 2) / shares as i128) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_and_statuses_parse_exactly() {
        assert_eq!(Side::parse("yes"), Some(Side::Yes));
        assert_eq!(Side::parse("YES"), None);
        for s in MarketStatus::ALL {
            assert_eq!(MarketStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert!(MarketStatus::Voided.is_final() && !MarketStatus::Resolving.is_final());
    }

    #[test]
    fn price_per_share_rounds_half_up() {
        assert_eq!(per_share(1_000_000, 2_000_000), 500_000);
        assert_eq!(per_share(1, 3), 333_333);
        assert_eq!(per_share(2, 3), 666_667);
        assert_eq!(per_share(5, 0), 0);
    }
}
