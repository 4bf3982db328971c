//! Projects the program's events into Postgres. A batch of confirmed transactions at a time, in
//! one database transaction that also advances the cursor: every event is recorded once (unique on
//! signature + outer instruction + event index, with its raw bytes), and only a newly recorded
//! event changes the projection, so duplicate deliveries are no-ops. Failed transactions and
//! instructions that are not events are skipped. Out-of-order deliveries cannot regress state:
//! market and position updates apply only if they carry a later trade count, balances only if
//! they come from a later slot.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use anchor_lang::prelude::Pubkey;
use chrono::{DateTime, TimeZone, Utc};
use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;
use sqlx::{Arguments, Connection, PgConnection, PgPool, Postgres, Transaction};
use tokio::sync::{oneshot, watch};
use uuid::Uuid;

use crate::deposits;
use crate::events::{self, ProgramEvent};
use crate::stats;
use chain_client::ConfirmedTransaction;
use funding_market::state::Side;
use group_commit::GroupQueue;

mod finalizations;
mod payouts;
mod trades;
use finalizations::FinalizationRun;
use payouts::PayoutRun;
use trades::TradeRun;

#[derive(Clone)]
pub struct Projector {
    db: PgPool,
    program_id: String,
    ahead: Arc<Ahead>,
}

/// Transactions the service sent itself, waiting to be applied ahead of the indexer, and the
/// turn to apply them: whoever has the turn applies every transaction waiting then in one
/// database transaction (group projection). One at a time, concurrent trades queued on the
/// projection lock and its commit, one trade per commit.
struct Ahead {
    /// The transactions waiting, and the turn: the connection groups are applied on
    /// (`group_commit::on_own_connection`; `None` until the first group, and after a failure).
    waiting: GroupQueue<Waiting, Option<PgConnection>>,
    /// What was applied ahead, until the indexer passes it (`Applied`).
    applied: Mutex<Applied>,
    /// Signatures being sent by this process and not yet applied ahead (`Projector::sending`).
    sending: Mutex<HashSet<String>>,
    /// Bumped whenever one leaves `sending`: wakes an indexer waiting on it.
    sent: watch::Sender<u64>,
}

impl Default for Ahead {
    fn default() -> Ahead {
        Ahead { waiting: GroupQueue::new("projection", None), applied: Mutex::default(), sending: Mutex::default(), sent: watch::Sender::default() }
    }
}

/// A transaction to apply ahead and its caller, answered once it is applied.
type Waiting = (ConfirmedTransaction, oneshot::Sender<Result<(), sqlx::Error>>);

/// A transaction this process is sending and will apply ahead itself: while this is held, the
/// indexer of the same projector stops before it (`Projector::is_sending`) instead of reading
/// and projecting it a second time; dropped — applied, failed, or abandoned — it wakes that
/// indexer.
pub struct Sending {
    ahead: Arc<Ahead>,
    signature: String,
}

impl Drop for Sending {
    fn drop(&mut self) {
        self.ahead.sending.lock().expect("the sending set is never poisoned").remove(&self.signature);
        self.ahead.sent.send_modify(|n| *n += 1);
    }
}

/// At most this many applied signatures are remembered (past it the oldest are forgotten: an
/// indexer that had not passed them yet applies them again, a no-op).
const REMEMBERED_APPLIED: usize = 16_384;

/// Signatures applied ahead and committed by this projector (or a clone), oldest first, until
/// the indexer following the chain with it passes them (`Projector::take_applied`). With
/// `Sending` (the indexer stops before what is still being sent), a process that both trades
/// and indexes projects each of its transactions once.
#[derive(Default)]
struct Applied {
    order: VecDeque<String>,
    signatures: HashSet<String>,
}

impl Applied {
    fn remember(&mut self, signature: &str) {
        if self.signatures.insert(signature.to_owned()) {
            self.order.push_back(signature.to_owned());
        }
        while self.order.len() > REMEMBERED_APPLIED {
            if let Some(oldest) = self.order.pop_front() {
                self.signatures.remove(&oldest);
            }
        }
    }
}

