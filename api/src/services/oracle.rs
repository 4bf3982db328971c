//! The oracle: decides each round past its settlement time from several sources.
//!
//! A pass takes the rounds due (closed or resolving, past settlement, not waiting out a
//! backoff). For each, the sources without a reading yet are asked, every answer (a rate or
//! why there was none) is stored, and the consensus rule (`domain::oracle`) is applied to the
//! first reading of every source: two that agree settle the round. A source that answers for a
//! whole venue at once (`RateSource::settled_rates`) is read once for all the pass's rounds of
//! that venue and settlement time, not once a round. Verdicts are sent in groups as they are
//! reached (`settlement::finalize_all`: on chain through the oracle key, several rounds to a
//! transaction). Without a consensus the round is asked again after a backoff
//! (2 s doubling to 60 s) until `FM_ORACLE_DEADLINE` after settlement, when it is voided. A
//! round whose settlement time no longer exists (marked by the scheduler) is voided at once.
//!
//! Safe to repeat and to interrupt: readings are appended, the verdict is derived from them
//! alone, and `finalize` is idempotent, so a crash anywhere only repeats a question.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use futures_util::future::join_all;

use super::settlement::{self, Verdict};
use super::{ServiceError, Services};
use crate::domain::exchange::Exchange;
use uuid::Uuid;

use crate::domain::market::MarketStatus;
use crate::domain::oracle::{Consensus, agree, consensus};
use crate::domain::rate::FundingRate;
use crate::exchanges::{RateSource, VenueReadings};
use crate::store::markets::{self, MarketRow};
use crate::store::oracle::{self, AwaitingRound, NewObservation, ObservationRow, PayoutRow, ResolutionRow};

/// What the pass's whole-venue reads said (`Oracle::read_venues`): by source name and
/// settlement time (Unix ms), the readings, or why there were none.
type VenueReads = HashMap<(String, i64), Result<VenueReadings, String>>;

/// Rounds taken per pass (oldest settlement first).
const ROUNDS_PER_PASS: i64 = 1_000;
/// Rounds decided at once (each asks its sources concurrently).
const CONCURRENT_ROUNDS: usize = 32;
/// Verdicts sent to the chain together (several rounds a transaction).
const FINALIZED_TOGETHER: usize = 64;
/// Groups of verdicts being finalized at once while later rounds are still asked.
const GROUPS_IN_FLIGHT: usize = 4;
const FIRST_RETRY: Duration = Duration::from_secs(2);
const LAST_RETRY: Duration = Duration::from_secs(60);

/// What a pass did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub settled: u64,
    pub voided: u64,
    /// No consensus yet: asked again after a backoff.
    pub waiting: u64,
    /// Rounds whose attempt failed (Postgres or the chain); retried next pass.
    pub failed: u64,
}

impl std::iter::Sum for Report {
    fn sum<I: Iterator<Item = Report>>(reports: I) -> Report {
        reports.fold(Report::default(), |sum, r| Report {
            settled: sum.settled + r.settled,
            voided: sum.voided + r.voided,
            waiting: sum.waiting + r.waiting,
            failed: sum.failed + r.failed,
        })
    }
}

/// What the readings say about one round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    /// End it so (settled by consensus, or void).
    End(Verdict),
    /// No consensus yet: asked again after a backoff.
    Waiting,
}

pub struct Oracle {
    sources: HashMap<Exchange, Vec<RateSource>>,
    deadline: chrono::Duration,
}

impl Oracle {
    /// `sources` of every venue, in the order the consensus rule reads them.
    pub fn new(sources: impl IntoIterator<Item = (Exchange, Vec<RateSource>)>, deadline: Duration) -> Oracle {
        let deadline = chrono::Duration::from_std(deadline).unwrap_or(chrono::Duration::hours(1));
        Oracle { sources: sources.into_iter().collect(), deadline }
    }

