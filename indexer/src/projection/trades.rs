//! Trades, nearly all of the events, recorded and projected a run at a time: every consecutive
//! trade event of a batch goes to Postgres as one statement (`unnest` of column arrays into
//! data-modifying CTEs, each reading the tables as they were before the statement), which
//! takes the projection lock first, so that it can be a transaction on its own — or part of
//! the embedded chain's ledger statement (`TradeRun::into_part`). The other events of the batch
//! are applied between runs, so the order across kinds is the ledger's. The statement writes
//! the projected rows only: the stream events and trader totals they make are the tables'
//! triggers' (migrations/schema.sql), and their market references are checked by foreign keys,
//! whichever statement or transaction the run is applied in.
//!
//! Inside a run, the rules below give the same tables as applying its trades one by one in
//! delivery order (the projection's test compares the two on shuffled, repeated deliveries):
//! - an event is new only if `chain_events` did not hold it; only new trades of known markets
//!   are projected (a trade of an unknown market is kept as an event and logged);
//! - the market takes the run's trade with its highest trade count, if higher than its own;
//! - a position takes the shares of the highest trade count of its (market, wallet), if higher
//!   than its own; its cost basis per side (buys' cost and fees less sells' proceeds net of
//!   fees) adds every new trade, whatever its order;
//! - a second's price point takes the last trade, in delivery order, that was its market's latest
//!   when it came (its count not below the market's or any earlier trade of the run); where no
//!   trade of that second was, the first one fills the point only if the second had none;
//! - a vault balance takes the latest trade by (slot, position in the block), ties to the one
//!   delivered later, if not before the balance stored;
//! - day statistics add up per (wallet, day).

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;
use sqlx::{Arguments, PgConnection};
use uuid::Uuid;

use super::{At, PROJECTION_LOCK, RecordedEvents, StatementPart, side, time};
use crate::events;
use chain_client::address_text;
use funding_market::events::TradeExecuted;

/// The run's trades as columns, ready to bind as arrays.
#[derive(Default)]
pub(super) struct TradeRun {
    events: RecordedEvents,
    market: Vec<String>,
    trade_id: Vec<Uuid>,
    wallet: Vec<String>,
    side: Vec<&'static str>,
    is_buy: Vec<bool>,
    shares: Vec<i64>,
    amount: Vec<i64>,
    fee: Vec<i64>,
    yes_price_ppm: Vec<i32>,
    at: Vec<DateTime<Utc>>,
    q_yes: Vec<i64>,
    q_no: Vec<i64>,
    volume: Vec<i64>,
    trade_count: Vec<i64>,
    position_yes: Vec<i64>,
    position_no: Vec<i64>,
    balance: Vec<i64>,
}

impl TradeRun {
    /// The most trades one statement records. Its stream row holds two updates a trade (its
    /// market's and its trader's), and a row published again after a crash must fit in what the
    /// WebSocket replicas remember to drop (40,000 updates, `api::http::routes::ws::hub`); a
    /// longer run is applied as several statements, which give the same tables.
    const MOST: usize = 10_000;

    /// Whether the run holds `MOST` trades: the next one starts another.
    pub(super) fn is_full(&self) -> bool {
        self.events.len() >= Self::MOST
    }

    pub(super) fn push(&mut self, e: &TradeExecuted, at: &At<'_>, event_index: i32, data: &[u8]) {
        if !self.events.push(at, event_index, data) {
            return;
        }
        self.market.push(address_text::of(&e.market));
        self.trade_id.push(events::trade_id(at.signature, at.ix_index, event_index));
        self.wallet.push(address_text::of(&e.wallet));
        self.side.push(side(e.side));
        self.is_buy.push(e.is_buy);
        self.shares.push(e.shares as i64);
        self.amount.push(e.amount as i64);
        self.fee.push(e.fee as i64);
        self.yes_price_ppm.push(e.yes_price as i32);
        self.at.push(time(e.ts));
        self.q_yes.push(e.q_yes as i64);
        self.q_no.push(e.q_no as i64);
        self.volume.push(e.volume as i64);
        self.trade_count.push(e.trade_count as i64);
        self.position_yes.push(e.position_yes as i64);
        self.position_no.push(e.position_no as i64);
        self.balance.push(e.user_vault_balance as i64);
    }

