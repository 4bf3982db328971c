//! The oracle's sources of a settled rate: one endpoint on one host of a venue. Base URLs are
//! configuration, several per venue (`FM_BINANCE_URL=https://a,https://b`); each host's history
//! endpoint is a source, and so is a venue's own field for the rate it charged at its last
//! settlement (OKX `settFundingRate`, on the first host). A predicted rate (Binance
//! `lastFundingRate`, Bybit's ticker `fundingRate`, Hyperliquid's `predictedFundings`) is never
//! a witness: it is the venue's estimate of the next settlement, not what the last one charged.
//!
//! The consensus needs two sources that agree, so a venue needs two independent ones:
//! [`RateSource::check_independent`] refuses, at start, a venue with fewer than two distinct
//! hosts unless it has a settled-rate field, and a host given twice.

use std::collections::HashSet;

use super::{Exchange, ExchangeClient, ExchangeError, FundingPoint, FundingRate, VenueHistory, has_settled_rate_field};

/// A history row this close to the settlement time is that settlement's (venues stamp some
/// settlements a few milliseconds late).
const SETTLEMENT_TOLERANCE_MS: i64 = 60_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// The funding-history endpoint: the settled rate, listed once the venue has published it.
    History,
    /// The venue's field for the rate charged at its previous settlement (OKX
    /// `settFundingRate` with `settState` = `settled`): valid only until the next settlement.
    SettledField,
}

impl SourceKind {
    pub fn id(self) -> &'static str {
        match self {
            SourceKind::History => "history",
            SourceKind::SettledField => "settled",
        }
    }
}

/// One place the oracle reads a settled rate.
#[derive(Clone)]
pub struct RateSource {
    /// How observations name it: `binance:history@fapi.binance.com`.
    pub name: String,
    pub kind: SourceKind,
    client: ExchangeClient,
}

/// The host (and port) of a base URL, lower-cased: what makes two sources independent.
fn host_of(base: &str) -> String {
    let rest = base.split_once("://").map_or(base, |(_, rest)| rest);
    rest.split(['/', '?', '#']).next().unwrap_or_default().to_ascii_lowercase()
}

impl RateSource {
    /// The sources of one venue over the clients of its hosts (one client a host, shared with
    /// whoever else reads that host): each host's history, and the first host's settled-rate
    /// field where the venue has one.
    pub fn for_venue(hosts: &[ExchangeClient]) -> Vec<RateSource> {
        let history = hosts.iter().map(|client| RateSource::new(client.clone(), SourceKind::History));
        let settled = hosts.first().filter(|c| c.has_settled_rate_field()).map(|client| RateSource::new(client.clone(), SourceKind::SettledField));
        history.chain(settled).collect()
    }

    /// Refuses base URLs of `exchange` that cannot give two independent witnesses of a
    /// settlement: a host given twice (the same answers twice), or fewer than two hosts where the
    /// venue has no settled-rate field. The error says what to configure.
    pub fn check_independent(exchange: Exchange, bases: &[String]) -> Result<(), String> {
        let mut seen = HashSet::new();
        for base in bases {
            let host = host_of(base);
            if !seen.insert(host.clone()) {
                return Err(format!("{host} is given twice: each host must be another source"));
            }
        }
        if seen.len() == 1 && !has_settled_rate_field(exchange) {
            return Err(format!(
                "{} needs at least two hosts: the oracle settles a round when two independent sources agree, and this venue publishes its settled rates only in its history",
                exchange.id()
            ));
        }
        Ok(())
    }

    pub fn new(client: ExchangeClient, kind: SourceKind) -> RateSource {
        let host = host_of(client.base_url());
        RateSource { name: format!("{}:{}@{host}", client.exchange().id(), kind.id()), kind, client }
    }

    /// The rate `symbol` settled at `settlement_ms`, as this source says it. `NotPublished`
    /// when the source does not (yet, or any more) show it.
    pub async fn settled_rate(&self, symbol: &str, settlement_ms: i64) -> Result<FundingRate, ExchangeError> {
        match self.kind {
            SourceKind::History => {
                let (start, end) = window(settlement_ms);
                settled_at(&self.client.funding_history(symbol, start, end).await?, settlement_ms)
            }
            SourceKind::SettledField => settled_at(&[self.client.last_settled(symbol).await?], settlement_ms),
        }
    }