    /// One pass at `now`. Verdicts are sent to the chain in groups as they are reached, while
    /// later rounds are still being asked: the chain's work overlaps the venues' answers, and
    /// the first rounds can be paid out before the last are decided.
    pub async fn run_once(&self, s: &Services, now: DateTime<Utc>) -> Result<Report, ServiceError> {
        let due = oracle::awaiting(&s.db, now, ROUNDS_PER_PASS).await?;
        let venues = &self.read_venues(&due).await;
        let reports: Vec<Report> = futures_util::stream::iter(due)
            .map(|round| async move {
                let id = round.id;
                (id, self.decide(s, round, venues, now).await)
            })
            .buffer_unordered(CONCURRENT_ROUNDS)
            .chunks(FINALIZED_TOGETHER)
            .map(|decisions| end_rounds(s, decisions, now))
            .buffer_unordered(GROUPS_IN_FLIGHT)
            .collect()
            .await;
        Ok(reports.into_iter().sum())
    }

    /// Reads, once for the pass, each source that answers for a whole venue at once, at every
    /// settlement time two or more of the `due` rounds of that venue share.
    async fn read_venues(&self, due: &[AwaitingRound]) -> VenueReads {
        let mut rounds: HashMap<(Exchange, i64), usize> = HashMap::new();
        for round in due.iter().filter(|r| r.void_reason.is_none()) {
            if let Some(exchange) = Exchange::parse(&round.exchange) {
                *rounds.entry((exchange, round.settlement_ts.timestamp_millis())).or_default() += 1;
            }
        }
        let asks = rounds
            .into_iter()
            .filter(|(_, count)| *count > 1)
            .flat_map(|((exchange, settlement_ms), _)| self.sources.get(&exchange).into_iter().flatten().map(move |source| (source, settlement_ms)));
        join_all(asks.map(|(source, settlement_ms)| async move {
            let read = source.settled_rates(settlement_ms).await?;
            Some(((source.name.clone(), settlement_ms), read.map_err(|e| e.to_string())))
        }))
        .await
        .into_iter()
        .flatten()
        .collect()
    }

    /// Asks and records one round, and says what its readings decide: a source read for the
    /// whole venue this pass (`venues`) answers from that read, the others are asked.
    async fn decide(&self, s: &Services, round: AwaitingRound, venues: &VenueReads, now: DateTime<Utc>) -> Result<Decision, ServiceError> {
        if round.void_reason.is_some() {
            return Ok(Decision::End(Verdict::Void));
        }
        let sources: &[RateSource] = Exchange::parse(&round.exchange).and_then(|e| self.sources.get(&e)).map_or(&[], Vec::as_slice);
        let mut known: HashMap<String, i64> = oracle::readings(&s.db, round.id).await?.into_iter().collect();
        let settlement_ms = round.settlement_ts.timestamp_millis();
        let symbol = round.symbol.as_str();
        let asked = sources.iter().filter(|source| !known.contains_key(&source.name));
        let answers = join_all(asked.map(|source| async move {
            let read = match venues.get(&(source.name.clone(), settlement_ms)) {
                Some(Ok(readings)) => readings.reading(symbol).map(|r| r.map(|r| r.0).map_err(|e| e.to_string())),
                Some(Err(failed)) => Some(Err(failed.clone())),
                None => None,
            };
            let reading = match read {
                Some(reading) => reading,
                None => source.settled_rate(symbol, settlement_ms).await.map(|r| r.0).map_err(|e| e.to_string()),
            };
            NewObservation { source: source.name.clone(), reading, fetched_at: Utc::now() }
        }))
        .await;
        if !answers.is_empty() {
            oracle::record(&s.db, round.id, &answers).await?;
        }
        for answer in &answers {
            if let Ok(rate) = answer.reading {
                known.insert(answer.source.clone(), rate);
            }
        }
        let readings: Vec<FundingRate> = sources.iter().filter_map(|source| known.get(&source.name)).map(|r| FundingRate(*r)).collect();
        if let Consensus::Agreed { rate, .. } = consensus(&readings) {
            return Ok(Decision::End(Verdict::Settled(rate)));
        }
        if now >= round.settlement_ts + self.deadline {
            oracle::set_void_reason(&s.db, round.id, "no_consensus").await?;
            return Ok(Decision::End(Verdict::Void));
        }
        let next = (now + backoff(round.oracle_attempts)).min(round.settlement_ts + self.deadline);
        oracle::retry_at(&s.db, round.id, next).await?;
        Ok(Decision::Waiting)
    }
}