/// Where an event sits in its transaction.
struct At<'a> {
    signature: &'a str,
    ix_index: i32,
    slot: i64,
    /// The transaction's position in its block (0 where the node did not report it): with the
    /// slot, the order transactions landed in.
    tx_index: i32,
}

/// The `chain_events` columns of a run's events (key and raw bytes), bound as its statement's
/// first six arrays (`$1`..`$6`).
#[derive(Default)]
struct RecordedEvents {
    /// (signature, instruction, event index) of each event taken: a delivery repeated inside
    /// one run is taken once (one statement cannot insert a key twice and see it as new once).
    seen: HashSet<(String, i32, i32)>,
    signature: Vec<String>,
    ix_index: Vec<i32>,
    event_index: Vec<i32>,
    slot: Vec<i64>,
    tx_index: Vec<i32>,
    data: Vec<Vec<u8>>,
}

impl RecordedEvents {
    /// Takes the event; false (and nothing taken) if the run already holds it.
    fn push(&mut self, at: &At<'_>, event_index: i32, data: &[u8]) -> bool {
        if !self.seen.insert((at.signature.to_string(), at.ix_index, event_index)) {
            return false;
        }
        self.signature.push(at.signature.to_string());
        self.ix_index.push(at.ix_index);
        self.event_index.push(event_index);
        self.slot.push(at.slot);
        self.tx_index.push(at.tx_index);
        self.data.push(data.to_vec());
        true
    }

    fn is_empty(&self) -> bool {
        self.signature.is_empty()
    }

    fn len(&self) -> usize {
        self.signature.len()
    }

    /// A statement's arguments, the six columns first (more may be bound after them).
    fn arguments(&self) -> Result<PgArguments, sqlx::Error> {
        let mut arguments = PgArguments::default();
        self.add_to(&mut arguments).map_err(sqlx::Error::Encode)?;
        Ok(arguments)
    }

    /// The six columns, in order, added to `arguments`.
    fn add_to(&self, arguments: &mut PgArguments) -> Result<(), BoxDynError> {
        arguments.add(&self.signature)?;
        arguments.add(&self.ix_index)?;
        arguments.add(&self.event_index)?;
        arguments.add(&self.slot)?;
        arguments.add(&self.tx_index)?;
        arguments.add(&self.data)
    }
}

/// Part of another writer's statement that applies transactions in it, committed with that
/// statement's own rows (`Projector::in_ledger`).
#[derive(Debug)]
pub struct StatementPart {
    /// Common table expressions (`name AS (…)`, comma-separated) to follow the statement's own,
    /// their parameters numbered after the statement's.
    pub ctes: String,
    /// A boolean expression over them: whether the transactions were applied.
    pub applied: String,
}

fn time(ts: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(ts, 0).single().unwrap_or_default()
}

fn side(side: Side) -> &'static str {
    match side {
        Side::Yes => "yes",
        Side::No => "no",
    }
}

impl Projector {
    pub fn new(db: PgPool, program_id: &Pubkey) -> Projector {
        Projector { db, program_id: program_id.to_string(), ahead: Arc::default() }
    }

