//! Funding-interval history and crowd positioning: how intervals are written and analysed, and
//! how long/short shares are shown. Pure functions; the collectors and the routes share them.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};

/// An interval as the contract writes it: whole hours as `8h`, anything else in minutes (`5m`,
/// the simulator's short rounds).
pub fn interval_label(minutes: i32) -> String {
    match minutes % 60 {
        0 => format!("{}h", minutes / 60),
        _ => format!("{minutes}m"),
    }
}

/// Which perps a listing shows.
#[derive(Clone, Debug, Default)]
pub struct PerpFilter {
    pub exchange: Option<String>,
    /// A substring of the symbol, any case.
    pub search: Option<String>,
}

/// How the threaded view of interval changes is ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadSort {
    Changes,
    Symbol,
}

/// Which side the crowd leaderboard ranks by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrowdSort {
    MostShorted,
    MostLonged,
}

/// One change of a perp's funding interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntervalChange {
    pub from_minutes: i32,
    pub to_minutes: i32,
    pub changed_at: DateTime<Utc>,
}

impl IntervalChange {
    /// `8h_to_4h`.
    pub fn direction(&self) -> String {
        format!("{}_to_{}", interval_label(self.from_minutes), interval_label(self.to_minutes))
    }

    /// How far the interval moved, in octaves: |log2(to ÷ from)| (8h → 4h is 1, 8h → 1h is 3).
    fn octaves(&self) -> f64 {
        (self.to_minutes as f64 / self.from_minutes as f64).log2().abs()
    }
}

/// The window `volatility_score` looks back over.
pub const VOLATILITY_WINDOW: Duration = Duration::days(90);

/// What `/v1/intervals/{exchange}/{symbol}/analysis` reports. Not money: floats are fine here.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    pub total_changes: i64,
    /// Mean days between consecutive changes; with one change, the days from the first
    /// observation of the perp to it; with none, 0. Two decimals.
    pub avg_days_between_changes: f64,
    /// The most frequent `from_to_to` (ties: the most recent of them); `none` without changes.
    pub most_common_direction: String,
    /// Octaves of interval change per 30 days over the last 90 days (or since the perp was
    /// first seen, if later; at least a day): Σ |log2(to ÷ from)| × 30 ÷ days. 0 = steady;
    /// one 8h → 4h change in 90 days ≈ 0.33; an interval flipping 8h ↔ 4h every week ≈ 4.3.
    /// Two decimals.
    pub volatility_score: f64,
}

fn two_decimals(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Analyses a perp's changes (any order) since `first_seen`, as of `now`.
pub fn analyse(first_seen: DateTime<Utc>, changes: &[IntervalChange], now: DateTime<Utc>) -> Analysis {
    let mut sorted = changes.to_vec();
    sorted.sort_by_key(|c| c.changed_at);
    let days = |d: Duration| d.num_milliseconds() as f64 / 86_400_000.0;
    let avg_days_between_changes = match sorted.as_slice() {
        [] => 0.0,
        [only] => days(only.changed_at - first_seen),
        [first, .., last] => days(last.changed_at - first.changed_at) / (sorted.len() - 1) as f64,
    };
    // Count directions; among the most frequent, the one seen last wins.
    let mut counts: HashMap<String, (usize, DateTime<Utc>)> = HashMap::new();
    for c in &sorted {
        let entry = counts.entry(c.direction()).or_insert((0, c.changed_at));
        *entry = (entry.0 + 1, c.changed_at);
    }
    let most_common_direction = counts.into_iter().max_by_key(|(_, (n, last))| (*n, *last)).map_or_else(|| "none".to_owned(), |(d, _)| d);
    let since = (now - VOLATILITY_WINDOW).max(first_seen);
    let window_days = days(now - since).max(1.0);
    let octaves: f64 = sorted.iter().filter(|c| c.changed_at >= since).map(IntervalChange::octaves).sum();
    Analysis {
        total_changes: sorted.len() as i64,
        avg_days_between_changes: two_decimals(avg_days_between_changes.max(0.0)),
        most_common_direction,
        volatility_score: two_decimals(octaves * 30.0 / window_days),
    }
}

/// A share (0 to 1,000,000 ppm) as shown: four decimals, the venues' own precision, rounded
/// half up.
pub fn shown_share_ppm(share_ppm: i32) -> i64 {
    (share_ppm.max(0) as i64 + 50) / 100 * 100
}

/// Long minus short as shown (each rounded to four decimals first, so that subtracting the
/// shown shares gives exactly the shown net), millionths: positive when the crowd is net long.
pub fn net_position_ppm(long_ppm: i32, short_ppm: i32) -> i64 {
    shown_share_ppm(long_ppm) - shown_share_ppm(short_ppm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(day: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::days(day)
    }

    fn change(from: i32, to: i32, day: i64) -> IntervalChange {
        IntervalChange { from_minutes: from, to_minutes: to, changed_at: at(day) }
    }

    #[test]
    fn labels() {
        assert_eq!(interval_label(480), "8h");
        assert_eq!(interval_label(60), "1h");
        assert_eq!(interval_label(5), "5m");
        assert_eq!(interval_label(90), "90m");
        assert_eq!(change(480, 240, 0).direction(), "8h_to_4h");
    }

    #[test]
    fn no_changes() {
        let a = analyse(at(0), &[], at(100));
        assert_eq!(a, Analysis { total_changes: 0, avg_days_between_changes: 0.0, most_common_direction: "none".into(), volatility_score: 0.0 });
    }

    #[test]
    fn one_change_counts_from_the_first_observation() {
        let a = analyse(at(0), &[change(480, 240, 30)], at(90));
        assert_eq!(a.avg_days_between_changes, 30.0);
        assert_eq!(a.most_common_direction, "8h_to_4h");
        assert_eq!(a.volatility_score, 0.33, "one octave in 90 days");
    }

    #[test]
    fn several_changes() {
        // 8h→4h, back, 8h→4h again, then 4h→1h (two octaves): days 10, 17, 24, 31.
        let changes = [change(240, 480, 17), change(480, 240, 10), change(240, 60, 31), change(480, 240, 24)];
        let a = analyse(at(0), &changes, at(60));
        assert_eq!(a.total_changes, 4);
        assert_eq!(a.avg_days_between_changes, 7.0);
        assert_eq!(a.most_common_direction, "8h_to_4h");
        assert_eq!(a.volatility_score, 2.5, "5 octaves over 60 days observed = 2.5 per 30 days");
        // Old changes fall out of the volatility window but not the totals.
        let later = analyse(at(0), &changes, at(200));
        assert_eq!((later.total_changes, later.volatility_score), (4, 0.0));
    }

    #[test]
    fn the_net_position_is_the_difference_of_the_shown_shares() {
        assert_eq!((shown_share_ppm(512_345), shown_share_ppm(487_655)), (512_300, 487_700));
        assert_eq!(net_position_ppm(512_345, 487_655), 24_600, "0.5123 - 0.4877, not 0.0247");
        assert_eq!(net_position_ppm(338_200, 661_700), -323_500);
    }

    #[test]
    fn ties_go_to_the_most_recent_direction() {
        let a = analyse(at(0), &[change(480, 240, 1), change(240, 480, 2)], at(3));
        assert_eq!(a.most_common_direction, "4h_to_8h");
    }
}
