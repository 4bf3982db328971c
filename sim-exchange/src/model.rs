//! The simulated funding process: per (venue, symbol), an integer mean-reverting walk on a grid
//! from 2026-01-01 — hourly, or every interval for a symbol that settles more often than hourly
//! (the short rounds of demos and tests) — seeded and deterministic, quantised to 1e-8 (every
//! venue's decimal strings are then exact). A symbol's settled rate at a funding time is the
//! grid value at that time. Units: 1e-12 ("pico"), as everywhere in the service.

use std::collections::HashMap;
use std::sync::Mutex;

pub const MINUTE_MS: i64 = 60_000;
pub const HOUR_MS: i64 = 3_600_000;
pub const DAY_MS: i64 = 24 * HOUR_MS;
/// 2026-01-01T00:00:00Z: the grid starts here.
pub const EPOCH_MS: i64 = 1_767_225_600_000;
const QUANTUM: i64 = 10_000; // 1e-8 in pico

#[derive(Clone, Debug)]
pub struct SimSymbol {
    pub venue: &'static str,
    /// `<BASE><QUOTE>`, e.g. `BTCUSDT`.
    pub symbol: String,
    /// Minutes between settlements: 60, 240 or 480 as on the venues (8-hour symbols switch to
    /// 4 hours on some days), or a divisor of 60 (5, 15…) for short demo rounds.
    pub interval_minutes: i64,
}

impl SimSymbol {
    pub fn new(venue: &'static str, symbol: &str, interval_minutes: i64) -> SimSymbol {
        SimSymbol { venue, symbol: symbol.to_owned(), interval_minutes }
    }

    /// The grid's step: an hour, or the interval when it is shorter.
    fn step_ms(&self) -> i64 {
        (self.interval_minutes * MINUTE_MS).clamp(MINUTE_MS, HOUR_MS)
    }
}

pub struct Model {
    seed: u64,
    pub symbols: Vec<SimSymbol>,
    grids: Mutex<HashMap<(String, String), Vec<i64>>>,
}

/// splitmix64: a tiny, well-mixed, deterministic generator.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn hash(parts: &[&str], seed: u64) -> u64 {
    parts.iter().flat_map(|p| p.bytes().chain([0])).fold(seed ^ 0xCBF2_9CE4_8422_2325, |h, b| mix(h ^ b as u64))
}

impl Model {
    pub fn new(seed: u64, symbols: Vec<SimSymbol>) -> Model {
        Model { seed, symbols, grids: Mutex::new(HashMap::new()) }
    }

    pub fn find(&self, venue: &str, symbol: &str) -> Option<&SimSymbol> {
        self.symbols.iter().find(|s| s.venue == venue && s.symbol == symbol)
    }

    /// The interval in force at `t_ms`, ms: 8-hour symbols run at 4 hours on about one day in
    /// nine.
    pub fn interval_ms_at(&self, s: &SimSymbol, t_ms: i64) -> i64 {
        let day = (t_ms - EPOCH_MS).div_euclid(DAY_MS) as u64;
        let minutes = if s.interval_minutes == 480 && mix(hash(&[s.venue, &s.symbol], self.seed) ^ day).is_multiple_of(9) { 240 } else { s.interval_minutes };
        minutes * MINUTE_MS
    }

    /// The interval in force at `t_ms` in whole hours, as the venues' formats carry it (a
    /// sub-hour demo interval shows as 1).
    pub fn interval_at(&self, s: &SimSymbol, t_ms: i64) -> i64 {
        (self.interval_ms_at(s, t_ms) / HOUR_MS).max(1)
    }

    /// The rate on the grid at the step containing `t_ms` (pico; 0 before the epoch).
    pub fn rate_at(&self, s: &SimSymbol, t_ms: i64) -> i64 {
        if t_ms < EPOCH_MS {
            return 0;
        }
        let step = ((t_ms - EPOCH_MS) / s.step_ms()) as usize;
        let key = (s.venue.to_owned(), s.symbol.clone());
        let mut grids = self.grids.lock().unwrap();
        let grid = grids.entry(key).or_default();
        let h = hash(&[s.venue, &s.symbol], self.seed);
        // Mean between -0.5e-4 and +1.5e-4, reversion over ~2 days, hourly noise ~3e-5.
        let mean = -50_000_000 + (h % 200_000_000) as i64;
        while grid.len() <= step {
            let n = grid.len() as u64;
            let previous = grid.last().copied().unwrap_or(mean);
            let uniform = |i: u64| (mix(h ^ n.wrapping_mul(4) ^ i) % 2001) as i64 - 1000;
            let normal_milli = (0..4).map(uniform).sum::<i64>() * 1000 / 1155; // ≈ N(0,1)·1000
            let next = previous + (mean - previous) / 48 + 30_000 * normal_milli;
            grid.push(next / QUANTUM * QUANTUM);
        }
        grid[step]
    }

    /// Whether `t_ms` (a step of the grid) is a settlement time.
    fn settles_at(&self, s: &SimSymbol, t_ms: i64) -> bool {
        t_ms % self.interval_ms_at(s, t_ms) == 0
    }

