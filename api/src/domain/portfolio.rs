//! A wallet's positions and results, in integers.
//!
//! Cost basis of a position side: what its buys cost (fees included) less what its sells
//! returned (net of fees), never below zero. Realized P&L is booked at settlement (kept per day
//! by the projection); unrealized P&L is an open side's value at the market's current price
//! less its basis.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::market::{Side, per_share};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenPosition {
    pub market_id: Uuid,
    pub symbol: String,
    pub exchange: String,
    pub side: Side,
    /// Micro-shares held.
    pub shares: i64,
    /// Micro-USDC.
    pub basis: i64,
    /// The side's current price, millionths.
    pub price_ppm: i64,
    pub settlement_ts: DateTime<Utc>,
}

impl OpenPosition {
    /// What the shares are worth at the current price, micro-USDC (rounded down: a value is
    /// never overstated).
    pub fn value(&self) -> i64 {
        (self.shares as i128 * self.price_ppm as i128 / 1_000_000) as i64
    }

    pub fn unrealized_pnl(&self) -> i64 {
        self.value() - self.basis
    }

    /// Basis per share (`market::per_share`).
    pub fn avg_price(&self) -> i64 {
        per_share(self.basis, self.shares)
    }
}

/// A wallet's totals over a period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub realized_pnl: i64,
    pub volume: i64,
    pub trades: i64,
    pub settled: i64,
    pub wins: i64,
}

impl Totals {
    /// Wins over settled positions, in millionths (0 with none settled).
    pub fn win_rate_ppm(&self) -> i64 {
        if self.settled == 0 { 0 } else { self.wins * 1_000_000 / self.settled }
    }
}

/// What the leaderboard ranks by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortBy {
    Pnl,
    WinRate,
    Volume,
}

/// A leaderboard period, in whole UTC days back from today (`None`: all time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Period {
    Day,
    Week,
    Month,
    All,
}

impl Period {
    pub fn days(self) -> Option<u64> {
        match self {
            Period::Day => Some(1),
            Period::Week => Some(7),
            Period::Month => Some(30),
            Period::All => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_math() {
        let p = OpenPosition {
            market_id: Uuid::nil(),
            symbol: "BTCUSDT".into(),
            exchange: "binance".into(),
            side: Side::Yes,
            shares: 3_000_000,
            basis: 2_000_000,
            price_ppm: 600_000,
            settlement_ts: Utc::now(),
        };
        assert_eq!((p.value(), p.unrealized_pnl(), p.avg_price()), (1_800_000, -200_000, 666_667));
        let t = Totals { settled: 3, wins: 2, ..Totals::default() };
        assert_eq!(t.win_rate_ppm(), 666_666);
    }
}
