//! The simulated funding process: per (venue, symbol), an integer mean-reverting walk on a grid
//! from 2026-01-01 — hourly, or every interval for a symbol that settles more often than hourly
//! (the short rounds of demos and tests) — seeded and deterministic, quantised to 1e-8 (every
//! venue's decimal strings are then exact). A symbol's settled rate at a funding time is the
//! grid value at that time. Units: 1e-12 ("pico"), as everywhere in the service.
//!
//! Beside the configured symbols (the series the service trades) the model lists a whole venue
//! universe ([`universe`]): hundreds of generated perps a venue, each with a funding interval
//! that changes now and then (weekly regimes) and moving long/short ratios. Their rates are a
//! stateless function of (symbol, step) rather than a walk, so thousands of them cost no memory.

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
    /// A generated member of the venue's universe (not a configured series): its interval
    /// follows weekly regimes and its rate is stateless.
    pub generated: bool,
}

impl SimSymbol {
    pub fn new(venue: &'static str, symbol: &str, interval_minutes: i64) -> SimSymbol {
        SimSymbol { venue, symbol: symbol.to_owned(), interval_minutes, generated: false }
    }

    /// The grid's step: an hour, or the interval when it is shorter.
    fn step_ms(&self) -> i64 {
        (self.interval_minutes * MINUTE_MS).clamp(MINUTE_MS, HOUR_MS)
    }
}

pub struct Model {
    seed: u64,
    pub symbols: Vec<SimSymbol>,
    /// (venue, symbol) → index in `symbols`.
    index: HashMap<(&'static str, String), usize>,
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
        let index = symbols.iter().enumerate().map(|(i, s)| ((s.venue, s.symbol.clone()), i)).collect();
        Model { seed, symbols, index, grids: Mutex::new(HashMap::new()) }
    }

    /// The configured symbols and, around them, a universe of `per_venue` perps on every venue
    /// (see [`universe`]).
    pub fn with_universe(seed: u64, configured: Vec<SimSymbol>, per_venue: usize) -> Model {
        Model::new(seed, universe(seed, configured, per_venue))
    }

    pub fn find(&self, venue: &str, symbol: &str) -> Option<&SimSymbol> {
        let venue = VENUES.into_iter().find(|v| *v == venue)?;
        self.index.get(&(venue, symbol.to_owned())).map(|i| &self.symbols[*i])
    }

