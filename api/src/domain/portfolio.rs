//! A wallet's positions and results, in integers.
//!
//! Cost basis of a position side: what its buys cost (fees included) less what its sells
//! returned (net of fees), never below zero. Realized P&L is booked at settlement (kept per day
//! by the projection); unrealized P&L is an open side's value at the market's current price
//! less its basis.

use chrono::{DateTime, Days, NaiveDate, Utc};
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

/// A leaderboard period: `24h` the last 24 hours, `7d` and `30d` whole UTC days (today and the
/// 7 or 30 before it), `all` all time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Period {
    Day,
    Week,
    Month,
    All,
}

/// Where a leaderboard period starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeriodStart {
    /// From this UTC day on (the per-day statistics).
    Day(NaiveDate),
    /// From just after this instant, a whole second (trades and settlements by their time).
    After(DateTime<Utc>),
}

impl Period {
    /// Where the period starts at `now` (`None`: all time). The 24 hours end at `now`'s whole
    /// second, so requests within a second share one ranking.
    pub fn start(self, now: DateTime<Utc>) -> Option<PeriodStart> {
        let days_back = |days: u64| Some(PeriodStart::Day(now.date_naive() - Days::new(days)));
        match self {
            Period::Day => {
                let second = DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
                Some(PeriodStart::After(second - chrono::Duration::hours(24)))
            }
            Period::Week => days_back(7),
            Period::Month => days_back(30),
            Period::All => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_start_where_their_names_say() {
        let now = DateTime::parse_from_rfc3339("2026-11-28T09:30:15.750Z").unwrap().with_timezone(&Utc);
        let after = DateTime::parse_from_rfc3339("2026-11-27T09:30:15Z").unwrap().with_timezone(&Utc);
        assert_eq!(Period::Day.start(now), Some(PeriodStart::After(after)), "the last 24 hours, not two UTC days");
        assert_eq!(Period::Week.start(now), Some(PeriodStart::Day(NaiveDate::from_ymd_opt(2026, 11, 21).unwrap())));
        assert_eq!(Period::Month.start(now), Some(PeriodStart::Day(NaiveDate::from_ymd_opt(2026, 10, 29).unwrap())));
        assert_eq!(Period::All.start(now), None);
    }

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
