//! The follow loop: from the stored cursor, every new program transaction of a chain source,
//! in order, through the projection. A crash at any point resumes from the stored cursor with no
//! gap and no duplicate: a catch-up batch commits with the cursor moved to its last transaction;
//! what a pass following the chain applies (a few transactions, `FOLLOWING_BATCH`), or passes
//! as applied ahead by this process, moves the cursor in memory, written at most every
//! `CURSOR_EVERY` — a crash re-reads those, whose events are recorded, a no-op.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::projection::Projector;
use chain_client::{ChainError, ChainSource, ConfirmedTransaction, SignatureInfo};

#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error(transparent)]
    Chain(#[from] ChainError),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error("the source lists {0} but cannot return it yet")]
    NotYetAvailable(String),
}

/// Transactions per database transaction while catching up. Per-row work on the rows a batch
/// upserts (a position, a vault balance, a trader's day and total) is paid once per key in the
/// batch, so larger batches catch up faster, up to about this size. A batch holds
/// the projection lock while it is applied (about half a second at 10,000), so a trade the
/// service projects itself waits at most that long during a catch-up; following the chain,
/// batches hold what is new.
pub const BATCH: usize = 10_000;
/// Transactions requested from the source at once (in order).
pub const FETCH_AHEAD: usize = 16;
/// A pass's batch of at most this many transactions is applied as a follow loop's passes are
/// (`Projector::apply_on_own`: the indexer's own connection, generic plans, the cursor left in
/// memory); a larger one is catching up (`Projector::apply_batch_through`: plans made for its
/// size, the cursor moved in the same commit). Following the chain, a pass holds what landed
/// since the last one, and moving the cursor in its commit (`BEGIN` with the lock, the upsert,
/// `COMMIT`) and reading it back at the next pass would be four of a one-trade pass's six round
/// trips to Postgres.
pub const FOLLOWING_BATCH: usize = 64;
/// How often the cursor is written while passes are small (`FOLLOWING_BATCH`) or only pass
/// transactions applied ahead: in a process that follows a busy chain nearly every pass is one,
/// and writing the cursor each time would add three statements to every pass.
pub const CURSOR_EVERY: Duration = Duration::from_secs(1);

pub struct Indexer<S> {
    source: S,
    projector: Projector,
    program: String,
    batch: usize,
    cursor_every: Duration,
    unwritten: Mutex<Unwritten>,
    /// The connection small batches are applied on (`Projector::apply_on_own`).
    own: tokio::sync::Mutex<Option<sqlx::PgConnection>>,
}

/// Where passes have taken the cursor without writing it.
#[derive(Default)]
struct Unwritten {
    /// The last transaction passed (`None`: the stored cursor is where this indexer is).
    through: Option<SignatureInfo>,
    /// When the cursor was last written.
    written_at: Option<Instant>,
}

/// A chunk's transactions as fetched for one batch.
struct Fetched {
    /// Those read, in order.
    batch: Vec<ConfirmedTransaction>,
    /// How many were passed as applied ahead.
    ahead: usize,
    /// The last listed transaction passed (read, or applied ahead): where the batch moves the
    /// cursor (`None`: nothing passed).
    through: Option<SignatureInfo>,
    /// The first listed transaction the source could not return yet, which ends the pass.
    stopped: Option<String>,
    /// The chunk ends before a transaction this process is still sending, which ends the pass.
    waits_for_sender: bool,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub transactions: usize,
    pub events: usize,
    /// The pass ended before a transaction this process is still sending (`Projector::sending`):
    /// the next pass is due once it is sent and applied.
    pub waits_for_sender: bool,
}

/// The service's metrics of how far the projection is behind the chain, from a pass's listing
/// of what is not yet applied: `fm_indexer_lag_transactions`, `fm_indexer_lag_slots` (from the
/// oldest to the newest unapplied transaction, 0 when caught up) and `fm_indexer_lag_seconds`
/// (how old the oldest unapplied transaction is).
fn record_lag(pending: &[SignatureInfo]) {
    let (slots, seconds) = match (pending.first(), pending.last()) {
        (Some(oldest), Some(newest)) => {
            let age = oldest.block_time.map_or(0, |t| (chrono::Utc::now().timestamp() - t).max(0));
            (newest.slot.saturating_sub(oldest.slot) + 1, age)
        }
        _ => (0, 0),
    };
    metrics::gauge!("fm_indexer_lag_transactions").set(pending.len() as f64);
    metrics::gauge!("fm_indexer_lag_slots").set(slots as f64);
    metrics::gauge!("fm_indexer_lag_seconds").set(seconds as f64);
}

