//! The round scheduler: keeps the next rounds of every active series created ahead
//! from the series' current interval (as its exchange reports it), with an OU prior each; moves
//! statuses with the clock (pending → open → closed at settlement − 5 min → resolving at
//! settlement); marks rounds whose settlement time no longer exists after an interval change to
//! be voided (the oracle voids them on chain). A series with short rounds (`round_minutes`, on
//! the simulated exchange) keeps its own interval; its rounds overlap (below).
//!
//! Run by a singleton worker (`workers::scheduler`): one replica at a time. Idempotent all the
//! same: rounds are unique per (series, settlement time), so a pass run twice, or on two
//! replicas at once, creates nothing twice.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::domain::prior;
use crate::exchanges::{Exchange, ExchangeClient, ExchangeError, FundingRate};
use crate::services::ServiceError;
use crate::store::rounds::{self, ActiveSeries, NewRound};

/// Where a pass reads the time: `Utc::now` in the service, a fixed or stepping clock in tests.
/// Read after each venue answers, never before: a venue that answers after one of its
/// settlements has already rolled its next funding time past it.
pub type Clock<'a> = &'a (dyn Fn() -> DateTime<Utc> + Send + Sync);

/// Trading stops this long before settlement (contract).
pub const CLOSE_BEFORE_SETTLEMENT: chrono::Duration = chrono::Duration::minutes(5);

/// Short rounds are created this far ahead at most.
const SHORT_ROUNDS_HORIZON: chrono::Duration = chrono::Duration::hours(1);
/// History fitted for the prior.
const PRIOR_HISTORY: chrono::Duration = chrono::Duration::days(60);

pub struct Scheduler {
    db: PgPool,
    venues: HashMap<Exchange, ExchangeClient>,
    /// Rounds are kept created this far ahead (at least the next two).
    horizon: chrono::Duration,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub created: u64,
    pub voided: u64,
    pub status_changes: u64,
    /// Series whose exchange could not be read this run (they are retried next run).
    pub skipped: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
enum PlanError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
    #[error("no adapter for {0}")]
    NoVenue(String),
}

impl Scheduler {
    pub fn new(db: PgPool, venues: Vec<ExchangeClient>, horizon: Duration) -> Scheduler {
        let venues = venues.into_iter().map(|v| (v.exchange(), v)).collect();
        Scheduler { db, venues, horizon: chrono::Duration::from_std(horizon).unwrap_or(chrono::Duration::hours(24)) }
    }

    /// One pass with the clock standing at `now`.
    pub async fn run_once(&self, now: DateTime<Utc>) -> Result<Report, sqlx::Error> {
        self.run_once_with(&move || now).await
    }

    /// One pass, reading `clock` after each venue's answer and once at the end.
    pub async fn run_once_with(&self, clock: Clock<'_>) -> Result<Report, sqlx::Error> {
        let mut report = Report::default();
        for s in &rounds::active_series(&self.db).await? {
            match self.plan(s, clock).await {
                Ok((created, voided)) => {
                    report.created += created;
                    report.voided += voided;
                }
                Err(PlanError::Db(e)) => return Err(e),
                Err(e) => {
                    tracing::warn!(series = %s.slug, error = %e, "scheduler skipped a series");
                    report.skipped.push(s.slug.clone());
                }
            }
        }
        report.status_changes = rounds::advance_statuses(&self.db, clock()).await?;
        crate::store::markets::compact_status_counts(&self.db).await?;
        Ok(report)
    }

    /// Plans the series on `exchange` whose symbol is among `symbols` at once — the collectors
    /// call it when they see those perps' intervals change, so new rounds follow the new
    /// interval and rounds whose settlement time no longer exists are marked for voiding
    /// without waiting for the next pass. Returns (created, voided).
    pub async fn replan(&self, exchange: &str, symbols: &[&str], clock: Clock<'_>) -> Result<(u64, u64), ServiceError> {
        let mut totals = (0, 0);
        for s in rounds::active_series(&self.db).await?.iter().filter(|s| s.exchange == exchange && symbols.contains(&s.symbol.as_str())) {
            match self.plan(s, clock).await {
                Ok((created, voided)) => totals = (totals.0 + created, totals.1 + voided),
                Err(PlanError::Db(e)) => return Err(e.into()),
                Err(e) => tracing::warn!(series = %s.slug, error = %e, "replanning after an interval change failed; the next pass retries"),
            }
        }
        Ok(totals)
    }