    /// The symbols listed on `venue`, in listing order.
    pub fn listed<'a>(&'a self, venue: &'a str) -> impl Iterator<Item = &'a SimSymbol> + 'a {
        self.symbols.iter().filter(move |s| s.venue == venue)
    }

    /// The interval in force at `t_ms`, ms. A configured 8-hour symbol runs at 4 hours on about
    /// one day in nine. A generated symbol keeps its usual interval most weeks and, in about
    /// one week in twenty, runs at another (8 h → 4 h, 4 h → 1 h or 8 h, 1 h → 4 h); Hyperliquid's
    /// perps are hourly, always.
    pub fn interval_ms_at(&self, s: &SimSymbol, t_ms: i64) -> i64 {
        self.interval_ms_with(s, self.symbol_hash(s), t_ms)
    }

    /// The seeded hash of a symbol every one of its draws starts from. The walks over a grid
    /// (`settlements`, `last_settlement`, `next_settlement`) take it once, not once a step.
    fn symbol_hash(&self, s: &SimSymbol) -> u64 {
        hash(&[s.venue, &s.symbol], self.seed)
    }

    /// `interval_ms_at`, given the symbol's hash.
    fn interval_ms_with(&self, s: &SimSymbol, h: u64, t_ms: i64) -> i64 {
        let minutes = if s.generated {
            let week = (t_ms - EPOCH_MS).div_euclid(7 * DAY_MS) as u64;
            match (s.venue, s.interval_minutes, mix(h ^ week.wrapping_mul(0x9E37)) % 20) {
                ("hyperliquid", m, _) | (_, m, 1..) => m,
                (_, 480, 0) => 240,
                (_, 240, 0) => {
                    if h.is_multiple_of(2) {
                        60
                    } else {
                        480
                    }
                }
                (_, _, 0) => 240,
            }
        } else if s.interval_minutes == 480 && mix(h ^ (t_ms - EPOCH_MS).div_euclid(DAY_MS) as u64).is_multiple_of(9) {
            240
        } else {
            s.interval_minutes
        };
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
        let h = self.symbol_hash(s);
        // Mean between -0.5e-4 and +1.5e-4, reversion over ~2 days, hourly noise ~3e-5.
        let mean = -50_000_000 + (h % 200_000_000) as i64;
        if s.generated {
            // The universe's rates: the mean plus noise of the step, no state.
            let noise = (mix(h ^ (step as u64).wrapping_mul(0x5851_F42D)) % 120_001) as i64 - 60_000;
            return (mean + noise * 1_000) / QUANTUM * QUANTUM;
        }
        let key = (s.venue.to_owned(), s.symbol.clone());
        let mut grids = self.grids.lock().unwrap();
        let grid = grids.entry(key).or_default();
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

    /// Whether `t_ms` (a step of the grid) is a settlement time, given the symbol's hash.
    fn settles_at(&self, s: &SimSymbol, h: u64, t_ms: i64) -> bool {
        t_ms % self.interval_ms_with(s, h, t_ms) == 0
    }

    /// Settlement times in [from_ms, to_ms] (and not after `now_ms`), oldest first.
    pub fn settlements(&self, s: &SimSymbol, from_ms: i64, to_ms: i64, now_ms: i64) -> Vec<i64> {
        let (to, step, h) = (to_ms.min(now_ms), s.step_ms(), self.symbol_hash(s));
        let mut t = (from_ms.max(EPOCH_MS) + step - 1).div_euclid(step) * step;
        let mut out = Vec::new();
        while t <= to {
            if self.settles_at(s, h, t) {
                out.push(t);
            }
            t += step;
        }
        out
    }

    /// The latest settlement at or before `t_ms`.
    pub fn last_settlement(&self, s: &SimSymbol, t_ms: i64) -> i64 {
        let (step, h) = (s.step_ms(), self.symbol_hash(s));
        let mut t = t_ms.div_euclid(step) * step;
        while !self.settles_at(s, h, t) {
            t -= step;
        }
        t
    }

    /// The next settlement strictly after `now_ms`.
    pub fn next_settlement(&self, s: &SimSymbol, now_ms: i64) -> i64 {
        let (step, h) = (s.step_ms(), self.symbol_hash(s));
        let mut t = (now_ms.div_euclid(step) + 1) * step;
        while !self.settles_at(s, h, t) {
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

    /// The mark price, 1e-8 USD: about right for the known bases, seeded (0.0001 to 900) for
    /// the rest, moving ±5 % hour to hour.
    pub fn mark_price_e8(&self, s: &SimSymbol, t_ms: i64) -> i64 {
        let base = crate::model::base_of(&s.symbol);
        let anchor: i64 = match base {
            "BTC" => 95_000,
            "ETH" => 3_500,
            "SOL" => 180,
            "BNB" => 650,
            _ => 0,
        } * 100_000_000;
        let h = hash(&[s.venue, base, "price"], self.seed);
        let anchor = if anchor > 0 { anchor } else { 10_000 * 10i64.pow((h % 7) as u32) * (1 + (h >> 8) as i64 % 9) };
        let wobble = (mix(h ^ t_ms.div_euclid(HOUR_MS) as u64) % 1001) as i64 - 500; // ±5 % in 1e-4
        anchor + anchor / 10_000 * wobble
    }

    /// Open interest in contracts (base units, three decimals as an integer in 1e-3).
    pub fn open_interest_milli(&self, s: &SimSymbol, t_ms: i64) -> i64 {
        let h = hash(&[s.venue, &s.symbol, "oi"], self.seed);
        1_000_000 + (mix(h ^ t_ms.div_euclid(HOUR_MS) as u64) % 50_000_000) as i64
    }
}

/// `BTCUSDT` → `BTC`.
pub fn base_of(symbol: &str) -> &str {
    ["USDT", "USDC"].into_iter().find_map(|q| symbol.strip_suffix(q)).unwrap_or(symbol)
}

/// The venues the simulation serves.
pub const VENUES: [&str; 4] = ["binance", "bybit", "okx", "hyperliquid"];

/// Bases listed first on every venue, as on the real ones; the rest of a universe is generated.
const KNOWN_BASES: [&str; 60] = [
    "BTC", "ETH", "SOL", "XRP", "DOGE", "BNB", "ADA", "AVAX", "LINK", "DOT", "TON", "SUI", "TRX", "LTC", "BCH", "NEAR", "APT", "ARB", "OP", "FIL", "ATOM",
    "ETC", "INJ", "TIA", "SEI", "WIF", "1000PEPE", "1000SHIB", "1000BONK", "HYPE", "ENA", "JUP", "PYTH", "RNDR", "FET", "TAO", "WLD", "STX", "IMX", "AAVE",
    "UNI", "MKR", "CRV", "LDO", "RUNE", "ORDI", "JTO", "ONDO", "PENDLE", "ENS", "GMX", "DYDX", "BLUR", "STRK", "ZRO", "ZK", "EIGEN", "ETHFI", "TRUMP",
    "POPCAT",
];

/// Every venue's listing: the configured symbols first, then known and generated perps until the
/// venue lists `per_venue` (USDT-margined on Binance, Bybit and OKX, with some USDC ones on
/// Binance; `<COIN>USDC` on Hyperliquid). Usual intervals: Hyperliquid hourly; elsewhere mostly
/// 8 h, about a fifth 4 h and one in twenty 1 h. Deterministic in `seed`.
pub fn universe(seed: u64, configured: Vec<SimSymbol>, per_venue: usize) -> Vec<SimSymbol> {
    const CONSONANTS: &[u8] = b"BCDFGHJKLMNPRSTVWXZ";
    const VOWELS: &[u8] = b"AEIOUY";
    let mut out = configured;
    let mut taken: std::collections::HashSet<(&str, String)> = out.iter().map(|s| (s.venue, s.symbol.clone())).collect();
    for venue in VENUES {
        let mut count = out.iter().filter(|s| s.venue == venue).count();
        let mut n = 0u64;
        while count < per_venue {
            let h = hash(&[venue, "listing"], seed) ^ mix(n);
            let base = match KNOWN_BASES.get(n as usize) {
                Some(known) => (*known).to_owned(),
                None => {
                    // Three to five letters, consonant-vowel-consonant…: pronounceable tickers.
                    let len = 3 + (h % 3) as usize;
                    let letter = |i: usize| {
                        let r = mix(h ^ i as u64);
                        let pool = if i.is_multiple_of(2) { CONSONANTS } else { VOWELS };
                        pool[(r % pool.len() as u64) as usize] as char
                    };
                    (0..len).map(letter).collect()
                }
            };
            n += 1;
            let quote = match venue {
                "hyperliquid" => "USDC",
                "binance" if h.is_multiple_of(10) => "USDC",
                _ => "USDT",
            };
            let symbol = format!("{base}{quote}");
            if !taken.insert((venue, symbol.clone())) {
                continue;
            }
            let interval_minutes = match (venue, mix(h ^ 0x1D) % 20) {
                ("hyperliquid", _) => 60,
                (_, 0) => 60,
                (_, 1..=4) => 240,
                _ => 480,
            };
            out.push(SimSymbol { venue, symbol, interval_minutes, generated: true });
            count += 1;
        }
    }
    out
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
    fn a_universe_of_hundreds_a_venue_whose_intervals_change_now_and_then() {
        let m = Model::with_universe(42, vec![btc()], 500);
        for venue in VENUES {
            let listed: Vec<&SimSymbol> = m.listed(venue).collect();
            assert_eq!(listed.len(), 500, "{venue}");
            let names: std::collections::HashSet<&str> = listed.iter().map(|s| s.symbol.as_str()).collect();
            assert_eq!(names.len(), 500, "{venue}: unique names");
        }
        assert!(!m.find("binance", "BTCUSDT").unwrap().generated, "the configured symbol is kept");
        assert!(m.find("okx", "ETHUSDT").unwrap().generated && m.find("hyperliquid", "BTCUSDC").is_some());
        let weeks: Vec<i64> = (0..20).map(|w| EPOCH_MS + w * 7 * DAY_MS + HOUR_MS).collect();
        let changing = |venue: &str| m.listed(venue).filter(|s| weeks.iter().any(|t| m.interval_ms_at(s, *t) != m.interval_ms_at(s, weeks[0]))).count();
        let binance = changing("binance");
        assert!((100..500).contains(&binance), "some intervals change over twenty weeks, not all: {binance}");
        assert_eq!(changing("hyperliquid"), 0, "Hyperliquid is hourly");
        let s = m.find("bybit", "ETHUSDT").unwrap();
        assert_eq!(m.rate_at(s, EPOCH_MS + 77 * HOUR_MS), Model::with_universe(42, vec![btc()], 500).rate_at(s, EPOCH_MS + 77 * HOUR_MS));
        assert!(m.mark_price_e8(m.find("binance", "BTCUSDT").unwrap(), EPOCH_MS) > 90_000 * 100_000_000);
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(decimal(382_460_000, 8), "0.00038246");
        assert_eq!(decimal(-37_500_000_000, 8), "-0.03750000");
        assert_eq!(decimal(0, 4), "0.0000");
    }
}