/// Ends the rounds `decisions` reached a verdict for, together (`settlement::finalize_all`),
/// and says what became of each.
async fn end_rounds(s: &Services, decisions: Vec<(Uuid, Result<Decision, ServiceError>)>, now: DateTime<Utc>) -> Report {
    let mut report = Report::default();
    let mut verdicts = Vec::new();
    for (market_id, decision) in decisions {
        match decision {
            Ok(Decision::End(verdict)) => verdicts.push((market_id, verdict)),
            Ok(Decision::Waiting) => report.waiting += 1,
            // One round's trouble (Postgres) must not hold up the others.
            Err(e) => {
                tracing::warn!(%market_id, error = %e, "oracle attempt failed; retried next pass");
                report.failed += 1;
            }
        }
    }
    let of: HashMap<Uuid, Verdict> = verdicts.iter().copied().collect();
    for (market_id, done) in settlement::finalize_all(s, &verdicts, now).await {
        match (done, of.get(&market_id)) {
            (Ok(()), Some(Verdict::Settled(rate))) => {
                tracing::info!(%market_id, %rate, "round settled by consensus");
                report.settled += 1;
            }
            (Ok(()), _) => {
                tracing::info!(%market_id, "round voided");
                report.voided += 1;
            }
            // A chain hiccup: the readings are kept, the verdict is reached again next pass.
            (Err(e), _) => {
                tracing::warn!(%market_id, error = %e, "finalizing failed; retried next pass");
                report.failed += 1;
            }
        }
    }
    report
}

/// How a round was (or is being) decided: everything `/v1/markets/{id}/resolution` shows.
pub struct Resolution {
    pub market: MarketRow,
    pub state: ResolutionRow,
    /// Every reading, oldest first.
    pub observations: Vec<ObservationRow>,
    /// The sources whose first reading agrees with the settled rate (empty unless settled).
    pub consensus_sources: Vec<String>,
    pub payouts: Vec<PayoutRow>,
}

pub async fn resolution(s: &Services, market_id: Uuid) -> Result<Resolution, ServiceError> {
    let market = markets::market(&s.db, market_id).await?.ok_or_else(|| ServiceError::NotFound(format!("no market {market_id}")))?;
    let (state, observations, payouts) = oracle::resolution(&s.db, market_id).await?.ok_or_else(|| ServiceError::NotFound(format!("no market {market_id}")))?;
    let consensus_sources = match (market.status, market.actual_rate) {
        (MarketStatus::Settled, Some(settled)) => {
            let readings = oracle::readings(&s.db, market_id).await?;
            readings.into_iter().filter(|(_, rate)| agree(FundingRate(*rate), FundingRate(settled))).map(|(source, _)| source).collect()
        }
        _ => Vec::new(),
    };
    Ok(Resolution { market, state, observations, consensus_sources, payouts })
}

/// The wait after `attempts` attempts without a verdict: 2 s, doubling, at most 60 s.
fn backoff(attempts: i32) -> chrono::Duration {
    let wait = FIRST_RETRY.saturating_mul(1 << attempts.clamp(0, 16)).min(LAST_RETRY);
    chrono::Duration::from_std(wait).expect("at most a minute")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_minute() {
        let secs: Vec<i64> = (0..8).map(|a| backoff(a).num_seconds()).collect();
        assert_eq!(secs, [2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(backoff(1_000).num_seconds(), 60);
    }
}
