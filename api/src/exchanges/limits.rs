//! The venues' published request limits, kept by pacing every request a host is sent.
//!
//! Each venue publishes per-IP budgets for groups of public endpoints (numbers below, from their
//! API documentation). A [`Pacer`] spaces the requests of one budget evenly at a configured share
//! of it, so the service — oracle, scheduler and collectors together, since they share a host's
//! client — stays under the venue's limit with room left for bursts and other users of the IP.
//! Spacing (rather than a bucket that allows bursts) is what a polite crawler does, and it makes
//! a collector's pass take a predictable time: `symbols ÷ rate`.
//!
//! The simulated exchange has no limits: its clients are built without pacing.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use super::Exchange;

/// One published budget: `requests` per `window` for the paths starting with any of `paths`.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub paths: &'static [&'static str],
    pub requests: u32,
    pub window: Duration,
}

const fn budget(paths: &'static [&'static str], requests: u32, window_secs: u64) -> Budget {
    Budget { paths, requests, window: Duration::from_secs(window_secs) }
}

// fundingRate and fundingInfo share 500 / 5 min; the /futures/data statistics 1,000 / 5 min; the
// rest of /fapi counts against 2,400 request weight a minute (counted here as requests).
const BINANCE: &[Budget] =
    &[budget(&["/fapi/v1/fundingRate", "/fapi/v1/fundingInfo"], 500, 300), budget(&["/futures/data/"], 1_000, 300), budget(&["/fapi/"], 2_400, 60)];
// 600 requests per 5 s per IP over all of /v5/market.
const BYBIT: &[Budget] = &[budget(&["/v5/"], 600, 5)];
// Per endpoint, per 2 s: the trading-statistics ratios 5, funding rates 10 (the current rate is
// limited per instrument; counted here across all of them), instruments and open interest 20.
const OKX: &[Budget] = &[budget(&["/api/v5/rubik/"], 5, 2), budget(&["/api/v5/public/funding-rate"], 10, 2), budget(&["/api/v5/public/"], 20, 2)];
// 1,200 weight a minute; an info request weighs 2 (20 for the heavier ones).
const HYPERLIQUID: &[Budget] = &[budget(&["/info"], 600, 60)];

/// The published per-IP budgets of `exchange`, most specific paths first (a request counts
/// against the first budget whose path it starts with).
pub fn published(exchange: Exchange) -> &'static [Budget] {
    match exchange {
        Exchange::Binance => BINANCE,
        Exchange::Bybit => BYBIT,
        Exchange::Okx => OKX,
        Exchange::Hyperliquid => HYPERLIQUID,
    }
}

/// Evenly spaced slots for one budget.
#[derive(Debug)]
struct Lane {
    paths: &'static [&'static str],
    spacing: Duration,
    next: Mutex<Instant>,
}

/// A venue host's budgets, at `share_percent` of each.
#[derive(Debug)]
pub struct Pacer {
    lanes: Vec<Lane>,
}

impl Pacer {
    pub fn new(budgets: &[Budget], share_percent: u32) -> Pacer {
        let share = share_percent.clamp(1, 100);
        let lanes = budgets
            .iter()
            .map(|b| {
                let allowed = (b.requests * share / 100).max(1);
                Lane { paths: b.paths, spacing: b.window / allowed, next: Mutex::new(Instant::now()) }
            })
            .collect();
        Pacer { lanes }
    }

    /// Waits for the next slot of the budget `path` counts against (at once if none).
    pub async fn wait(&self, path: &str) {
        let Some(lane) = self.lanes.iter().find(|l| l.paths.iter().any(|p| path.starts_with(p))) else { return };
        let slot = {
            let mut next = lane.next.lock().await;
            let slot = (*next).max(Instant::now());
            *next = slot + lane.spacing;
            slot
        };
        tokio::time::sleep_until(slot).await;
    }

    /// The time between two requests of the budget `path` counts against.
    pub fn spacing(&self, path: &str) -> Option<Duration> {
        self.lanes.iter().find(|l| l.paths.iter().any(|p| path.starts_with(p))).map(|l| l.spacing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_of_each_published_budget() {
        let binance = Pacer::new(published(Exchange::Binance), 50);
        assert_eq!(binance.spacing("/fapi/v1/fundingInfo"), Some(Duration::from_millis(1200)), "250 per 5 min");
        assert_eq!(binance.spacing("/futures/data/globalLongShortAccountRatio"), Some(Duration::from_millis(600)));
        assert_eq!(binance.spacing("/fapi/v1/premiumIndex"), Some(Duration::from_millis(50)));
        let okx = Pacer::new(published(Exchange::Okx), 50);
        assert_eq!(okx.spacing("/api/v5/rubik/stat/contracts/long-short-account-ratio-contract"), Some(Duration::from_secs(1)));
        assert_eq!(okx.spacing("/api/v5/public/funding-rate-history"), Some(Duration::from_millis(400)));
        assert_eq!(okx.spacing("/api/v5/public/instruments"), Some(Duration::from_millis(200)));
    }

    #[tokio::test]
    async fn requests_of_one_budget_are_spaced() {
        let pacer = Pacer::new(&[budget(&["/slow"], 20, 1)], 100);
        let start = Instant::now();
        for _ in 0..3 {
            pacer.wait("/slow/x").await;
        }
        assert!(start.elapsed() >= Duration::from_millis(100), "three requests at 20 a second: slots at 0, 50 and 100 ms");
        assert_eq!(pacer.spacing("/other"), None, "a path of no budget is not held");
    }
}