    /// The last transaction applied, if any.
    pub async fn cursor(&self) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar("SELECT signature FROM chain_cursor WHERE program = $1").bind(&self.program_id).fetch_optional(&self.db).await
    }

    /// Applies one confirmed transaction and moves the cursor to it. Returns how many events
    /// were new.
    pub async fn apply(&self, tx: &ConfirmedTransaction) -> Result<usize, sqlx::Error> {
        self.apply_batch(std::slice::from_ref(tx)).await
    }

    /// Applies consecutive confirmed transactions, in order, in one database transaction that
    /// ends by moving the cursor to the last: all of them or none (one commit instead of one
    /// per transaction is what makes catching up fast).
    pub async fn apply_batch(&self, txs: &[ConfirmedTransaction]) -> Result<usize, sqlx::Error> {
        let Some(last) = txs.last() else { return Ok(0) };
        self.apply_batch_through(txs, &last.signature, last.slot).await
    }

    /// `apply_batch`, moving the cursor to `signature` (at `slot`): the last of `txs`, or a
    /// later transaction whose events are recorded already (applied ahead).
    pub async fn apply_batch_through(&self, txs: &[ConfirmedTransaction], signature: &str, slot: u64) -> Result<usize, sqlx::Error> {
        let mut connection = self.db.acquire().await?;
        let mut db = begin_projection(&mut connection, Plans::PerExecution).await?;
        let new = apply_steps(&mut db, self.steps(txs)).await?;
        move_cursor(&mut db, &self.program_id, signature, slot).await?;
        db.commit().await?;
        Ok(new)
    }

    /// Applies `txs` (in chain order) without moving the cursor, on a connection of the caller's
    /// own (`group_commit::own_connection`, opened on first use and kept): how a small group is
    /// applied — the service's transactions of one moment applied ahead (`Ahead`'s turn), or
    /// what landed since a follow loop's last pass. One generic plan per statement serves such
    /// groups; a run of trades alone is one statement, which takes the projection lock itself.
    /// Returns how many events were new. Their events are recorded, so applying them again (by
    /// another indexer, or after a crash from a cursor written before them) is a no-op.
    pub async fn apply_on_own(&self, own: &mut Option<PgConnection>, txs: &[ConfirmedTransaction]) -> Result<usize, sqlx::Error> {
        group_commit::on_own_connection(own, &self.db, async |connection| self.apply_without_cursor(connection, txs).await).await
    }

    /// Moves the cursor to `signature` (at `slot`), a transaction whose events are recorded
    /// (applied ahead): no projection, so no projection lock. Never moves it back.
    pub async fn move_cursor(&self, signature: &str, slot: u64) -> Result<(), sqlx::Error> {
        move_cursor(&mut *self.db.acquire().await?, &self.program_id, signature, slot).await
    }

    /// Marks `signature` as being sent by this process, to be applied ahead by it, until the
    /// guard is dropped (see `Sending`). Take it before sending: the indexer may see the
    /// transaction as soon as it is confirmed.
    pub fn sending(&self, signature: &str) -> Sending {
        self.ahead.sending.lock().expect("the sending set is never poisoned").insert(signature.to_owned());
        Sending { ahead: self.ahead.clone(), signature: signature.to_owned() }
    }

    /// Whether this process is sending `signature` and has not applied it ahead yet.
    pub fn is_sending(&self, signature: &str) -> bool {
        self.ahead.sending.lock().expect("the sending set is never poisoned").contains(signature)
    }

    /// Changes whenever a transaction stops being sent (`Sending` dropped).
    pub fn subscribe_sent(&self) -> watch::Receiver<u64> {
        self.ahead.sent.subscribe()
    }

    /// Whether this projector (or a clone) applied the transaction `signature` ahead and
    /// committed it (see `Applied`); forgotten once asked about. The indexer passes such a
    /// transaction without reading it back.
    pub fn take_applied(&self, signature: &str) -> bool {
        let mut applied = self.ahead.applied.lock().expect("the applied set is never poisoned");
        // Its place in `order` goes when it is the oldest.
        applied.signatures.remove(signature)
    }

    fn remember_applied<'a>(&self, txs: impl IntoIterator<Item = &'a ConfirmedTransaction>) {
        let mut applied = self.ahead.applied.lock().expect("the applied set is never poisoned");
        for tx in txs {
            applied.remember(&tx.signature);
        }
    }

    /// Applies one confirmed transaction the service sent itself, at once, without moving the
    /// cursor (earlier transactions may not be indexed yet). When the indexer reaches it, its
    /// events are already recorded: the indexer of this projector passes it unread, any other
    /// finds them recorded (a no-op).
    ///
    /// Transactions applied ahead at the same time are applied together (`Ahead`), in chain
    /// order, each caller answered once the commit holding its transaction is done. The group
    /// is applied in a task of its own, so a caller that goes away mid-way (a request past its
    /// deadline) does not abandon the others' transactions.
    pub async fn apply_ahead(&self, tx: &ConfirmedTransaction) -> Result<(), sqlx::Error> {
        if self.ahead.applied.lock().expect("the applied set is never poisoned").signatures.contains(&tx.signature) {
            // Applied in the embedded chain's ledger write (`in_ledger`), committed
            // before its sender was answered.
            return Ok(());
        }
        let (done, applied) = oneshot::channel();
        self.ahead.waiting.push((tx.clone(), done));
        let projector = self.clone();
        tokio::spawn(async move { projector.apply_waiting().await });
        match applied.await {
            Ok(result) => result,
            // The applying task panicked: apply it here (a no-op if it was).
            Err(_) => self.apply_without_cursor(&mut *self.db.acquire().await?, std::slice::from_ref(tx)).await.map(drop),
        }
    }

    /// The part of the embedded chain's ledger write that applies `txs` — transactions this
    /// process is sending (`sending`), landed together — in the statement that writes their
    /// ledger rows: one statement, one round trip and one commit for both, and no turn of the
    /// projection's own for them. Their rows are added to `arguments`, after the ledger's. Only
    /// a group of trades (`TradeRun`, the common one), and only if the projection lock is free
    /// at once (a catch-up batch may hold it, and the ledger must not wait on it): `applied`
    /// says whether it was. `None` for any other group, and nothing added: their senders apply
    /// them ahead as usual, as they do after a ledger write that did not apply them. Once that
    /// statement has committed having applied them, `applied_in_ledger`.
    pub fn in_ledger(&self, txs: &[&ConfirmedTransaction], arguments: &mut PgArguments) -> Result<Option<StatementPart>, BoxDynError> {
        match <[Step<'_>; 1]>::try_from(self.steps(txs.iter().copied())) {
            Ok([Step::Trades(run)]) => Ok(Some(run.into_part(arguments)?)),
            _ => Ok(None),
        }
    }

    /// `txs`, applied in the ledger write (`in_ledger`), are committed: their senders' `apply_ahead` has
    /// nothing to do, and the indexer passes them (`take_applied`).
    pub fn applied_in_ledger(&self, txs: &[&ConfirmedTransaction]) {
        self.remember_applied(txs.iter().copied());
    }

    /// Applies every transaction waiting, a group at a time (nothing if another task has the
    /// turn: see `GroupQueue::turn_after_woken`).
    async fn apply_waiting(&self) {
        let mut turn = self.ahead.waiting.turn_after_woken().await;
        while let Some((connection, group)) = turn.next_group() {
            self.apply_group(connection, group).await;
        }
    }

    /// Applies a group in chain order and answers its callers. If the group fails, each is
    /// applied on its own, so one transaction's failure is its caller's alone.
    async fn apply_group(&self, turn: &mut Option<PgConnection>, mut group: Vec<Waiting>) {
        group.sort_by_key(|(tx, _)| (tx.slot, tx.transaction_index));
        let (txs, callers): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        match self.apply_on_own(turn, &txs).await {
            Ok(_) => {
                self.remember_applied(&txs);
                for caller in callers {
                    let _ = caller.send(Ok(()));
                }
            }
            Err(e) if txs.len() == 1 => {
                let _ = callers.into_iter().next().map(|caller| caller.send(Err(e)));
            }
            Err(_) => {
                for (tx, caller) in txs.iter().zip(callers) {
                    let applied = self.apply_on_own(turn, std::slice::from_ref(tx)).await.map(drop);
                    if applied.is_ok() {
                        self.remember_applied(std::slice::from_ref(tx));
                    }
                    let _ = caller.send(applied);
                }
            }
        }
    }

    /// Applies `txs` (in chain order) in one database transaction, without moving the cursor.
    /// Returns how many events were new.
    async fn apply_without_cursor(&self, connection: &mut PgConnection, txs: &[ConfirmedTransaction]) -> Result<usize, sqlx::Error> {
        let mut steps = self.steps(txs);
        match &mut steps[..] {
            [] => Ok(0),
            // The common group, trades only: their statement is a transaction of its own (it
            // takes the projection lock itself), which spares the `BEGIN` and `COMMIT` round
            // trips of the turn every group waits on.
            [Step::Trades(run)] => run.flush(connection).await,
            _ => {
                // Generic plans, as on the turn's connection (the one of a panicked turn's
                // caller comes from the pool); catching up (`apply_batch`) keeps plans made
                // for its batch's size.
                let mut db = begin_projection(connection, Plans::Generic).await?;
                let new = apply_steps(&mut db, steps).await?;
                db.commit().await?;
                Ok(new)
            }
        }
    }

    /// The events of `txs` as the statements that record and project them, in order: runs of
    /// consecutive trades (`trades`), of finalizations (`finalizations`) and of payouts and closes
    /// (`payouts`) a run at a time, every other event on its own between them.
    fn steps<'a>(&'a self, txs: impl IntoIterator<Item = &'a ConfirmedTransaction>) -> Vec<Step<'a>> {
        let mut steps = Vec::new();
        // At most one run is open: a change of kind ends it.
        let mut open: Option<Step<'a>> = None;
        for tx in txs.into_iter().filter(|tx| tx.err.is_none()) {
            for events::Located { ix_index, event_index, event, data } in events::located(tx, &self.program_id) {
                let at = At { signature: &tx.signature, ix_index, slot: tx.slot as i64, tx_index: tx.transaction_index.unwrap_or(0) as i32 };
                match (&event, &mut open) {
                    (ProgramEvent::TradeExecuted(e), Some(Step::Trades(run))) if !run.is_full() => run.push(e, &at, event_index, data),
                    (ProgramEvent::PositionSettled(e), Some(Step::Payouts(run))) => run.push(e, &at, event_index, data),
                    (ProgramEvent::TradeExecuted(e), _) => {
                        let mut run = TradeRun::default();
                        run.push(e, &at, event_index, data);
                        steps.extend(open.replace(Step::Trades(run)));
                    }
                    (ProgramEvent::PositionSettled(e), _) => {
                        let mut run = PayoutRun::default();
                        run.push(e, &at, event_index, data);
                        steps.extend(open.replace(Step::Payouts(run)));
                    }
                    (ProgramEvent::MarketFinalized(e), Some(Step::Finalizations(run))) => run.push(e, &at, event_index, data),
                    (ProgramEvent::MarketFinalized(e), _) => {
                        let mut run = FinalizationRun::default();
                        run.push(e, &at, event_index, data);
                        steps.extend(open.replace(Step::Finalizations(run)));
                    }
                    (ProgramEvent::MarketClosed(e), Some(Step::Payouts(run))) => run.push_close(e, &at, event_index, data),
                    (ProgramEvent::MarketClosed(e), _) => {
                        let mut run = PayoutRun::default();
                        run.push_close(e, &at, event_index, data);
                        steps.extend(open.replace(Step::Payouts(run)));
                    }
                    _ => {
                        steps.extend(open.take());
                        steps.push(Step::One { event, at, event_index, data });
                    }
                }
            }
        }
        steps.extend(open);
        steps
    }
}

