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

/// Inserts the series that do not exist yet (idempotent). Returns how many were new.
pub async fn ensure(db: &PgPool, specs: &[SeriesSpec]) -> Result<u64, sqlx::Error> {
    let mut created = 0;
    for spec in specs {
        let done = sqlx::query(
            "INSERT INTO series (id, exchange, symbol, slug, display_name, tier, liquidity_b, interval_hours)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (exchange, symbol) DO NOTHING",
        )
        .bind(Uuid::new_v4())
        .bind(spec.exchange.id())
        .bind(&spec.symbol)
        .bind(spec.slug())
        .bind(spec.display_name())
        .bind(spec.tier() as i16)
        .bind(liquidity_for_tier(spec.tier()) as i64)
        .bind(spec.interval_hours as i16)
        .execute(db)
        .await?;
        created += done.rows_affected();
    }
    Ok(created)
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
}
