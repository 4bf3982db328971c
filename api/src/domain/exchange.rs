//! The venues a series can be on, and how a perpetual's symbol is written.

/// A venue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Exchange {
    Binance,
    Bybit,
    Okx,
    Hyperliquid,
}

impl Exchange {
    pub const ALL: [Exchange; 4] = [Exchange::Binance, Exchange::Bybit, Exchange::Okx, Exchange::Hyperliquid];

    /// The lowercase identifier used in slugs and the API.
    pub fn id(self) -> &'static str {
        match self {
            Exchange::Binance => "binance",
            Exchange::Bybit => "bybit",
            Exchange::Okx => "okx",
            Exchange::Hyperliquid => "hyperliquid",
        }
    }

    /// The venue's name as people write it (market questions).
    pub fn name(self) -> &'static str {
        match self {
            Exchange::Binance => "Binance",
            Exchange::Bybit => "Bybit",
            Exchange::Okx => "OKX",
            Exchange::Hyperliquid => "Hyperliquid",
        }
    }

    pub fn parse(s: &str) -> Option<Exchange> {
        Exchange::ALL.into_iter().find(|e| e.id() == s)
    }
}

/// A symbol as `<BASE><QUOTE>` (e.g. `BTCUSDT`); each adapter maps it to its venue's name.
pub fn split_symbol(symbol: &str) -> Option<(&str, &str)> {
    ["USDT", "USDC", "USD"].into_iter().find_map(|quote| symbol.strip_suffix(quote).filter(|base| !base.is_empty()).map(|base| (base, quote)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_split_into_base_and_quote() {
        assert_eq!(split_symbol("BTCUSDT"), Some(("BTC", "USDT")));
        assert_eq!(split_symbol("1000PEPEUSDC"), Some(("1000PEPE", "USDC")));
        assert_eq!(split_symbol("ETHUSD"), Some(("ETH", "USD")));
        assert_eq!(split_symbol("USDT"), None);
        assert_eq!(split_symbol("BTC"), None);
    }

    #[test]
    fn ids_round_trip() {
        for e in Exchange::ALL {
            assert_eq!(Exchange::parse(e.id()), Some(e));
        }
        assert_eq!(Exchange::parse("ftx"), None);
    }
}
