//! Exchange adapters: funding-rate history, the current and predicted rate, and the funding
//! interval of a perpetual, from the exchanges' real public REST formats (DESIGN §6,
//! `shared/notes/external-formats.md`). Base URLs are configuration; tests and local runs point
//! them at the simulated exchange (`sim-exchange`), which answers in the same formats.

mod binance;
mod bybit;
mod client;
mod hyperliquid;
mod okx;
mod source;

use std::time::Duration;

pub use client::ExchangeError;
pub use source::{RateSource, SourceKind};
pub use crate::domain::exchange::{Exchange, split_symbol};
pub use crate::domain::rate::FundingRate;

/// A settled funding rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FundingPoint {
    /// The funding settlement time, Unix milliseconds.
    pub time_ms: i64,
    pub rate: FundingRate,
}

/// The rate that will settle next, as the exchange currently predicts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CurrentFunding {
    pub rate: FundingRate,
    /// The next settlement, Unix milliseconds.
    pub next_funding_ms: i64,
    /// Hours between settlements (1, 4 or 8).
    pub interval_hours: u32,
}

/// One venue's client.
#[derive(Clone)]
pub struct ExchangeClient {
    exchange: Exchange,
    http: client::Http,
}

impl ExchangeClient {
    /// `base_url` without a trailing slash, e.g. `https://fapi.binance.com`.
    pub fn new(exchange: Exchange, base_url: &str, timeout: Duration) -> ExchangeClient {
        ExchangeClient { exchange, http: client::Http::new(base_url, timeout) }
    }

    pub fn exchange(&self) -> Exchange {
        self.exchange
    }

    /// The base URL it speaks to.
    pub fn base_url(&self) -> &str {
        self.http.base()
    }

    /// Settled rates with settlement times in [start_ms, end_ms], oldest first.
    pub async fn funding_history(&self, symbol: &str, start_ms: i64, end_ms: i64) -> Result<Vec<FundingPoint>, ExchangeError> {
        let mut points = match self.exchange {
            Exchange::Binance => binance::history(&self.http, symbol, start_ms, end_ms).await?,
            Exchange::Bybit => bybit::history(&self.http, symbol, start_ms, end_ms).await?,
            Exchange::Okx => okx::history(&self.http, symbol, start_ms, end_ms).await?,
            Exchange::Hyperliquid => hyperliquid::history(&self.http, symbol, start_ms, end_ms).await?,
        };
        points.retain(|p| (start_ms..=end_ms).contains(&p.time_ms));
        points.sort_by_key(|p| p.time_ms);
        points.dedup_by_key(|p| p.time_ms);
        Ok(points)
    }

    /// The predicted next rate, the next settlement time and the current interval.
    pub async fn current(&self, symbol: &str) -> Result<CurrentFunding, ExchangeError> {
        match self.exchange {
            Exchange::Binance => binance::current(&self.http, symbol).await,
            Exchange::Bybit => bybit::current(&self.http, symbol).await,
            Exchange::Okx => okx::current(&self.http, symbol).await,
            Exchange::Hyperliquid => hyperliquid::current(&self.http, symbol).await,
        }
    }
}