    /// What this source says every symbol of its venue settled at `settlement_ms`, from one
    /// request, where it can say it so: a history that answers without a symbol (Binance's), a
    /// settled-rate field that answers for every contract (OKX's `instId=ANY`); `None` where it is
    /// asked symbol by symbol. One request for a venue instead of one a round is what keeps the
    /// oracle inside the venue's published limits when every 8-hour perp settles in the same
    /// second.
    pub async fn settled_rates(&self, settlement_ms: i64) -> Option<Result<VenueReadings, ExchangeError>> {
        let read = match self.kind {
            SourceKind::History => {
                let (start, end) = window(settlement_ms);
                self.client.history_of_all(start, end).await?
            }
            SourceKind::SettledField => self.client.last_settled_of_all().await?,
        };
        Some(read.map(|history| VenueReadings { history, settlement_ms }))
    }
}

/// One source's readings of a whole venue at one settlement ([`RateSource::settled_rates`]).
#[derive(Clone, Debug)]
pub struct VenueReadings {
    history: VenueHistory,
    settlement_ms: i64,
}

impl VenueReadings {
    /// What the source says `symbol` settled at, as [`RateSource::settled_rate`] would: a symbol
    /// absent from a complete list is not published yet. `None` when the venue cut its list short
    /// and does not name the symbol: only asking it alone can tell.
    pub fn reading(&self, symbol: &str) -> Option<Result<FundingRate, ExchangeError>> {
        match self.history.points.get(symbol) {
            Some(points) => Some(settled_at(points, self.settlement_ms)),
            None if self.history.complete => Some(settled_at(&[], self.settlement_ms)),
            None => None,
        }
    }
}

/// The history window a settlement's row is looked for in.
fn window(settlement_ms: i64) -> (i64, i64) {
    (settlement_ms - SETTLEMENT_TOLERANCE_MS, settlement_ms + SETTLEMENT_TOLERANCE_MS)
}

/// The rate of the settlement at `settlement_ms` among `points`: the closest, within the tolerance.
fn settled_at(points: &[FundingPoint], settlement_ms: i64) -> Result<FundingRate, ExchangeError> {
    match points.iter().min_by_key(|p| (p.time_ms - settlement_ms).abs()) {
        Some(p) if (p.time_ms - settlement_ms).abs() <= SETTLEMENT_TOLERANCE_MS => Ok(p.rate),
        Some(p) => Err(ExchangeError::NotPublished(format!("the source shows the settlement at {}, not {settlement_ms}", p.time_ms))),
        None => Err(ExchangeError::NotPublished(format!("no settlement at {settlement_ms} in the history yet"))),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn clients(exchange: Exchange, bases: &[&str]) -> Vec<ExchangeClient> {
        bases.iter().map(|b| ExchangeClient::new(exchange, b, Duration::from_secs(1))).collect()
    }

    fn urls(bases: &[&str]) -> Vec<String> {
        bases.iter().map(|b| b.to_string()).collect()
    }

    #[test]
    fn a_venue_needs_two_independent_witnesses() {
        let one = urls(&["https://fapi.binance.com"]);
        assert!(RateSource::check_independent(Exchange::Binance, &one).unwrap_err().contains("at least two hosts"));
        let twice = urls(&["https://api.bybit.com", "https://API.bybit.com/v5"]);
        assert!(RateSource::check_independent(Exchange::Bybit, &twice).unwrap_err().contains("twice"));
        let two = ["https://api.hyperliquid.xyz", "https://api-ui.hyperliquid.xyz"];
        assert!(RateSource::check_independent(Exchange::Hyperliquid, &urls(&two)).is_ok());
        let sources = RateSource::for_venue(&clients(Exchange::Hyperliquid, &two));
        assert_eq!(sources.iter().map(|s| s.kind).collect::<Vec<_>>(), [SourceKind::History, SourceKind::History]);
        // OKX's settled-rate field is a second witness on one host.
        assert!(RateSource::check_independent(Exchange::Okx, &urls(&["https://www.okx.com"])).is_ok());
        let names: Vec<String> = RateSource::for_venue(&clients(Exchange::Okx, &["https://www.okx.com"])).into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["okx:history@www.okx.com", "okx:settled@www.okx.com"]);
        assert!(RateSource::check_independent(Exchange::Binance, &[]).is_ok(), "a venue left to the simulator");
    }
}
