//! `localnet`: the local validator the service embeds — the embedded chain, an in-process SVM (an Agave bank, see `bank`, with the real SPL Token
//! program) running the program — its SBF binary, or natively (`ProgramCode`) — for local runs
//! and tests without a validator (docs/local-chain.md).
//!
//! It behaves like a cluster behind the RPC chain, so callers cannot tell them apart:
//! - sending runs a preflight simulation first, like `sendTransaction`: a transaction that would
//!   fail is refused (RPC error -32002 with the transaction error) and never lands; signatures
//!   are verified, stale blockhashes and duplicates refused;
//! - a landed transaction is confirmed only once it is durable: its ledger row (what
//!   `getTransaction` returns, inner instructions included) and every account it touched are
//!   committed to Postgres in one database transaction. A restart rebuilds the bank from those
//!   accounts, so the chain resumes exactly at its last confirmed transaction. Applying and
//!   persisting run in a task of their own, so a caller that goes away (a request deadline, a
//!   disconnect) cannot leave the bank ahead of Postgres, and a failed write is retried (on a
//!   new connection if it broke) until it is durable, with `/health` reporting the chain down
//!   meanwhile;
//! - the clock follows wall time (plus an offset that tests move) and is set before each
//!   transaction; each landed transaction gets a slot of its own, above the last, across
//!   restarts too, so "later slot" always means "later transaction" (the projection's balance
//!   guard relies on it); every slot (`bank::SLOT`) the slot clock ends an empty one.
//!
//! Writes are serialised (one transaction at a time, as a leader orders them) and committed in
//! groups (whatever landed while the previous group was being written, one database commit);
//! reads are not serialised. A listing of what followed a recent transaction (the in-process
//! indexer's, after every confirmation) is answered from the newest rows kept in memory as they
//! are written (`recent`), without a query.
//! A new blockhash is registered every slot (`bank::SLOT`), so a signed transaction stays valid for about a
//! minute, as on mainnet.
//!
//! A node's two faces: its JSON-RPC (`json_rpc`; `EmbeddedChain::json_rpc` answers one request
//! or a batch, which the service serves at `POST /rpc`) and its PubSub WebSocket (`pubsub`, a
//! router the service serves on a listener of its own).
//!
//! Files: `bank` (the Agave bank and the program's code), `genesis` (keys, mint, config),
//! `landing` (running a transaction), `ledger` (the single writer to Postgres), `reads`
//! (accounts, blockhashes, transactions, listings), `node` and `json_rpc` (what only a node's
//! JSON-RPC asks), `pubsub` (subscriptions and their notifications), `recent` (the newest ledger
//! rows in memory), `hook` (the projection's seat in the ledger write).

mod balances;
mod bank;
mod genesis;
mod hook;
mod json_rpc;
mod landing;
mod ledger;
mod node;
pub mod pubsub;
mod reads;
mod recent;

pub use bank::{ProgramCode, validator_logs};
pub use genesis::{GenesisParams, Keys};
pub use hook::{LedgerHook, LedgerPart};
pub use json_rpc::{
    MAX_MULTIPLE_ACCOUNTS, MAX_PROGRAM_ACCOUNT_FILTERS, MAX_RESPONSE_BYTES, MAX_SIGNATURE_STATUSES, MAX_SIGNATURES_FOR_ADDRESS, PACKET_DATA_SIZE,
    RESPONSE_TOO_LARGE, encoded_account, feature_set_id,
};
pub use node::{LedgerEntry, passes as filter_passes};
pub use reads::SIGNATURES_FOR_ADDRESS;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Instant;

use anchor_lang::prelude::Pubkey;
use solana_account::{Account as SolanaAccount, AccountSharedData, ReadableAccount};
use solana_signer::Signer;
use sqlx::PgPool;
use tokio::sync::{Mutex, Semaphore, oneshot, watch};

use chain_client::{ChainError, ConfirmedTransaction, SignatureInfo};
use genesis::load_or_create_keys;
use group_commit::GroupQueue;
use landing::Landing;
use ledger::single_writer;

#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Chain(#[from] ChainError),
    #[error("stored embedded-chain state is corrupt: {0}")]
    Corrupt(String),
    #[error("another process runs the embedded chain of this database")]
    InUse,
}

/// The advisory lock (per database) held by the one process running a database's embedded
/// chain: two banks writing one ledger would diverge.
pub const SINGLE_WRITER_LOCK: i64 = 0x656d_6265_6464_6564; // "embedded"