/// One statement's worth of a group's events (`Projector::steps`).
#[allow(clippy::large_enum_variant, reason = "a group makes a few steps, each used once: boxing would only add allocations")]
enum Step<'a> {
    Trades(TradeRun),
    Payouts(PayoutRun),
    Finalizations(FinalizationRun),
    One { event: ProgramEvent, at: At<'a>, event_index: i32, data: &'a [u8] },
}

/// Records and projects `steps` in order. Returns how many events were new.
async fn apply_steps(db: &mut PgConnection, steps: Vec<Step<'_>>) -> Result<usize, sqlx::Error> {
    let mut new = 0;
    for step in steps {
        new += match step {
            Step::Trades(mut run) => run.flush(&mut *db).await?,
            Step::Payouts(mut run) => run.flush(&mut *db).await?,
            Step::Finalizations(mut run) => run.flush(&mut *db).await?,
            Step::One { event, at, event_index, data } => record_one(&mut *db, &event, &at, event_index, data).await?,
        };
    }
    Ok(new)
}

/// Records an event of a kind that is not run (rare: creations, deposits,
/// withdrawals) and projects it if it is new. Returns 1 if it was.
async fn record_one(db: &mut PgConnection, event: &ProgramEvent, at: &At<'_>, event_index: i32, data: &[u8]) -> Result<usize, sqlx::Error> {
    let recorded = sqlx::query(
        "INSERT INTO chain_events (signature, ix_index, event_index, slot, kind, data) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT DO NOTHING",
    )
    .bind(at.signature)
    .bind(at.ix_index)
    .bind(event_index)
    .bind(at.slot)
    .bind(event.kind())
    .bind(data)
    .execute(&mut *db)
    .await?
    .rows_affected();
    if recorded == 1 {
        project(db, event, at).await?;
    }
    Ok(recorded as usize)
}