    /// Records and projects the run, leaving it empty. Returns how many trades were new.
    pub(super) async fn flush(&mut self, db: &mut PgConnection) -> Result<usize, sqlx::Error> {
        if self.events.is_empty() {
            return Ok(0);
        }
        let run = std::mem::take(self);
        let mut arguments = PgArguments::default();
        run.add_arguments(&mut arguments, LockTaking::Waiting).map_err(sqlx::Error::Encode)?;
        let (recorded, known): (i64, i64) = sqlx::query_as_with(&OWN_STATEMENT, arguments).fetch_one(db).await?;
        if recorded > known {
            tracing::warn!(trades = recorded - known, "trades in markets unknown to the service; events kept");
        }
        Ok(recorded as usize)
    }

    /// The run as a part of another statement, which commits it with its own rows (the
    /// embedded chain's ledger write, `Projector::in_ledger`): its common table expressions,
    /// their parameters numbered after those already in `arguments` (its own added there), and a
    /// boolean expression over them, whether it was applied. The projection lock is only tried,
    /// so that a catch-up batch holding it never holds up that statement: not held, the part
    /// writes nothing and says so.
    pub(super) fn into_part(self, arguments: &mut PgArguments) -> Result<StatementPart, BoxDynError> {
        let first = arguments.len();
        self.add_arguments(arguments, LockTaking::IfFree)?;
        Ok(StatementPart { ctes: ctes(first), applied: APPLIED.to_string() })
    }

    /// The run's columns as the statement's parameters, in the order `CTES` numbers them.
    fn add_arguments(&self, arguments: &mut PgArguments, lock: LockTaking) -> Result<(), BoxDynError> {
        self.events.add_to(arguments)?;
        arguments.add(&self.market)?;
        arguments.add(&self.trade_id)?;
        arguments.add(&self.wallet)?;
        arguments.add(&self.side)?;
        arguments.add(&self.is_buy)?;
        arguments.add(&self.shares)?;
        arguments.add(&self.amount)?;
        arguments.add(&self.fee)?;
        arguments.add(&self.yes_price_ppm)?;
        arguments.add(&self.at)?;
        arguments.add(&self.q_yes)?;
        arguments.add(&self.q_no)?;
        arguments.add(&self.volume)?;
        arguments.add(&self.trade_count)?;
        arguments.add(&self.position_yes)?;
        arguments.add(&self.position_no)?;
        arguments.add(&self.balance)?;
        arguments.add(PROJECTION_LOCK)?;
        arguments.add(matches!(lock, LockTaking::IfFree))
    }
}

/// How the run's statement takes the projection lock.
enum LockTaking {
    /// Waits for it: the statement is a transaction of its own (a group applied ahead,
    /// autocommit), or one statement of the caller's transaction (catching up).
    Waiting,
    /// Only if it is free at once: the run is part of the embedded chain's ledger write, which
    /// must not wait on a catch-up batch.
    IfFree,
}

/// `CTES` with every parameter number raised by `first` (the parameters before the run's own
/// in the statement it is part of).
fn ctes(first: usize) -> String {
    let mut renumbered = String::with_capacity(CTES.len() + 64);
    let mut rest = CTES;
    while let Some(at) = rest.find('$') {
        renumbered.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let number: usize = rest[..digits].parse().expect("every $ in the statement numbers a parameter");
        renumbered.push_str(&(number + first).to_string());
        rest = &rest[digits..];
    }
    renumbered.push_str(rest);
    renumbered
}

/// The run as a statement of its own: it answers the trades newly recorded, and those of them in
/// known markets (projected).
static OWN_STATEMENT: LazyLock<String> = LazyLock::new(|| format!("WITH {CTES} SELECT (SELECT count(*) FROM ev), (SELECT count(*) FROM new)"));

