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

impl SortBy {
    /// Whether the trader `a` ranks before `b` (`Less`), as Postgres orders them
    /// (`store::positions::leaderboard`): by P&L, then volume; by win rate (none settled counts
    /// as 0), then settled positions, then volume; by volume, then P&L. Ties go by wallet in byte
    /// order. Win rates compare as exact fractions.
    pub fn ranks_before(self, (a_wallet, a): (&str, &Totals), (b_wallet, b): (&str, &Totals)) -> std::cmp::Ordering {
        // wins / settled against wins' / settled', both settled > 0: cross-multiplied in i128.
        let rate = |t: &Totals| if t.settled == 0 { (0, 1) } else { (i128::from(t.wins), i128::from(t.settled)) };
        let by_rate = || {
            let ((aw, asettled), (bw, bsettled)) = (rate(a), rate(b));
            (bw * asettled).cmp(&(aw * bsettled))
        };
        let first = match self {
            SortBy::Pnl => b.realized_pnl.cmp(&a.realized_pnl).then(b.volume.cmp(&a.volume)),
            SortBy::WinRate => by_rate().then(b.settled.cmp(&a.settled)).then(b.volume.cmp(&a.volume)),
            SortBy::Volume => b.volume.cmp(&a.volume).then(b.realized_pnl.cmp(&a.realized_pnl)),
        };
        first.then_with(|| a_wallet.as_bytes().cmp(b_wallet.as_bytes()))
    }
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
    fn rankings_order_as_postgres_does() {
        use std::cmp::Ordering::{Greater, Less};
        let t = |realized_pnl, volume, settled, wins| Totals { realized_pnl, volume, trades: 1, settled, wins };
        // P&L, then volume, then wallet bytes (upper case before lower).
        assert_eq!(SortBy::Pnl.ranks_before(("b", &t(5, 1, 0, 0)), ("a", &t(4, 9, 0, 0))), Less);
        assert_eq!(SortBy::Pnl.ranks_before(("b", &t(5, 1, 0, 0)), ("a", &t(5, 2, 0, 0))), Greater);
        assert_eq!(SortBy::Pnl.ranks_before(("B", &t(5, 1, 0, 0)), ("a", &t(5, 1, 0, 0))), Less);
        // Win rate as a fraction: 2/3 after 1/1, 1/2 equal to 2/4 (then more settled first);
        // none settled counts as 0, below any win.
        assert_eq!(SortBy::WinRate.ranks_before(("a", &t(0, 0, 3, 2)), ("b", &t(0, 0, 1, 1))), Greater);
        assert_eq!(SortBy::WinRate.ranks_before(("a", &t(0, 0, 2, 1)), ("b", &t(0, 0, 4, 2))), Greater);
        assert_eq!(SortBy::WinRate.ranks_before(("a", &t(0, 9, 0, 0)), ("b", &t(0, 0, 7, 0))), Greater, "both 0: more settled first");
        assert_eq!(SortBy::WinRate.ranks_before(("a", &t(0, 0, 0, 0)), ("b", &t(0, 0, 9, 1))), Greater);
        // Volume, then P&L.
        assert_eq!(SortBy::Volume.ranks_before(("a", &t(-5, 10, 0, 0)), ("b", &t(5, 9, 0, 0))), Less);
        assert_eq!(SortBy::Volume.ranks_before(("a", &t(-5, 10, 0, 0)), ("b", &t(5, 10, 0, 0))), Greater);
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