impl<S: ChainSource> Indexer<S> {
    pub fn new(source: S, projector: Projector, program: &str) -> Indexer<S> {
        Indexer {
            source,
            projector,
            program: program.to_owned(),
            batch: BATCH,
            cursor_every: CURSOR_EVERY,
            unwritten: Mutex::default(),
            own: tokio::sync::Mutex::default(),
        }
    }

    /// Transactions per database transaction (default `BATCH`).
    pub fn with_batch(self, batch: usize) -> Indexer<S> {
        Indexer { batch: batch.max(1), ..self }
    }

    /// How often passes of transactions applied ahead write the cursor (default `CURSOR_EVERY`).
    pub fn with_cursor_every(self, every: Duration) -> Indexer<S> {
        Indexer { cursor_every: every, ..self }
    }

    fn unwritten(&self) -> std::sync::MutexGuard<'_, Unwritten> {
        self.unwritten.lock().expect("the unwritten cursor is never poisoned")
    }

    /// Where the next pass starts: past what earlier passes passed unwritten, else the stored
    /// cursor.
    async fn cursor(&self) -> Result<Option<String>, sqlx::Error> {
        let passed = self.unwritten().through.as_ref().map(|info| info.signature.clone());
        match passed {
            Some(signature) => Ok(Some(signature)),
            None => self.projector.cursor().await,
        }
    }

    /// Moves the cursor past `last` after a batch whose events are all recorded (applied by
    /// this pass or ahead): in memory, and in Postgres if due (`write_unwritten`). No projection
    /// lock is needed.
    async fn pass(&self, last: SignatureInfo) -> Result<(), sqlx::Error> {
        self.unwritten().through = Some(last);
        self.write_unwritten(false).await
    }

    /// How long until the cursor left unwritten is due to be written (`None`: nothing is).
    fn write_due_in(&self) -> Option<Duration> {
        let unwritten = self.unwritten();
        unwritten.through.as_ref()?;
        Some(unwritten.written_at.map_or(Duration::ZERO, |at| self.cursor_every.saturating_sub(at.elapsed())))
    }

    /// Writes the cursor where passes left it unwritten, if `cursor_every` has gone by since the
    /// last write (the first write is due at once), or whenever if `force`.
    async fn write_unwritten(&self, force: bool) -> Result<(), sqlx::Error> {
        let through = match self.write_due_in() {
            Some(due_in) if force || due_in.is_zero() => self.unwritten().through.clone(),
            _ => None,
        };
        if let Some(last) = through {
            self.projector.move_cursor(&last.signature, last.slot).await?;
            self.written();
        }
        Ok(())
    }

    /// The cursor was written where this indexer is (passes are sequential, so every write is
    /// at or past what was passed before it).
    fn written(&self) {
        *self.unwritten() = Unwritten { through: None, written_at: Some(Instant::now()) };
    }

    /// Applies everything the source has after the cursor, a batch per database transaction
    /// (a crash loses at most the batch in flight, which the next pass applies again from the
    /// stored cursor, with what small batches passed since it was written: `FOLLOWING_BATCH`).
    /// Each batch's transactions are fetched `FETCH_AHEAD` at a time, in order, while the batch
    /// before it is applied: with a node's RPC the fetching, with the embedded chain
    /// Postgres, is what takes the time, and one need not wait for the other.
    pub async fn run_once(&self) -> Result<Progress, FollowError> {
        let cursor = self.cursor().await?;
        let signatures = self.source.signatures_after(&self.program, cursor.as_deref()).await?;
        record_lag(&signatures);
        let mut progress = Progress::default();
        let mut chunks = signatures.chunks(self.batch);
        let mut fetched = match chunks.next() {
            Some(chunk) => Some(self.fetch(chunk).await),
            None => None,
        };
        while let Some(this) = fetched.take() {
            let Fetched { batch, ahead, through, stopped, waits_for_sender } = this?;
            let apply = async {
                match through {
                    Some(last) if batch.is_empty() => self.pass(last).await.map(|()| 0),
                    Some(last) if batch.len() <= FOLLOWING_BATCH => {
                        let new = self.projector.apply_on_own(&mut *self.own.lock().await, &batch).await?;
                        self.pass(last).await?;
                        Ok(new)
                    }
                    Some(last) => {
                        let new = self.projector.apply_batch_through(&batch, &last.signature, last.slot).await?;
                        self.written();
                        Ok(new)
                    }
                    None => Ok(0),
                }
            };
            let applied = match chunks.next().filter(|_| stopped.is_none() && !waits_for_sender) {
                Some(next) => {
                    let (applied, next) = tokio::join!(apply, self.fetch(next));
                    fetched = Some(next);
                    applied
                }
                None => apply.await,
            };
            progress.events += applied?;
            progress.transactions += batch.len() + ahead;
            if let Some(signature) = stopped {
                return Err(FollowError::NotYetAvailable(signature));
            }
            if waits_for_sender {
                progress.waits_for_sender = true;
                return Ok(progress);
            }
        }
        // Caught up with what the pass listed.
        record_lag(&[]);
        Ok(progress)
    }

    /// The transactions of `chunk`, in order, up to the first the node cannot return yet (a
    /// listed signature it cannot return ends the pass after what precedes it; the next pass
    /// resumes there). Those the projector applied ahead (`Projector::take_applied`) are passed
    /// without being read (their events are recorded): the cursor still moves past them.
    async fn fetch(&self, chunk: &[SignatureInfo]) -> Result<Fetched, FollowError> {
        let mut fetched = Fetched { batch: Vec::with_capacity(chunk.len()), ahead: 0, through: None, stopped: None, waits_for_sender: false };
        for window in chunk.chunks(FETCH_AHEAD) {
            // Up to the first transaction this process is still sending: its sender applies it
            // (the pass ends there, and the next begins once it has).
            let sending = window.iter().position(|info| self.projector.is_sending(&info.signature));
            let window = &window[..sending.unwrap_or(window.len())];
            let ahead: Vec<bool> = window.iter().map(|info| self.projector.take_applied(&info.signature)).collect();
            let unread: Vec<&str> = window.iter().zip(&ahead).filter(|(_, ahead)| !**ahead).map(|(info, _)| info.signature.as_str()).collect();
            let mut read = match unread.is_empty() {
                true => Vec::new(),
                false => self.source.transactions(&unread).await?,
            }
            .into_iter();
            for (info, ahead) in window.iter().zip(ahead) {
                match ahead {
                    true => fetched.ahead += 1,
                    false => match read.next().flatten() {
                        Some(tx) => fetched.batch.push(tx),
                        None => {
                            fetched.stopped = Some(info.signature.clone());
                            return Ok(fetched);
                        }
                    },
                }
                fetched.through = Some(info.clone());
            }
            if sending.is_some() {
                fetched.waits_for_sender = true;
                return Ok(fetched);
            }
        }
        Ok(fetched)
    }

    /// Follows until `stop` completes: a pass every `period`, or as soon as `confirmations`
    /// changes (the embedded chain announces each confirmed transaction, so its lag is one
    /// pass, not a poll). Errors are logged and retried. `stop` is only looked at between
    /// passes: a batch in flight is committed (or fails) whole. A cursor left unwritten is
    /// written when due even if nothing wakes the loop, and when it stops.
    pub async fn follow(&self, period: Duration, mut confirmations: Option<watch::Receiver<i64>>, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        let mut sent = self.projector.subscribe_sent();
        loop {
            // Seen before the pass: a sender finishing during it wakes the wait below at once.
            sent.borrow_and_update();
            let waits_for_sender = match self.run_once().await {
                Ok(p) => {
                    if p.transactions > 0 {
                        tracing::debug!(?p, "indexed");
                    }
                    p.waits_for_sender
                }
                Err(e) => {
                    tracing::warn!(error = %e, "indexer pass failed; retrying");
                    false
                }
            };
            // Until the next pass: `period`, or sooner when a cursor left unwritten falls due
            // (after a failed write, `period`, as after a failed pass).
            let wait = match self.write_unwritten(false).await {
                Ok(()) => self.write_due_in().map_or(period, |due_in| due_in.min(period)),
                Err(e) => {
                    tracing::warn!(error = %e, "indexer: writing the cursor failed; retrying");
                    period
                }
            };
            match confirmations.as_mut() {
                Some(rx) => {
                    tokio::select! {
                        _ = &mut stop => return self.stop().await,
                        changed = rx.changed() => if changed.is_err() { confirmations = None },
                        _ = sent.changed(), if waits_for_sender => {}
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
                None => tokio::select! {
                    _ = &mut stop => return self.stop().await,
                    _ = sent.changed(), if waits_for_sender => {}
                    _ = tokio::time::sleep(wait) => {}
                },
            }
        }
    }

    async fn stop(&self) {
        if let Err(e) = self.write_unwritten(true).await {
            tracing::warn!(error = %e, "indexer: the cursor could not be written on stopping; the next start re-reads what it passed");
        }
    }
}