/// Every projecting transaction takes this lock first (released at commit). Projections touch
/// the same market, position, balance and statistics rows in whatever order their events come:
/// run side by side (the indexer's batch and a request's own trade) they deadlocked under load.
/// One at a time they cannot, and each is short.
pub const PROJECTION_LOCK: i64 = 0x7072_6f6a_6563_7421; // "project!"

/// How a round ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finalized {
    /// Resolved: YES iff the rate (1e-12) was positive.
    Settled {
        yes: bool,
        actual_rate: i64,
    },
    Voided,
}

/// A round's end, as `finalize_markets` writes it.
#[derive(Clone, Copy, Debug)]
pub struct RoundEnd<'a> {
    pub market_id: Uuid,
    pub outcome: Finalized,
    pub at: DateTime<Utc>,
    /// The finalizing transaction; `None` for a round settled off chain.
    pub signature: Option<&'a str>,
}

/// `finalize_markets` for one round. Whether it finalized the round (`false`: already final).
pub async fn finalize_market(db: &mut PgConnection, round: RoundEnd<'_>) -> Result<bool, sqlx::Error> {
    Ok(!finalize_markets(db, &[round]).await?.is_empty())
}

/// The one writer of a round's final state in Postgres: the market's status, outcome and rate,
/// and (for a settled round) its series' statistics, in the caller's transaction. The chain
/// projection calls it for a run of `MarketFinalized` events; a round that never reached the
/// chain is settled through it too. Every wallet still holding a position gets a
/// `market_settled` notification in the outbox, in the same transaction. A round already final
/// is left as it is. Each market at most once a call; series statistics take the rounds in the
/// order given. Returns the rounds it finalized.
pub async fn finalize_markets(db: &mut PgConnection, rounds: &[RoundEnd<'_>]) -> Result<Vec<Uuid>, sqlx::Error> {
    if rounds.is_empty() {
        return Ok(Vec::new());
    }
    let mut status = Vec::with_capacity(rounds.len());
    let mut outcome = Vec::with_capacity(rounds.len());
    let mut rate = Vec::with_capacity(rounds.len());
    for round in rounds {
        let (s, o, r) = match round.outcome {
            Finalized::Voided => ("voided", None, None),
            Finalized::Settled { yes, actual_rate } => ("settled", Some(if yes { "yes" } else { "no" }), Some(actual_rate)),
        };
        status.push(s);
        outcome.push(o);
        rate.push(r);
    }
    let finalized: Vec<FinalizedRound> = sqlx::query_as(FINALIZE_MARKETS)
        .bind(rounds.iter().map(|f| f.market_id).collect::<Vec<_>>())
        .bind(status)
        .bind(outcome)
        .bind(rate)
        .bind(rounds.iter().map(|f| f.at).collect::<Vec<_>>())
        .bind(rounds.iter().map(|f| f.signature).collect::<Vec<_>>())
        .fetch_all(&mut *db)
        .await?;
    let settled: Vec<stats::SettledRound> = finalized
        .iter()
        .filter_map(|r| {
            Some(stats::SettledRound { series_id: r.series_id, yes: r.outcome.as_deref()? == "yes", volume: r.total_volume, rate: r.rate?, at: r.at })
        })
        .collect();
    stats::record_outcomes(db, &settled).await?;
    Ok(finalized.into_iter().map(|r| r.id).collect())
}

/// A round `FINALIZE_MARKETS` finalized (outcome and rate absent for a void).
#[derive(sqlx::FromRow)]
struct FinalizedRound {
    id: Uuid,
    series_id: Uuid,
    total_volume: i64,
    outcome: Option<String>,
    rate: Option<i64>,
    at: DateTime<Utc>,
}

/// The rounds' final state and their holders' notices; the rounds it finalized, in input order.
const FINALIZE_MARKETS: &str = "
WITH input AS (
    SELECT * FROM unnest($1::UUID[], $2::TEXT[], $3::TEXT[], $4::BIGINT[], $5::TIMESTAMPTZ[], $6::TEXT[])
        WITH ORDINALITY AS t(id, status, outcome, rate, at, signature, ord)
), final AS (
    UPDATE markets m SET status = i.status, outcome = i.outcome, actual_rate = i.rate, settled_at = i.at, finalize_signature = i.signature
    FROM input i
    WHERE m.id = i.id AND m.status NOT IN ('settled', 'voided')
    RETURNING m.id, m.series_id, m.total_volume, i.status, i.outcome, i.rate, i.at, i.ord
), notice AS (
    INSERT INTO outbox (kind, market_id, wallet, payload)
    SELECT 'market_settled', f.id, p.wallet, jsonb_build_object('status', f.status, 'outcome', f.outcome, 'actual_rate', f.rate)
    FROM final f JOIN positions p ON p.market_id = f.id
    ORDER BY f.ord
    ON CONFLICT DO NOTHING
)
SELECT id, series_id, total_volume, outcome, rate, at FROM final ORDER BY ord";

/// How a projection's statements are planned for the rest of its database transaction.
enum Plans {
    /// Postgres's default: custom plans for the parameters until a generic one does as well.
    PerExecution,
    /// One plan per connection for every execution (`plan_cache_mode = force_generic_plan`).
    Generic,
}

/// Begins a projection's database transaction holding the projection lock to its end, its
/// statements planned as `plans` says: all in the one round trip of `BEGIN` (a simple query may
/// hold several statements).
async fn begin_projection(db: &mut PgConnection, plans: Plans) -> Result<Transaction<'_, Postgres>, sqlx::Error> {
    let mode = match plans {
        Plans::PerExecution => "auto",
        Plans::Generic => "force_generic_plan",
    };
    db.begin_with(format!("BEGIN; SELECT pg_advisory_xact_lock({PROJECTION_LOCK}), set_config('plan_cache_mode', '{mode}', true)")).await
}