/// At most this many transactions applied in the bank and not yet durable: past it, sends wait
/// (the bank must not run far ahead of a slow or failing Postgres).
const MAX_UNWRITTEN: usize = 256;

#[derive(Clone)]
pub struct EmbeddedChain(Arc<Inner>);

struct Inner {
    db: PgPool,
    runtime: bank::Runtime,
    /// Held while a transaction runs in the bank (and while the bank is rooted): one
    /// transaction at a time, in the order they land.
    turn: Mutex<()>,
    /// Transactions the bank has applied that are not durable yet, in the order they landed,
    /// each with the caller waiting for it; and the writer: the connection holding
    /// `SINGLE_WRITER_LOCK` for the chain's lifetime, the one the ledger is written on (never
    /// waiting for a pool connection).
    unwritten: GroupQueue<(Landing, oneshot::Sender<()>), sqlx::PgConnection>,
    /// Bounds `unwritten` while Postgres is slow or down: a send waits for a permit first.
    in_flight: Semaphore,
    keys: Keys,
    clock_offset: AtomicI64,
    /// The last slot: every landed transaction takes the slot above it, and so does every tick
    /// of the slot clock (an empty slot), so slots advance when nothing is sent and stay at
    /// least the block height. Written under the bank's turn; followers subscribe to it (slot
    /// notifications).
    last_slot: watch::Sender<u64>,
    /// The ledger sequence of the last confirmed transaction (wakes followers).
    confirmed: watch::Sender<i64>,
    /// Set while a landed transaction is being retried into Postgres (see `persist`).
    persist_failing: AtomicBool,
    /// The newest ledger rows, as written: listings that start among them (and the cursors
    /// they start from) read no Postgres.
    recent: std::sync::Mutex<recent::RecentLedger>,
    /// The projection of the process's own transactions, if one asked (`apply_in_ledger`): the
    /// ones it is sending are projected in the write of their ledger rows.
    hook: std::sync::OnceLock<Arc<dyn LedgerHook>>,
}

impl Inner {
    /// Ends the current slot empty (the caller holds the bank's turn).
    fn next_slot(&self) {
        self.last_slot.send_modify(|slot| *slot += 1);
    }

    /// The bank's turn (`turn`), waited for.
    async fn bank_turn(&self, held_for: &'static str) -> BankTurn<'_> {
        let turn = self.turn.lock().await;
        BankTurn { _turn: turn, held_for, began: Instant::now() }
    }
}

/// The bank's turn, held: for how long, and for what (a `transaction` landing, a `slot` ending),
/// is recorded when it is let go (`fm_chain_turn_seconds`). The turn is one at a time, so the
/// rate of that time's sum is the share of time the bank was busy.
struct BankTurn<'a> {
    _turn: tokio::sync::MutexGuard<'a, ()>,
    held_for: &'static str,
    began: Instant,
}

impl Drop for BankTurn<'_> {
    fn drop(&mut self) {
        metrics::histogram!("fm_chain_turn_seconds", "held_for" => self.held_for).record(self.began.elapsed().as_secs_f64());
    }
}

fn db_error(e: sqlx::Error) -> ChainError {
    ChainError::Transport(format!("embedded chain storage: {e}"))
}

fn parse_address(address: &str) -> Result<Pubkey, ChainError> {
    address.parse().map_err(|_| ChainError::invalid_params(format!("Invalid param: Invalid address {address:?}")))
}

/// Owners of accounts that belong to the runtime (sysvars, native programs), not to its state.
/// The deployed program's accounts (its ProgramData, owned by the upgradeable loader) are
/// deployed anew at every start, from the code the chain was opened with.
const RUNTIME_OWNERS: [Pubkey; 3] = [solana_sdk_ids::sysvar::ID, solana_sdk_ids::native_loader::ID, solana_sdk_ids::bpf_loader_upgradeable::ID];

/// Accounts that are part of the runtime, not of its state: never persisted.
fn is_runtime_account(account: &AccountSharedData) -> bool {
    account.executable() || RUNTIME_OWNERS.contains(account.owner())
}