    /// Settlement times in [from_ms, to_ms] (and not after `now_ms`), oldest first.
    pub fn settlements(&self, s: &SimSymbol, from_ms: i64, to_ms: i64, now_ms: i64) -> Vec<i64> {
        let (to, step) = (to_ms.min(now_ms), s.step_ms());
        let mut t = (from_ms.max(EPOCH_MS) + step - 1).div_euclid(step) * step;
        let mut out = Vec::new();
        while t <= to {
            if self.settles_at(s, t) {
                out.push(t);
            }
            t += step;
        }
        out
    }

    /// The latest settlement at or before `t_ms`.
    pub fn last_settlement(&self, s: &SimSymbol, t_ms: i64) -> i64 {
        let step = s.step_ms();
        let mut t = t_ms.div_euclid(step) * step;
        while !self.settles_at(s, t) {
            t -= step;
        }
        t
    }

    /// The next settlement strictly after `now_ms`.
    pub fn next_settlement(&self, s: &SimSymbol, now_ms: i64) -> i64 {
        let step = s.step_ms();
        let mut t = (now_ms.div_euclid(step) + 1) * step;
        while !self.settles_at(s, t) {
            t += step;
        }
        t
    }
}

impl Model {
    /// The share of accounts long at `t_ms` (5-minute buckets), ppm in [300,000, 700,000]:
    /// seeded, drifting slowly (an hourly anchor plus a small per-bucket wobble).
    pub fn long_share_ppm(&self, s: &SimSymbol, t_ms: i64) -> i64 {
        let h = hash(&[s.venue, &s.symbol, "long"], self.seed);
        let hour = t_ms.div_euclid(HOUR_MS) as u64;
        let bucket = t_ms.div_euclid(300_000) as u64;
        350_000 + (mix(h ^ hour) % 280_000) as i64 + (mix(h ^ bucket) % 20_000) as i64
    }

    /// Open interest in contracts (base units, three decimals as an integer in 1e-3).
    pub fn open_interest_milli(&self, s: &SimSymbol, t_ms: i64) -> i64 {
        let h = hash(&[s.venue, &s.symbol, "oi"], self.seed);
        1_000_000 + (mix(h ^ t_ms.div_euclid(HOUR_MS) as u64) % 50_000_000) as i64
    }
}

/// A decimal string with `places` decimals for a pico rate (exact: rates are multiples of 1e-8).
pub fn decimal(pico: i64, places: u32) -> String {
    let sign = if pico < 0 { "-" } else { "" };
    let m = pico.unsigned_abs();
    let unit = 10u64.pow(12 - places);
    format!("{sign}{}.{:0width$}", m / 1_000_000_000_000, (m % 1_000_000_000_000) / unit, width = places as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn btc() -> SimSymbol {
        SimSymbol::new("binance", "BTCUSDT", 480)
    }

    #[test]
    fn deterministic_and_quantised() {
        let (a, b) = (Model::new(7, vec![btc()]), Model::new(7, vec![btc()]));
        let t = EPOCH_MS + 500 * HOUR_MS;
        assert_eq!(a.rate_at(&btc(), t), b.rate_at(&btc(), t));
        assert_eq!(a.rate_at(&btc(), t) % QUANTUM, 0);
        assert_ne!(Model::new(8, vec![btc()]).rate_at(&btc(), t), a.rate_at(&btc(), t));
        let rates: Vec<i64> = (0..2000).map(|h| a.rate_at(&btc(), EPOCH_MS + h * HOUR_MS)).collect();
        assert!(rates.iter().any(|r| *r > 0) && rates.iter().all(|r| r.abs() < 10_000_000_000));
    }

    #[test]
    fn settlements_follow_the_interval_including_its_changes() {
        let m = Model::new(1, vec![btc()]);
        let times = m.settlements(&btc(), EPOCH_MS, EPOCH_MS + 60 * DAY_MS, i64::MAX);
        assert!(times.windows(2).all(|w| w[1] - w[0] == 4 * HOUR_MS || w[1] - w[0] == 8 * HOUR_MS));
        assert!(times.windows(2).any(|w| w[1] - w[0] == 4 * HOUR_MS), "some days run at 4 h");
        assert!(times.iter().all(|t| t % (4 * HOUR_MS) == 0));
    }

    #[test]
    fn a_short_interval_settles_every_interval_on_its_own_grid() {
        let five = SimSymbol::new("binance", "BTCUSDT", 5);
        let m = Model::new(1, vec![five.clone()]);
        let t0 = EPOCH_MS + 300 * DAY_MS + 7 * MINUTE_MS;
        let times = m.settlements(&five, t0, t0 + HOUR_MS, i64::MAX);
        assert_eq!(times.len(), 12);
        assert!(times.iter().all(|t| t % (5 * MINUTE_MS) == 0));
        assert_eq!((m.last_settlement(&five, t0), m.next_settlement(&five, t0)), (t0 - 2 * MINUTE_MS, t0 + 3 * MINUTE_MS));
        assert_eq!(m.interval_at(&five, t0), 1, "formats in hours show a sub-hour interval as 1");
        let rates: Vec<i64> = times.iter().map(|t| m.rate_at(&five, *t)).collect();
        assert!(rates.windows(2).any(|w| w[0] != w[1]), "each five minutes has its own rate");
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(decimal(382_460_000, 8), "0.00038246");
        assert_eq!(decimal(-37_500_000_000, 8), "-0.03750000");
        assert_eq!(decimal(0, 4), "0.0000");
    }
}