async fn move_cursor(db: &mut PgConnection, program_id: &str, signature: &str, slot: u64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO chain_cursor (program, signature, slot) VALUES ($1, $2, $3)
         ON CONFLICT (program) DO UPDATE SET signature = EXCLUDED.signature, slot = EXCLUDED.slot, updated_at = now()
         WHERE chain_cursor.slot <= EXCLUDED.slot",
    )
    .bind(program_id)
    .bind(signature)
    .bind(slot as i64)
    .execute(db)
    .await?;
    Ok(())
}

async fn set_balance(db: &mut PgConnection, wallet: &Pubkey, balance: u64, at: &At<'_>, ts: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO vault_balances (wallet, balance, slot, tx_index, updated_at) VALUES ($1, $2, $3, $5, $4)
         ON CONFLICT (wallet) DO UPDATE SET balance = EXCLUDED.balance, slot = EXCLUDED.slot, tx_index = EXCLUDED.tx_index,
             updated_at = EXCLUDED.updated_at
         WHERE (vault_balances.slot, vault_balances.tx_index) <= (EXCLUDED.slot, EXCLUDED.tx_index)",
    )
    .bind(wallet.to_string())
    .bind(balance as i64)
    .bind(at.slot)
    .bind(time(ts))
    .bind(at.tx_index)
    .execute(db)
    .await?;
    Ok(())
}