    /// Creates the missing rounds of one series and voids those its interval no longer has.
    async fn plan(&self, s: &ActiveSeries, clock: Clock<'_>) -> Result<(u64, u64), PlanError> {
        let venue = Exchange::parse(&s.exchange).and_then(|e| self.venues.get(&e)).ok_or_else(|| PlanError::NoVenue(s.exchange.clone()))?;
        let current = venue.current(&s.symbol).await?;
        let now = clock();
        let interval = match s.round_minutes {
            Some(minutes) => chrono::Duration::minutes(minutes as i64),
            None => chrono::Duration::hours(current.interval_hours as i64),
        };
        if current.interval_hours as i16 != s.interval_hours {
            tracing::info!(series = %s.slug, from = s.interval_hours, to = current.interval_hours, "funding interval changed");
            rounds::set_interval(&self.db, s.id, current.interval_hours as i16).await?;
        }
        let next = Utc.timestamp_millis_opt(current.next_funding_ms).single().ok_or(ExchangeError::Format("nextFundingTime".into()))?;
        let on_grid = |t: DateTime<Utc>| t >= next && (t - next).num_seconds() % interval.num_seconds() == 0;
        // A round settling at or before the venue's previous funding time has been settled by
        // the venue (it rolled `nextFundingTime` past it): the oracle resolves it, never a void.
        let previous = next - interval;

        // Void future rounds whose settlement time the current interval no longer has: marked
        // here (trading stops), voided on chain and refunded by the oracle and the crank.
        let future = rounds::future_rounds(&self.db, s.id, now).await?;
        let mut voided = 0;
        for (id, settlement) in &future {
            if *settlement > previous && !on_grid(*settlement) {
                voided += u64::from(rounds::mark_for_void(&self.db, *id).await?);
            }
        }

        // The settlement times to have: the next ones within the horizon (an hour of short
        // rounds: a day of them would be hundreds), at least two.
        let horizon = if s.round_minutes.is_some() { self.horizon.min(SHORT_ROUNDS_HORIZON) } else { self.horizon };
        let mut wanted = Vec::new();
        let mut t = next;
        while wanted.len() < 2 || t <= now + horizon {
            wanted.push(t);
            t += interval;
        }
        let existing: HashSet<DateTime<Utc>> = future.iter().map(|(_, t)| *t).collect();
        let missing: Vec<DateTime<Utc>> = wanted.into_iter().filter(|t| !existing.contains(t)).collect();
        if missing.is_empty() {
            return Ok((0, voided));
        }
        let history: Vec<FundingRate> = match venue.funding_history(&s.symbol, (now - PRIOR_HISTORY).timestamp_millis(), now.timestamp_millis()).await {
            Ok(points) => points.into_iter().map(|p| p.rate).collect(),
            Err(e) => {
                tracing::warn!(series = %s.slug, error = %e, "no history for the prior; using 0.5");
                Vec::new()
            }
        };
        let mut created = 0;
        for settlement in missing {
            let horizon_hours = (settlement - now).num_seconds() as f64 / 3600.0;
            let p = prior::prior(&history, current.interval_hours as f64, current.rate, horizon_hours);
            created += insert_round(&self.db, s, settlement, interval, now, p).await?;
        }
        Ok((created, voided))
    }
}

/// Inserts the round settling at `settlement`: it opens when the series' previous round settles
/// (or now, for the first), closes 5 minutes before settlement, and starts at the prior's price.
/// A short round closes 5 minutes before settlement too (the contract; the program enforces
/// it), so it trades for the `interval` before that: short rounds overlap, the next trading
/// while the one before waits out its last 5 minutes.
async fn insert_round(
    db: &PgPool,
    s: &ActiveSeries,
    settlement: DateTime<Utc>,
    interval: chrono::Duration,
    now: DateTime<Utc>,
    p: prior::Prior,
) -> Result<u64, sqlx::Error> {
    let close = settlement - CLOSE_BEFORE_SETTLEMENT;
    let open = match s.round_minutes {
        Some(_) => close - interval,
        None => rounds::previous_settlement(db, s.id, settlement).await?.unwrap_or(now),
    };
    if close <= open.max(now) {
        return Ok(0); // too close to settlement to be worth trading
    }
    // The program opens every market within [0.02, 0.98] (whatever the estimate): the same
    // opening state here, so quotes before the market is on chain match it.
    let opening =
        lmsr::Lmsr::opening(s.liquidity_b as u64, p.p_yes_ppm.clamp(lmsr::PRIOR_MIN_PPM, lmsr::PRIOR_MAX_PPM)).expect("tier liquidity is in the LMSR domain");
    let (yes_price, _) = opening.prices_micro();
    let id = Uuid::new_v4();
    let round = NewRound {
        id,
        series_id: s.id,
        open_ts: open,
        close_ts: close,
        settlement_ts: settlement,
        liquidity_b: s.liquidity_b,
        q_yes: opening.q(lmsr::Side::Yes) as i64,
        q_no: opening.q(lmsr::Side::No) as i64,
        yes_price_ppm: yes_price as i32,
        ou_prior_ppm: p.p_yes_ppm as i32,
        ou_confidence_ppm: p.confidence_ppm as i32,
        // The program account's address is known before the account exists (a PDA of the id), so
        // events of the market are projected whichever arrives first.
        onchain_address: funding_market::client::market_pda(id.as_bytes()).to_string(),
        now,
    };
    Ok(u64::from(rounds::insert(db, &round).await?))
}
