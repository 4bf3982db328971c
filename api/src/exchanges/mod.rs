//! Exchange adapters: funding-rate history, the current and predicted rate, and the funding
//! interval of a perpetual; a venue's whole listing of perps with their intervals, and its crowd
//! positioning (long/short account ratios, open interest), from the exchanges' real public REST
//! formats (each adapter's module names the endpoints it reads). Base URLs are configuration; tests and local runs point
//! them at the simulated exchange (`sim-exchange`), which answers in the same formats.

mod binance;
mod bybit;
mod client;
mod hyperliquid;
pub mod limits;
mod okx;
mod source;

use std::collections::HashMap;
use std::time::Duration;

pub use crate::domain::exchange::{Exchange, split_symbol};
pub use crate::domain::rate::FundingRate;
pub use client::ExchangeError;
pub use source::{RateSource, SourceKind, VenueReadings};

/// A settled funding rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FundingPoint {
    /// The funding settlement time, Unix milliseconds.
    pub time_ms: i64,
    pub rate: FundingRate,
}

/// Every contract's settlements from one request ([`ExchangeClient::history_of_all`], a window of
/// the history; [`ExchangeClient::last_settled_of_all`], each contract's previous settlement).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VenueHistory {
    /// Each symbol's settlements in the window, oldest first.
    pub points: HashMap<String, Vec<FundingPoint>>,
    /// Whether every settlement in the window is here: a venue's page limit can cut the list
    /// short, and then a symbol missing from it says nothing.
    pub complete: bool,
}

impl VenueHistory {
    /// `rows` (symbol, settlement) grouped by symbol, each symbol's oldest first, once a time.
    fn of(rows: impl IntoIterator<Item = (String, FundingPoint)>, complete: bool) -> VenueHistory {
        let mut points: HashMap<String, Vec<FundingPoint>> = HashMap::new();
        for (symbol, point) in rows {
            points.entry(symbol).or_default().push(point);
        }
        for list in points.values_mut() {
            list.sort_by_key(|p| p.time_ms);
            list.dedup_by_key(|p| p.time_ms);
        }
        VenueHistory { points, complete }
    }
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

/// A perpetual a venue lists, from its listing endpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedPerp {
    /// `<BASE><QUOTE>` as everywhere in the service (`BTCUSDT`; Hyperliquid's `BTC` is `BTCUSDC`).
    pub symbol: String,
    /// Minutes between funding settlements.
    pub interval_minutes: u32,
    /// The mark price in 1e-8 USD, where the listing carries it (Binance).
    pub mark_price_e8: Option<i64>,
    /// Open interest in USD cents, where the listing carries it (Bybit, OKX).
    pub open_interest_cents: Option<i64>,
}

/// How a venue's crowd is positioned on one perp: the shares of accounts long and short (the
/// only public long/short figure the venues publish), at the venue's time bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrowdReading {
    /// Fraction of accounts net long, millionths (0 to 1,000,000).
    pub long_ppm: u32,
    /// Fraction of accounts net short, millionths.
    pub short_ppm: u32,
    /// The start of the venue's 5-minute bucket the ratio describes, Unix ms.
    pub timestamp_ms: i64,
    /// Open interest in USD cents (from the listing, or asked here on Binance).
    pub open_interest_cents: Option<i64>,
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

    /// The same host with every request paced at `share_percent` of the venue's published limits
    /// (`limits`).
    pub fn paced(self, share_percent: u32) -> ExchangeClient {
        let pacer = limits::Pacer::new(limits::published(self.exchange), share_percent);
        ExchangeClient { http: self.http.paced(pacer), ..self }
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

    /// Every contract's settlements in [start_ms, end_ms] from one request, where the venue's
    /// history answers without a symbol (Binance's `fundingRate`); `None` where it needs one
    /// (Bybit, OKX and Hyperliquid ask per symbol).
    pub async fn history_of_all(&self, start_ms: i64, end_ms: i64) -> Option<Result<VenueHistory, ExchangeError>> {
        let read = match self.exchange {
            Exchange::Binance => binance::history_of_all(&self.http, start_ms, end_ms),
            Exchange::Bybit | Exchange::Okx | Exchange::Hyperliquid => return None,
        };
        Some(read.await.map(|(rows, complete)| VenueHistory::of(rows.into_iter().filter(|(_, p)| (start_ms..=end_ms).contains(&p.time_ms)), complete)))
    }

    /// Every contract's previous settlement from the venue's settled-rate field
    /// ([`ExchangeClient::last_settled`]), from one request where the venue answers for all at
    /// once (OKX's `funding-rate` with `instId=ANY`, one list with no paging); `None` elsewhere.
    pub async fn last_settled_of_all(&self) -> Option<Result<VenueHistory, ExchangeError>> {
        let read = match self.exchange {
            Exchange::Okx => okx::last_settled_of_all(&self.http),
            Exchange::Binance | Exchange::Bybit | Exchange::Hyperliquid => return None,
        };
        Some(read.await.map(|rows| VenueHistory::of(rows, true)))
    }

    /// Every perpetual the venue lists and trades, with its funding interval: Binance's
    /// `premiumIndex` (all symbols) and `fundingInfo` (only the adjusted ones; absent = 8 h),
    /// Bybit's `instruments-info` (minutes, cursor paging) and `tickers`, OKX's `instruments`,
    /// `open-interest` and each swap's `funding-rate` (next − current funding time), Hyperliquid's
    /// `predictedFundings`.
    pub async fn listing(&self) -> Result<Vec<ListedPerp>, ExchangeError> {
        match self.exchange {
            Exchange::Binance => binance::listing(&self.http).await,
            Exchange::Bybit => bybit::listing(&self.http).await,
            Exchange::Okx => okx::listing(&self.http).await,
            Exchange::Hyperliquid => hyperliquid::listing(&self.http).await,
        }
    }

    /// Whether the venue publishes a long/short ratio (Hyperliquid does not).
    pub fn has_crowd_data(&self) -> bool {
        self.exchange != Exchange::Hyperliquid
    }

    /// The latest 5-minute long/short account ratio of a listed perp, with its open interest in
    /// USD. `None` where the venue publishes no ratio for it (Hyperliquid; a perp too new).
    pub async fn crowd(&self, perp: &ListedPerp) -> Result<Option<CrowdReading>, ExchangeError> {
        match self.exchange {
            Exchange::Binance => binance::crowd(&self.http, perp).await,
            Exchange::Bybit => bybit::crowd(&self.http, perp).await,
            Exchange::Okx => okx::crowd(&self.http, perp).await,
            Exchange::Hyperliquid => Ok(None),
        }
    }

    /// Whether the venue publishes the rate it charged at its previous settlement in a field of
    /// its own, apart from its history ([`has_settled_rate_field`]).
    pub fn has_settled_rate_field(&self) -> bool {
        has_settled_rate_field(self.exchange)
    }

    /// The previous settlement and the rate charged there, from the venue's settled-rate field
    /// (`has_settled_rate_field`); `NotPublished` elsewhere.
    pub async fn last_settled(&self, symbol: &str) -> Result<FundingPoint, ExchangeError> {
        match self.exchange {
            Exchange::Okx => okx::last_settled(&self.http, symbol).await,
            other => Err(ExchangeError::NotPublished(format!("{} has no settled-rate field", other.id()))),
        }
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

/// Whether `exchange` publishes the rate it charged at its previous settlement in a field of its
/// own, apart from its history: OKX's `settFundingRate`. The others' current endpoints carry a
/// prediction of the next settlement.
pub fn has_settled_rate_field(exchange: Exchange) -> bool {
    exchange == Exchange::Okx
}
