//! The round scheduler (DESIGN §6): keeps the next rounds of every active series created ahead
//! from the series' current interval (as its exchange reports it), with an OU prior each; moves
//! statuses with the clock (pending → open → closed at settlement − 5 min → resolving at
//! settlement); voids rounds whose settlement time no longer exists after an interval change.
//!
//! One replica at a time: each run holds a Postgres advisory lock (session-scoped, so a crashed
//! holder releases it). Idempotent: rounds are unique per (series, settlement time), so running
//! twice, or on two replicas, creates nothing twice.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::exchanges::{Exchange, ExchangeClient, ExchangeError, FundingRate};
use crate::prior;

/// "FMSCHEDU": the advisory-lock key of the scheduler.
const LOCK_KEY: i64 = 0x464D_5343_4845_4455;
/// Trading stops this long before settlement (contract).
pub const CLOSE_BEFORE_SETTLEMENT: chrono::Duration = chrono::Duration::minutes(5);
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
    /// Another replica held the lock; nothing was done.
    pub locked_out: bool,
    pub created: u64,
    pub voided: u64,
    pub status_changes: u64,
    /// Series whose exchange could not be read this run (they are retried next run).
    pub skipped: Vec<String>,
}

#[derive(sqlx::FromRow)]
struct SeriesRow {
    id: Uuid,
    exchange: String,
    symbol: String,
    slug: String,
    liquidity_b: i64,
    interval_hours: i16,
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

