//! Series definitions: one per (exchange, symbol), with a tier that sets the LMSR liquidity b.

use sqlx::PgPool;
use uuid::Uuid;

use crate::exchanges::{Exchange, split_symbol};

/// b by tier, micro-USDC (DESIGN §4): tier 1 (BTC, ETH, SOL) 200 USDC, tier 2 (top 50) 100,
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
    pub interval_hours: u32,
}

impl SeriesSpec {
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

/// The default set: twenty series across the four venues (the simulated exchange serves the
/// same ones).
pub fn default_series() -> Vec<SeriesSpec> {
    sim_exchange::default_symbols()
        .into_iter()
        .map(|s| SeriesSpec {
            exchange: Exchange::parse(s.venue).expect("the simulator's venues are ours"),
            symbol: s.symbol,
            interval_hours: s.interval_hours as u32,
        })
        .collect()
}

/// Parses `exchange:SYMBOL[:interval_hours]` items separated by commas (the interval defaults
/// to 1 hour on Hyperliquid and 8 elsewhere; the scheduler then follows what the venue reports).
pub fn parse_list(list: &str) -> Result<Vec<SeriesSpec>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let parts: Vec<&str> = item.split(':').collect();
            let (exchange, symbol, interval) = match parts.as_slice() {
                [e, s] => (*e, *s, None),
                [e, s, i] => (*e, *s, Some(*i)),
                _ => return Err(format!("{item:?}: expected exchange:SYMBOL[:hours]")),
            };
            let exchange = Exchange::parse(exchange).ok_or_else(|| format!("{item:?}: unknown exchange"))?;
            if split_symbol(symbol).is_none() || !symbol.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()) {
                return Err(format!("{item:?}: symbol must be <BASE><QUOTE> in capitals, e.g. BTCUSDT"));
            }
            let interval_hours = match interval {
                Some(h) => h.parse().ok().filter(|h| [1, 2, 4, 8].contains(h)).ok_or_else(|| format!("{item:?}: hours must be 1, 2, 4 or 8"))?,
                None if exchange == Exchange::Hyperliquid => 1,
                None => 8,
            };
            Ok(SeriesSpec { exchange, symbol: symbol.to_owned(), interval_hours })
        })
        .collect()
}

/// Inserts the series that do not exist yet, in one statement (start-up runs this with every
/// configured series). Idempotent. Returns how many were new.
pub async fn ensure(db: &PgPool, specs: &[SeriesSpec]) -> Result<u64, sqlx::Error> {
    let ids: Vec<Uuid> = specs.iter().map(|_| Uuid::new_v4()).collect();
    let exchanges: Vec<&str> = specs.iter().map(|s| s.exchange.id()).collect();
    let symbols: Vec<&str> = specs.iter().map(|s| s.symbol.as_str()).collect();
    let slugs: Vec<String> = specs.iter().map(SeriesSpec::slug).collect();
    let names: Vec<String> = specs.iter().map(SeriesSpec::display_name).collect();
    let tiers: Vec<i16> = specs.iter().map(|s| s.tier() as i16).collect();
    let liquidity: Vec<i64> = specs.iter().map(|s| liquidity_for_tier(s.tier()) as i64).collect();
    let intervals: Vec<i16> = specs.iter().map(|s| s.interval_hours as i16).collect();
    let done = sqlx::query(
        "INSERT INTO series (id, exchange, symbol, slug, display_name, tier, liquidity_b, interval_hours)
         SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::bigint[], $8::smallint[])
         ON CONFLICT (exchange, symbol) DO NOTHING",
    )
    .bind(&ids)
    .bind(&exchanges)
    .bind(&symbols)
    .bind(&slugs)
    .bind(&names)
    .bind(&tiers)
    .bind(&liquidity)
    .bind(&intervals)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// The simulated exchange's view of `specs`, so the embedded default serves exactly the
/// configured series (any symbol, on any venue).
pub fn simulated(specs: &[SeriesSpec]) -> Vec<sim_exchange::SimSymbol> {
    specs
        .iter()
        .map(|s| sim_exchange::SimSymbol { venue: s.exchange.id(), symbol: s.symbol.clone(), interval_hours: s.interval_hours as i64 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tiers() {
        let s = SeriesSpec { exchange: Exchange::Binance, symbol: "1000PEPEUSDT".into(), interval_hours: 8 };
        assert_eq!((s.slug().as_str(), s.display_name().as_str(), s.tier()), ("binance-1000pepeusdt", "1000PEPE/USDT", 3));
        let btc = SeriesSpec { exchange: Exchange::Hyperliquid, symbol: "BTCUSDC".into(), interval_hours: 1 };
        assert_eq!((btc.slug().as_str(), btc.tier(), liquidity_for_tier(btc.tier())), ("hyperliquid-btcusdc", 1, 200_000_000));
        assert_eq!(default_series().len(), 20);
    }

    #[test]
    fn series_lists_parse_with_clear_errors() {
        let specs = parse_list("binance:BTCUSDT, hyperliquid:ETHUSDC ,okx:SOLUSDT:4").unwrap();
        assert_eq!(specs.iter().map(|s| s.interval_hours).collect::<Vec<_>>(), [8, 1, 4]);
        assert_eq!(specs[2].slug(), "okx-solusdt");
        for bad in ["ftx:BTCUSDT", "binance:btcusdt", "binance:BTC", "binance:BTCUSDT:3", "binance"] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
    }
}
