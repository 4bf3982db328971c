//! The oracle's sources of a settled rate: one endpoint on one host of a venue. Base URLs are
//! configuration, several per venue (`FM_BINANCE_URL=https://a,https://b`); each host's history
//! endpoint is a source, and the first host's current endpoint read right after the settlement
//! is another, so two hosts give three sources.

use super::{ExchangeClient, ExchangeError, FundingRate};

const HOUR_MS: i64 = 3_600_000;

/// A history row this close to the settlement time is that settlement's (venues stamp some
/// settlements a few milliseconds late).
const SETTLEMENT_TOLERANCE_MS: i64 = 60_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// The funding-history endpoint: the settled rate, listed once the venue has published it.
    History,
    /// The current endpoint's rate right after the settlement (Binance `lastFundingRate`, the
    /// ticker or prediction elsewhere): valid only between the settlement and the next one.
    Current,
}

impl SourceKind {
    pub fn id(self) -> &'static str {
        match self {
            SourceKind::History => "history",
            SourceKind::Current => "current",
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

impl RateSource {
    /// The sources of one venue over the clients of its hosts (one client a host, shared with
    /// whoever else reads that host): each host's history, and the first host's current
    /// endpoint.
    pub fn for_venue(hosts: &[ExchangeClient]) -> Vec<RateSource> {
        let history = hosts.iter().map(|client| RateSource::new(client.clone(), SourceKind::History));
        history.chain(hosts.first().map(|client| RateSource::new(client.clone(), SourceKind::Current))).collect()
    }

    pub fn new(client: ExchangeClient, kind: SourceKind) -> RateSource {
        let base = client.base_url();
        let host = base.split_once("://").map_or(base, |(_, rest)| rest);
        RateSource { name: format!("{}:{}@{host}", client.exchange().id(), kind.id()), kind, client }
    }

    /// The rate `symbol` settled at `settlement_ms`, as this source says it. `NotPublished`
    /// when the source does not (yet) show it. `round_ms`: the series' own interval when it runs
    /// short rounds (the venue's formats carry whole hours), else the venue's is used.
    pub async fn settled_rate(&self, symbol: &str, settlement_ms: i64, round_ms: Option<i64>) -> Result<FundingRate, ExchangeError> {
        match self.kind {
            SourceKind::History => {
                let window = (settlement_ms - SETTLEMENT_TOLERANCE_MS, settlement_ms + SETTLEMENT_TOLERANCE_MS);
                let points = self.client.funding_history(symbol, window.0, window.1).await?;
                points
                    .iter()
                    .min_by_key(|p| (p.time_ms - settlement_ms).abs())
                    .map(|p| p.rate)
                    .ok_or_else(|| ExchangeError::NotPublished(format!("no settlement at {settlement_ms} in the history yet")))
            }
            SourceKind::Current => {
                let current = self.client.current(symbol).await?;
                // The venue's next settlement tells which settlement its rate field is about.
                if current.next_funding_ms <= settlement_ms {
                    return Err(ExchangeError::NotPublished(format!("the venue has not settled {settlement_ms} yet (next {})", current.next_funding_ms)));
                }
                let interval_ms = round_ms.unwrap_or(current.interval_hours.max(1) as i64 * HOUR_MS);
                if current.next_funding_ms > settlement_ms + interval_ms {
                    return Err(ExchangeError::NotPublished(format!("the current rate is past {settlement_ms} (next {})", current.next_funding_ms)));
                }
                Ok(current.rate)
            }
        }
    }
}