    /// One pass at time `now`.
    pub async fn run_once(&self, now: DateTime<Utc>) -> Result<Report, sqlx::Error> {
        let mut lock = self.db.acquire().await?;
        let acquired: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)").bind(LOCK_KEY).fetch_one(&mut *lock).await?;
        if !acquired {
            return Ok(Report { locked_out: true, ..Report::default() });
        }
        let result = self.run_locked(now).await;
        sqlx::query("SELECT pg_advisory_unlock($1)").bind(LOCK_KEY).execute(&mut *lock).await?;
        result
    }

    async fn run_locked(&self, now: DateTime<Utc>) -> Result<Report, sqlx::Error> {
        let mut report = Report::default();
        let series: Vec<SeriesRow> =
            sqlx::query_as("SELECT id, exchange, symbol, slug, liquidity_b, interval_hours FROM series WHERE active ORDER BY slug")
                .fetch_all(&self.db)
                .await?;
        for s in &series {
            match self.plan(s, now).await {
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
        report.status_changes = advance_statuses(&self.db, now).await?;
        Ok(report)
    }

    /// Creates the missing rounds of one series and voids those its interval no longer has.
    async fn plan(&self, s: &SeriesRow, now: DateTime<Utc>) -> Result<(u64, u64), PlanError> {
        let venue = Exchange::parse(&s.exchange).and_then(|e| self.venues.get(&e)).ok_or_else(|| PlanError::NoVenue(s.exchange.clone()))?;
        let current = venue.current(&s.symbol).await?;
        let interval = chrono::Duration::hours(current.interval_hours as i64);
        if current.interval_hours as i16 != s.interval_hours {
            tracing::info!(series = %s.slug, from = s.interval_hours, to = current.interval_hours, "funding interval changed");
            sqlx::query("UPDATE series SET interval_hours = $2 WHERE id = $1").bind(s.id).bind(current.interval_hours as i16).execute(&self.db).await?;
        }
        let next = Utc.timestamp_millis_opt(current.next_funding_ms).single().ok_or(ExchangeError::Format("nextFundingTime".into()))?;
        let on_grid = |t: DateTime<Utc>| t >= next && (t - next).num_seconds() % interval.num_seconds() == 0;

        // Void future rounds whose settlement time the current interval no longer has.
        let future: Vec<(Uuid, DateTime<Utc>)> = sqlx::query_as(
            "SELECT id, settlement_ts FROM markets WHERE series_id = $1 AND settlement_ts > $2
             AND status IN ('pending', 'open', 'closed')",
        )
        .bind(s.id)
        .bind(now)
        .fetch_all(&self.db)
        .await?;
        let mut voided = 0;
        for (id, settlement) in &future {
            if !on_grid(*settlement) {
                voided += sqlx::query("UPDATE markets SET status = 'voided', settled_at = $2 WHERE id = $1 AND status IN ('pending', 'open', 'closed')")
                    .bind(id)
                    .bind(now)
                    .execute(&self.db)
                    .await?
                    .rows_affected();
            }
        }

        // The settlement times to have: the next ones within the horizon, at least two.
        let mut wanted = Vec::new();
        let mut t = next;
        while wanted.len() < 2 || t <= now + self.horizon {
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
            created += insert_round(&self.db, s, settlement, now, p).await?;
        }
        Ok((created, voided))
    }
}

/// Inserts the round settling at `settlement`: it opens when the series' previous round settles
/// (or now, for the first), closes 5 minutes before settlement, and starts at the prior's price.
async fn insert_round(db: &PgPool, s: &SeriesRow, settlement: DateTime<Utc>, now: DateTime<Utc>, p: prior::Prior) -> Result<u64, sqlx::Error> {
    let previous: Option<DateTime<Utc>> = sqlx::query_scalar(
        "SELECT max(settlement_ts) FROM markets WHERE series_id = $1 AND settlement_ts < $2 AND status <> 'voided'",
    )
    .bind(s.id)
    .bind(settlement)
    .fetch_one(db)
    .await?;
    let open = previous.unwrap_or(now);
    let close = settlement - CLOSE_BEFORE_SETTLEMENT;
    if close <= open.max(now) {
        return Ok(0); // too close to settlement to be worth trading
    }
    // The program opens every market within [0.02, 0.98] (whatever the estimate): the same
    // opening state here, so quotes before the market is on chain match it.
    let opening = lmsr::Lmsr::opening(s.liquidity_b as u64, p.p_yes_ppm.clamp(lmsr::PRIOR_MIN_PPM, lmsr::PRIOR_MAX_PPM)).expect("tier liquidity is in the LMSR domain");
    let (yes_price, _) = opening.prices_micro();
    let id = Uuid::new_v4();
    let inserted = sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no,
                              yes_price_ppm, ou_prior_ppm, ou_confidence_ppm, onchain_address)
         SELECT $1, $2, COALESCE(max(round_number), 0) + 1, $3, $4, $5, 'pending', $6, $7, $8, $9, $10, $11, $12
         FROM markets WHERE series_id = $2
         ON CONFLICT (series_id, settlement_ts) DO NOTHING",
    )
    .bind(id)
    .bind(s.id)
    .bind(open)
    .bind(close)
    .bind(settlement)
    .bind(s.liquidity_b)
    .bind(opening.q(lmsr::Side::Yes) as i64)
    .bind(opening.q(lmsr::Side::No) as i64)
    .bind(yes_price as i32)
    .bind(p.p_yes_ppm as i32)
    .bind(p.confidence_ppm as i32)
    // The program account's address is known before the account exists (a PDA of the id), so
    // events of the market are projected whichever arrives first.
    .bind(funding_market::client::market_pda(id.as_bytes()).to_string())
    .execute(db)
    .await?
    .rows_affected();
    if inserted == 1 {
        sqlx::query("INSERT INTO market_prices (market_id, at, yes_price_ppm) VALUES ($1, $2, $3)")
            .bind(id)
            .bind(now)
            .bind(yes_price as i32)
            .execute(db)
            .await?;
    }
    Ok(inserted)
}

/// Moves every unfinished round to the status its times give it at `now`.
pub async fn advance_statuses(db: &PgPool, now: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "WITH due AS (
             SELECT id, CASE WHEN $1 >= settlement_ts THEN 'resolving'
                             WHEN $1 >= close_ts THEN 'closed'
                             WHEN $1 >= open_ts THEN 'open'
                             ELSE 'pending' END AS status
             FROM markets WHERE status IN ('pending', 'open', 'closed'))
         UPDATE markets m SET status = due.status FROM due WHERE m.id = due.id AND m.status <> due.status",
    )
    .bind(now)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Runs the scheduler every `period` until the task is dropped.
pub fn spawn(scheduler: Scheduler, period: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match scheduler.run_once(Utc::now()).await {
                Ok(report) if report.created + report.voided > 0 || !report.skipped.is_empty() => {
                    tracing::info!(?report, "scheduler run");
                }
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "scheduler run failed"),
            }
            tokio::time::sleep(period).await;
        }
    })
}
