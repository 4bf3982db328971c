//! Series definitions: one per (exchange, symbol), with a tier that sets the LMSR liquidity b.
//! (Stored by `store::series`; the default set is configuration, `app::config`.)

use super::exchange::{Exchange, split_symbol};

/// b by tier, micro-USDC: tier 1 (BTC, ETH, SOL) 200 USDC, tier 2 (top 50) 100,
/// tier 3 (the rest) 50.
pub fn liquidity_for_tier(tier: u8) -> u64 {
    match tier {
        1 => 200_000_000,
        2 => 100_000_000,
        _ => 50_000_000,
    }
}

/// The tier of a base asset.
pub fn tier_of(base: &str) -> u8 {
    const TIER_1: [&str; 3] = ["BTC", "ETH", "SOL"];
    const TIER_2: [&str; 12] = ["DOGE", "XRP", "BNB", "ADA", "AVAX", "TON", "SUI", "LINK", "DOT", "LTC", "HYPE", "TRX"];
    if TIER_1.contains(&base) {
        1
    } else if TIER_2.contains(&base) {
        2
    } else {
        3
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesSpec {
    pub exchange: Exchange,
    /// `<BASE><QUOTE>`.
    pub symbol: String,
    /// Minutes between settlements: the venue's interval (60, 120, 240 or 480; the scheduler
    /// then follows what the venue reports), or a divisor of an hour for short demo rounds.
    pub interval_minutes: u32,
}

/// Short rounds: the minute intervals `FM_SERIES` accepts (divisors of an hour).
pub const ROUND_MINUTES: [u32; 11] = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30];
/// The venues' funding intervals, hours.
pub const VENUE_HOURS: [u32; 4] = [1, 2, 4, 8];

impl SeriesSpec {
    /// The venue's interval in whole hours as first stored (a short-round series: 1; the
    /// scheduler corrects it from the venue).
    pub fn interval_hours(&self) -> u32 {
        (self.interval_minutes / 60).max(1)
    }

    /// Set for a series whose rounds are shorter than an hour (demos and tests on the simulated
    /// exchange): the round length in minutes, whatever the venue's interval.
    pub fn round_minutes(&self) -> Option<u32> {
        (self.interval_minutes < 60).then_some(self.interval_minutes)
    }

    pub fn slug(&self) -> String {
        format!("{}-{}", self.exchange.id(), self.symbol.to_lowercase())
    }

    pub fn display_name(&self) -> String {
        match split_symbol(&self.symbol) {
            Some((base, quote)) => format!("{base}/{quote}"),
            None => self.symbol.clone(),
        }
    }

    pub fn tier(&self) -> u8 {
        split_symbol(&self.symbol).map_or(3, |(base, _)| tier_of(base))
    }
}

/// Parses `exchange:SYMBOL[:interval]` items separated by commas. The interval is hours (`8`,
/// `8h`: 1, 2, 4 or 8; it defaults to 1 hour on Hyperliquid and 8 elsewhere, and the scheduler
/// then follows what the venue reports) or minutes for short rounds (`5m`: a divisor of an
/// hour, on the simulated exchange).
pub fn parse_list(list: &str) -> Result<Vec<SeriesSpec>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let parts: Vec<&str> = item.split(':').collect();
            let (exchange, symbol, interval) = match parts.as_slice() {
                [e, s] => (*e, *s, None),
                [e, s, i] => (*e, *s, Some(*i)),
                _ => return Err(format!("{item:?}: expected exchange:SYMBOL[:interval]")),
            };
            let exchange = Exchange::parse(exchange).ok_or_else(|| format!("{item:?}: unknown exchange"))?;
            if split_symbol(symbol).is_none() || !symbol.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()) {
                return Err(format!("{item:?}: symbol must be <BASE><QUOTE> in capitals, e.g. BTCUSDT"));
            }
            let interval_minutes = match interval {
                Some(m) if m.ends_with('m') => m[..m.len() - 1]
                    .parse()
                    .ok()
                    .filter(|m| ROUND_MINUTES.contains(m))
                    .ok_or_else(|| format!("{item:?}: minutes must divide an hour: one of {ROUND_MINUTES:?}"))?,
                Some(h) => h
                    .strip_suffix('h')
                    .unwrap_or(h)
                    .parse()
                    .ok()
                    .filter(|h| VENUE_HOURS.contains(h))
                    .map(|h| h * 60)
                    .ok_or_else(|| format!("{item:?}: hours must be 1, 2, 4 or 8 (or minutes such as 5m)"))?,
                None if exchange == Exchange::Hyperliquid => 60,
                None => 480,
            };
            Ok(SeriesSpec { exchange, symbol: symbol.to_owned(), interval_minutes })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tiers() {
        let s = SeriesSpec { exchange: Exchange::Binance, symbol: "1000PEPEUSDT".into(), interval_minutes: 480 };
        assert_eq!((s.slug().as_str(), s.display_name().as_str(), s.tier()), ("binance-1000pepeusdt", "1000PEPE/USDT", 3));
        let btc = SeriesSpec { exchange: Exchange::Hyperliquid, symbol: "BTCUSDC".into(), interval_minutes: 60 };
        assert_eq!((btc.slug().as_str(), btc.tier(), liquidity_for_tier(btc.tier())), ("hyperliquid-btcusdc", 1, 200_000_000));
    }

    #[test]
    fn series_lists_parse_with_clear_errors() {
        let specs = parse_list("binance:BTCUSDT, hyperliquid:ETHUSDC ,okx:SOLUSDT:4,bybit:SUIUSDT:2h,binance:ETHUSDT:5m").unwrap();
        assert_eq!(specs.iter().map(|s| s.interval_minutes).collect::<Vec<_>>(), [480, 60, 240, 120, 5]);
        assert_eq!(specs.iter().map(SeriesSpec::round_minutes).collect::<Vec<_>>(), [None, None, None, None, Some(5)]);
        assert_eq!((specs[4].interval_hours(), specs[0].interval_hours()), (1, 8));
        assert_eq!(specs[2].slug(), "okx-solusdt");
        for bad in [
            "ftx:BTCUSDT",
            "binance:btcusdt",
            "binance:BTC",
            "binance:BTCUSDT:3",
            "binance",
            "binance:BTCUSDT:7m",
            "binance:BTCUSDT:60m",
            "binance:BTCUSDT:0m",
            "binance:BTCUSDT:m",
        ] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
    }
}