impl EmbeddedChain {
    /// Opens the chain stored in `db` (migrated), creating it on first use: a test USDC mint, the
    /// program's config with `genesis`, a funded treasury and funded config roles.
    pub async fn open(db: PgPool, genesis: &GenesisParams) -> Result<EmbeddedChain, EmbeddedError> {
        let writer = single_writer(&db).await?;
        let stored: Vec<(String, i64, String, Vec<u8>, bool, i64)> =
            sqlx::query_as("SELECT address, lamports, owner, data, executable, rent_epoch FROM embedded_accounts").fetch_all(&db).await?;
        let mut accounts = Vec::with_capacity(stored.len());
        for (address, lamports, owner, data, executable, rent_epoch) in stored {
            let corrupt = || EmbeddedError::Corrupt(format!("account {address}"));
            let address: Pubkey = address.parse().map_err(|_| corrupt())?;
            let owner: Pubkey = owner.parse().map_err(|_| corrupt())?;
            let account = SolanaAccount { lamports: lamports as u64, data, owner, executable, rent_epoch: rent_epoch as u64 };
            accounts.push((address, AccountSharedData::from(account)));
        }
        let keys = load_or_create_keys(&db).await?;
        let runtime = bank::Runtime::new(accounts, &keys.authority.pubkey(), &genesis.program).await;
        let last_slot: Option<i64> = sqlx::query_scalar("SELECT max(slot) FROM embedded_ledger").fetch_one(&db).await?;
        let last_seq: Option<i64> = sqlx::query_scalar("SELECT max(seq) FROM embedded_ledger").fetch_one(&db).await?;
        let (confirmed, _) = watch::channel(last_seq.unwrap_or(0));
        let chain = EmbeddedChain(Arc::new(Inner {
            db,
            runtime,
            turn: Mutex::new(()),
            unwritten: GroupQueue::new("chain_ledger", writer),
            in_flight: Semaphore::new(MAX_UNWRITTEN),
            keys,
            clock_offset: AtomicI64::new(0),
            confirmed,
            last_slot: watch::channel(last_slot.unwrap_or(0) as u64).0,
            persist_failing: AtomicBool::new(false),
            recent: std::sync::Mutex::new(recent::RecentLedger::after(last_seq.unwrap_or(0))),
            hook: std::sync::OnceLock::new(),
        }));
        // The slot clock of a cluster, while the chain is alive: every slot the bank is rooted
        // and continued in the next, with a new blockhash.
        let alive = Arc::downgrade(&chain.0);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(bank::SLOT).await;
                let Some(inner) = alive.upgrade() else { break };
                let _turn = inner.bank_turn("slot").await;
                // The slot first: a reader between the two sees the slot at least the height.
                inner.next_slot();
                inner.runtime.advance();
            }
        });
        chain.ensure_genesis(genesis).await?;
        Ok(chain)
    }

    pub fn keys(&self) -> &Keys {
        &self.0.keys
    }

    /// From now on, the transactions `hook` wants (`LedgerHook::wants`) are applied by it in the
    /// statement that writes their ledger rows, when it can (`LedgerHook::part`): one statement,
    /// one commit and one turn for both writes a trade waits on. The first hook given is the
    /// one; later ones are ignored.
    pub fn apply_in_ledger(&self, hook: Arc<dyn LedgerHook>) {
        let _ = self.0.hook.set(hook);
    }

    pub fn mint(&self) -> Pubkey {
        self.0.keys.mint.pubkey()
    }

    /// Follows confirmations: the value is the ledger sequence of the last confirmed one.
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.0.confirmed.subscribe()
    }

    /// Roots the bank and continues in the next slot now, as the slot clock does every slot
    /// (tests: check that state and blockhashes carry over).
    pub async fn root_now(&self) {
        let _turn = self.0.bank_turn("slot").await;
        self.0.next_slot();
        self.0.runtime.advance();
    }

    /// Follows the slot: the value is the last slot (a transaction's, or an empty one's).
    pub fn subscribe_slots(&self) -> watch::Receiver<u64> {
        self.0.last_slot.subscribe()
    }

    /// Moves the chain's clock `seconds` away from wall time (tests: reach a market's close).
    pub fn set_clock_offset(&self, seconds: i64) {
        self.0.clock_offset.store(seconds, Ordering::Relaxed);
    }

    fn now(&self) -> i64 {
        chrono::Utc::now().timestamp() + self.0.clock_offset.load(Ordering::Relaxed)
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, recent::RecentLedger> {
        self.0.recent.lock().expect("the recent ledger is never poisoned")
    }
}

impl chain_client::ChainSource for EmbeddedChain {
    async fn signatures_after(&self, address: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, ChainError> {
        EmbeddedChain::signatures_after(self, address, cursor).await
    }

    async fn transaction(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, ChainError> {
        EmbeddedChain::transaction(self, signature).await
    }

    async fn transactions(&self, signatures: &[&str]) -> Result<Vec<Option<ConfirmedTransaction>>, ChainError> {
        EmbeddedChain::transactions(self, signatures).await
    }
}