async fn project(db: &mut PgConnection, event: &ProgramEvent, at: &At<'_>) -> Result<(), sqlx::Error> {
    match event {
        ProgramEvent::UserCreated(e) => {
            // The wallet's deposit address, for the webhook and the reconciliation.
            sqlx::query("INSERT INTO deposit_addresses (address, wallet) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                .bind(funding_market::client::deposit_pda(&e.wallet).to_string())
                .bind(e.wallet.to_string())
                .execute(&mut *db)
                .await?;
            set_balance(db, &e.wallet, 0, at, e.ts).await?
        }
        ProgramEvent::DepositSwept(e) => {
            sqlx::query("INSERT INTO deposits (signature, ix_index, wallet, amount, at, slot) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING")
                .bind(at.signature)
                .bind(at.ix_index)
                .bind(e.wallet.to_string())
                .bind(e.amount as i64)
                .bind(time(e.ts))
                .bind(at.slot)
                .execute(&mut *db)
                .await?;
            set_balance(db, &e.wallet, e.vault_balance, at, e.ts).await?;
            deposits::match_sweeps(db, &e.wallet.to_string()).await?;
        }
        ProgramEvent::MarketCreated(e) => {
            let updated = sqlx::query(
                // A trade projected ahead of the creation (a service-sent trade) already moved q.
                "UPDATE markets SET onchain_address = $2, liquidity_b = $3,
                     q_yes = CASE WHEN trade_count = 0 THEN $4 ELSE q_yes END,
                     q_no = CASE WHEN trade_count = 0 THEN $5 ELSE q_no END,
                     yes_price_ppm = CASE WHEN trade_count = 0 THEN $6 ELSE yes_price_ppm END
                 WHERE id = $1",
            )
            .bind(Uuid::from_bytes(e.market_id))
            .bind(e.market.to_string())
            .bind(e.b as i64)
            .bind(e.q_yes as i64)
            .bind(e.q_no as i64)
            .bind(e.yes_price as i32)
            .execute(db)
            .await?;
            if updated.rows_affected() == 0 {
                tracing::warn!(market = %Uuid::from_bytes(e.market_id), "on-chain market unknown to the service; event kept");
            }
        }
        // Recorded and projected a run at a time (`trades`).
        ProgramEvent::TradeExecuted(_) => {}
        // Recorded and projected a run at a time (`finalizations`).
        ProgramEvent::MarketFinalized(_) => {}
        // Recorded and projected a run at a time (`payouts`).
        ProgramEvent::PositionSettled(_) => {}
        ProgramEvent::Withdrawn(e) => {
            sqlx::query(
                "INSERT INTO chain_withdrawals (signature, ix_index, wallet, destination, amount, at) VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT DO NOTHING",
            )
            .bind(at.signature)
            .bind(at.ix_index)
            .bind(e.wallet.to_string())
            .bind(e.destination.to_string())
            .bind(e.amount as i64)
            .bind(time(e.ts))
            .execute(&mut *db)
            .await?;
            set_balance(db, &e.wallet, e.vault_balance, at, e.ts).await?;
        }
        // Recorded and projected with the payouts' runs (`payouts`).
        ProgramEvent::MarketClosed(_) => {}
    }
    Ok(())
}