/// Whether the run was applied, as part of another statement: the projection lock was held.
const APPLIED: &str = "(SELECT held FROM locked)";

/// The run's common table expressions: `$1`..`$23` its columns (`add_arguments`), `$24` the
/// projection lock's key, `$25` whether the lock is only tried.
const CTES: &str = "
locked AS (
    -- The projection lock, held to the end of the transaction (taken again in one that holds
    -- it): a group applied ahead runs this statement as a transaction of its own. Every row
    -- below comes through `input`, which yields none before the lock is held.
    -- With `$25` the lock is only tried (`LockTaking::IfFree`): not held, the statement does
    -- nothing and says so.
    SELECT CASE WHEN $25 THEN pg_try_advisory_xact_lock($24)
                ELSE (SELECT true FROM (SELECT pg_advisory_xact_lock($24)) l) END AS held
), input AS (
    -- A trader's day is the UTC date of the event.
    SELECT t.*, (t.at AT TIME ZONE 'UTC')::DATE AS day
    FROM locked, unnest($1::TEXT[], $2::INT[], $3::INT[], $4::BIGINT[], $5::INT[], $6::BYTEA[], $7::TEXT[], $8::UUID[],
                         $9::TEXT[], $10::TEXT[], $11::BOOL[], $12::BIGINT[], $13::BIGINT[], $14::BIGINT[], $15::INT[],
                         $16::TIMESTAMPTZ[], $17::BIGINT[], $18::BIGINT[], $19::BIGINT[], $20::BIGINT[],
                         $21::BIGINT[], $22::BIGINT[], $23::BIGINT[])
        WITH ORDINALITY AS t(signature, ix_index, event_index, slot, tx_index, data, market, trade_id, wallet, side, is_buy,
                             shares, amount, fee, yes_price_ppm, at, q_yes, q_no, volume, trade_count, position_yes,
                             position_no, balance, ord)
    WHERE locked.held
), ev AS (
    INSERT INTO chain_events (signature, ix_index, event_index, slot, kind, data)
    SELECT signature, ix_index, event_index, slot, 'TradeExecuted', data FROM input ORDER BY ord
    ON CONFLICT DO NOTHING
    RETURNING signature, ix_index, event_index
), new AS (
    -- The newly recorded trades of known markets, with their market's count before the run:
    -- the columns the projection reads, not the event bytes (every sort below copies its rows).
    SELECT i.ord, i.signature, i.slot, i.tx_index, i.trade_id, i.wallet, i.side, i.is_buy, i.shares, i.amount, i.fee,
           i.yes_price_ppm, i.at, i.day, i.q_yes, i.q_no, i.volume, i.trade_count, i.position_yes, i.position_no, i.balance,
           m.id AS market_id, m.trade_count AS market_trade_count
    FROM input i JOIN ev USING (signature, ix_index, event_index) JOIN markets m ON m.onchain_address = i.market
), market_update AS (
    UPDATE markets m SET q_yes = l.q_yes, q_no = l.q_no, yes_price_ppm = l.yes_price_ppm, total_volume = l.volume,
        trade_count = l.trade_count::INT
    FROM (SELECT DISTINCT ON (market_id) market_id, q_yes, q_no, yes_price_ppm, volume, trade_count FROM new
          ORDER BY market_id, trade_count DESC, ord) l
    WHERE m.id = l.market_id AND m.trade_count < l.trade_count
), trade AS (
    INSERT INTO trades (id, market_id, user_id, wallet, signature, side, is_buy, shares, amount, fee, yes_price_ppm, created_at, slot)
    SELECT n.trade_id, n.market_id, u.id, n.wallet, n.signature, n.side, n.is_buy, n.shares, n.amount, n.fee, n.yes_price_ppm,
           n.at, n.slot
    FROM new n LEFT JOIN users u ON u.wallet_address = n.wallet ORDER BY n.ord
), latest_position AS (
    -- One pass (a window, then the latest row of each position): joining a per-position
    -- aggregate back instead made the planner, which expects a handful of unnested rows, rescan
    -- it once per position.
    SELECT DISTINCT ON (market_id, wallet) market_id, wallet, position_yes, position_no, trade_count, at,
           COALESCE(sum(flow) FILTER (WHERE side = 'yes') OVER position, 0)::BIGINT AS yes_flow,
           COALESCE(sum(flow) FILTER (WHERE side = 'no') OVER position, 0)::BIGINT AS no_flow
    FROM (SELECT market_id, wallet, position_yes, position_no, trade_count, at, side, ord,
                 CASE WHEN is_buy THEN amount + fee ELSE -(amount - fee) END AS flow FROM new) n
    WINDOW position AS (PARTITION BY market_id, wallet)
    ORDER BY market_id, wallet, trade_count DESC, ord
), position AS (
    INSERT INTO positions (market_id, wallet, yes_shares, no_shares, last_trade_count, updated_at, yes_basis, no_basis)
    SELECT market_id, wallet, position_yes, position_no, trade_count, at, yes_flow, no_flow FROM latest_position
    ON CONFLICT (market_id, wallet) DO UPDATE SET
        yes_shares = CASE WHEN positions.last_trade_count < EXCLUDED.last_trade_count THEN EXCLUDED.yes_shares ELSE positions.yes_shares END,
        no_shares = CASE WHEN positions.last_trade_count < EXCLUDED.last_trade_count THEN EXCLUDED.no_shares ELSE positions.no_shares END,
        updated_at = CASE WHEN positions.last_trade_count < EXCLUDED.last_trade_count THEN EXCLUDED.updated_at ELSE positions.updated_at END,
        last_trade_count = GREATEST(positions.last_trade_count, EXCLUDED.last_trade_count),
        yes_basis = positions.yes_basis + EXCLUDED.yes_basis,
        no_basis = positions.no_basis + EXCLUDED.no_basis
), priced AS (
    SELECT market_id, at, yes_price_ppm, ord,
           trade_count >= GREATEST(market_trade_count, COALESCE(max(trade_count) OVER (
               PARTITION BY market_id ORDER BY ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)) AS latest
    FROM new
), point AS (
    SELECT DISTINCT ON (market_id, at) * FROM priced
    ORDER BY market_id, at, latest DESC, CASE WHEN latest THEN -ord ELSE ord END
), latest_price AS (
    INSERT INTO market_prices (market_id, at, yes_price_ppm) SELECT market_id, at, yes_price_ppm FROM point WHERE latest
    ON CONFLICT (market_id, at) DO UPDATE SET yes_price_ppm = EXCLUDED.yes_price_ppm
), stale_price AS (
    INSERT INTO market_prices (market_id, at, yes_price_ppm) SELECT market_id, at, yes_price_ppm FROM point WHERE NOT latest
    ON CONFLICT DO NOTHING
), balance AS (
    INSERT INTO vault_balances (wallet, balance, slot, tx_index, updated_at)
    SELECT DISTINCT ON (wallet) wallet, balance, slot, tx_index, at FROM new ORDER BY wallet, slot DESC, tx_index DESC, ord DESC
    ON CONFLICT (wallet) DO UPDATE SET balance = EXCLUDED.balance, slot = EXCLUDED.slot, tx_index = EXCLUDED.tx_index,
        updated_at = EXCLUDED.updated_at
    WHERE (vault_balances.slot, vault_balances.tx_index) <= (EXCLUDED.slot, EXCLUDED.tx_index)
), stats AS (
    INSERT INTO trader_stats (wallet, day, volume, trades)
    SELECT wallet, day, sum(amount)::BIGINT, count(*) FROM new GROUP BY wallet, day
    ON CONFLICT (wallet, day) DO UPDATE SET volume = trader_stats.volume + EXCLUDED.volume, trades = trader_stats.trades + EXCLUDED.trades
)";
