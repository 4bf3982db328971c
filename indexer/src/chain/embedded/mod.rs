//! The embedded chain: an in-process SVM (an Agave bank, see `bank`, with the real SPL Token
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
//!   transaction; each landed transaction gets a slot of its own, one above the last, across
//!   restarts too, so "later slot" always means "later transaction" (the projection's balance
//!   guard relies on it).
//!
//! Writes are serialised (one transaction at a time, as a leader orders them) and committed in
//! groups (whatever landed while the previous group was being written, one database commit);
//! reads are not serialised. A listing of what followed a recent transaction (the in-process
//! indexer's, after every confirmation) is answered from the newest rows kept in memory as they
//! are written (`recent`), without a query.
//! A new blockhash is registered every 400 ms, so a signed transaction stays valid for about a
//! minute, as on mainnet.

mod bank;
mod hook;
mod json_rpc;
mod node;
mod recent;
pub use json_rpc::{MAX_MULTIPLE_ACCOUNTS, MAX_RESPONSE_BYTES, MAX_SIGNATURE_STATUSES, PACKET_DATA_SIZE, RESPONSE_TOO_LARGE, encoded_account, feature_set_id};
pub use node::{LedgerEntry, passes as filter_passes};
pub use bank::ProgramCode;
pub use hook::LedgerHook;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::instruction::Instruction as ProgramInstruction;
use anchor_lang::solana_program::program_pack::Pack;
use anchor_lang::solana_program::system_instruction;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use funding_market::client;
use funding_market::instructions::InitializeParams;
use serde_json::{Value, json};
use solana_account::{Account as SolanaAccount, AccountSharedData, ReadableAccount};
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_svm::transaction_processing_result::TransactionProcessingResult;
use solana_svm::transaction_processor::ExecutionRecordingConfig;
use solana_transaction::Transaction;
use solana_transaction::TransactionVerificationMode;
use solana_transaction::versioned::VersionedTransaction;
use sqlx::PgPool;
use solana_message::{MessageHeader, VersionedMessage};
use solana_message::compiled_instruction::CompiledInstruction;
use solana_rpc_client_api::response::RpcConfirmedTransactionStatusWithSignature;
use solana_transaction::versioned::{Legacy, TransactionVersion};
use solana_transaction_error::TransactionError;
use solana_transaction_status_client_types::{
    EncodedConfirmedTransactionWithStatusMeta, EncodedTransaction, EncodedTransactionWithStatusMeta, InnerInstruction, InnerInstructions,
    TransactionBinaryEncoding, TransactionConfirmationStatus, TransactionStatusMeta, UiCompiledInstruction, UiMessage, UiRawMessage, UiTransaction,
    UiTransactionEncoding,
};
use tokio::sync::{Mutex, Semaphore, oneshot, watch};

use anchor_lang::solana_program::clock::MAX_PROCESSING_AGE;

use super::decode::Compiled;
use super::{Account, ChainError, Clock, ConfirmedTransaction, SignatureInfo};
use crate::address_text;
use crate::group_commit::{self, GroupQueue};

/// What the program's config is initialised with on a fresh chain.
#[derive(Clone, Debug)]
pub struct GenesisParams {
    /// Trading fee, basis points.
    pub fee_bps: u16,
    /// Micro-USDC.
    pub min_deposit: u64,
    /// Micro-USDC.
    pub min_trade: u64,
    /// Test USDC minted into the treasury, which funds market subsidies (micro-USDC).
    pub treasury_funds: u64,
    /// Whether genesis initializes the program's config (and funds the treasury and roles).
    /// Without it the chain is as a fresh deployment is: the program and the mint, no config,
    /// for an operator to initialize (`funding-admin init`, tested so).
    pub initialize_config: bool,
    /// Whether the program runs natively or as its SBF binary.
    pub program: ProgramCode,
}

impl Default for GenesisParams {
    fn default() -> Self {
        GenesisParams { fee_bps: 100, min_deposit: 1_000_000, min_trade: 1_000_000, treasury_funds: 10_000_000 * 1_000_000, initialize_config: true, program: ProgramCode::Native }
    }
}

/// The keys created at genesis and kept across restarts.
pub struct Keys {
    /// The test USDC mint (6 decimals).
    pub mint: Keypair,
    pub mint_authority: Keypair,
    /// The program's config roles.
    pub authority: Keypair,
    pub operator: Keypair,
    pub oracle: Keypair,
}

/// SOL given to each config role at genesis, for fees and rent.
const ROLE_LAMPORTS: u64 = 1_000 * 1_000_000_000;

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
    /// least the block height.
    last_slot: AtomicU64,
    /// `last_slot`, published to followers (slot notifications).
    slots: watch::Sender<u64>,
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
    /// The bank's turn (`turn`), waited for.
    /// Ends the current slot empty (the caller holds the bank's turn).
    fn next_slot(&self) {
        let slot = self.last_slot.fetch_add(1, Ordering::Relaxed) + 1;
        self.slots.send_replace(slot);
    }

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
const RUNTIME_OWNERS: [&str; 3] =
    ["Sysvar1111111111111111111111111111111111111", "NativeLoader1111111111111111111111111111111", "BPFLoaderUpgradeab1e11111111111111111111111"];

/// Accounts that are part of the runtime, not of its state: never persisted.
fn is_runtime_account(account: &AccountSharedData) -> bool {
    account.executable() || RUNTIME_OWNERS.contains(&account.owner().to_string().as_str())
}

fn preflight_failure(err: &TransactionError) -> ChainError {
    ChainError::Rpc { code: -32002, message: format!("Transaction simulation failed: {err}"), err: Some(err.clone()) }
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
            last_slot: AtomicU64::new(last_slot.unwrap_or(0) as u64),
            slots: watch::channel(last_slot.unwrap_or(0) as u64).0,
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
    /// database transaction that writes their ledger rows, when it can (`LedgerHook::apply`):
    /// one commit, and one turn, for both writes a trade waits on. The first hook given is the
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
        self.0.slots.subscribe()
    }

    /// Moves the chain's clock `seconds` away from wall time (tests: reach a market's close).
    pub fn set_clock_offset(&self, seconds: i64) {
        self.0.clock_offset.store(seconds, Ordering::Relaxed);
    }

    fn now(&self) -> i64 {
        chrono::Utc::now().timestamp() + self.0.clock_offset.load(Ordering::Relaxed)
    }

    async fn ensure_genesis(&self, genesis: &GenesisParams) -> Result<(), EmbeddedError> {
        let keys = &self.0.keys;
        if self.account(&keys.mint.pubkey().to_string()).await?.is_none() {
            let space = spl_token_interface::state::Mint::LEN;
            let create = system_instruction::create_account(
                &self.payer(),
                &keys.mint.pubkey(),
                self.0.runtime.bank().get_minimum_balance_for_rent_exemption(space),
                space as u64,
                &spl_token_interface::ID,
            );
            let init = spl_token_interface::instruction::initialize_mint2(&spl_token_interface::ID, &keys.mint.pubkey(), &keys.mint_authority.pubkey(), None, 6)
                .map_err(|e| EmbeddedError::Corrupt(e.to_string()))?;
            self.send_as_payer(&[create, init], &[&keys.mint]).await?;
        }
        if genesis.initialize_config && self.account(&client::config_pda().to_string()).await?.is_none() {
            let payer = self.payer();
            let params = InitializeParams {
                authority: keys.authority.pubkey(),
                operator: keys.operator.pubkey(),
                oracle: keys.oracle.pubkey(),
                fee_bps: genesis.fee_bps,
                min_deposit: genesis.min_deposit,
                min_trade: genesis.min_trade,
            };
            let initialize = client::initialize(payer, keys.authority.pubkey(), keys.mint.pubkey(), params);
            let mut ixs = vec![initialize, self.mint_to_instruction(&client::treasury_pda(), genesis.treasury_funds)];
            for role in [&keys.authority, &keys.operator, &keys.oracle] {
                ixs.push(system_instruction::transfer(&payer, &role.pubkey(), ROLE_LAMPORTS));
            }
            self.send_as_payer(&ixs, &[&keys.mint_authority, &keys.authority]).await?;
        }
        Ok(())
    }

    fn payer(&self) -> Pubkey {
        self.0.runtime.genesis_payer.pubkey()
    }

    fn mint_to_instruction(&self, token_account: &Pubkey, amount: u64) -> ProgramInstruction {
        let keys = &self.0.keys;
        spl_token_interface::instruction::mint_to(&spl_token_interface::ID, &keys.mint.pubkey(), token_account, &keys.mint_authority.pubkey(), &[], amount)
            .expect("mint_to with the token program id builds")
    }

    /// Sends `instructions` paid by the bank's genesis account (which holds the test SOL).
    async fn send_as_payer(&self, instructions: &[ProgramInstruction], signers: &[&Keypair]) -> Result<String, ChainError> {
        let payer = &self.0.runtime.genesis_payer;
        let mut all: Vec<&Keypair> = vec![payer];
        all.extend_from_slice(signers);
        // Two equal requests (the same faucet grant twice in a second) would otherwise be the
        // same bytes under the same blockhash, and the second "already processed": a distinct
        // compute-unit limit per send makes each one its own transaction, at no cost.
        static SENDS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SENDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 100_000;
        let unique = solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(1_300_000 + n);
        let instructions: Vec<ProgramInstruction> = std::iter::once(unique).chain(instructions.iter().cloned()).collect();
        let tx = Transaction::new_signed_with_payer(&instructions, Some(&payer.pubkey()), &all, self.0.runtime.bank().last_blockhash());
        let wire = bincode::serialize(&tx).expect("a transaction serialises");
        self.send_and_confirm(&wire).await
    }

    /// Mints test USDC into a token account (the faucet: as if someone sent USDC there).
    pub async fn mint_usdc(&self, token_account: &Pubkey, amount: u64) -> Result<String, ChainError> {
        let ix = self.mint_to_instruction(token_account, amount);
        self.send_as_payer(&[ix], &[&self.0.keys.mint_authority]).await
    }

    /// Gives `to` test SOL for fees and rent.
    pub async fn airdrop(&self, to: &Pubkey, lamports: u64) -> Result<String, ChainError> {
        self.send_as_payer(&[system_instruction::transfer(&self.payer(), to, lamports)], &[]).await
    }

    /// Sends a signed transaction (wire bytes) and returns its signature once it is confirmed
    /// (durable). Refusals carry the RPC node's error codes: -32602 undecodable, -32003 bad
    /// signature, -32002 preflight failure (with `data.err`).
    pub async fn send_and_confirm(&self, wire: &[u8]) -> Result<String, ChainError> {
        Ok(self.send(wire, true).await?.signature)
    }

    /// `send_and_confirm`, answered with the transaction as it landed (what `transaction` would
    /// read back from the ledger, built from the bank's results instead of a ledger read).
    pub async fn send_and_confirm_transaction(&self, wire: &[u8]) -> Result<ConfirmedTransaction, ChainError> {
        self.send(wire, true).await?.resolve()
    }

    /// `sendTransaction` with `skipPreflight`: a transaction that fails still lands (and pays
    /// its fee), as on a cluster. For tests of what follows a failed transaction.
    pub async fn send_skipping_preflight(&self, wire: &[u8]) -> Result<String, ChainError> {
        Ok(self.send(wire, false).await?.signature)
    }

    async fn send(&self, wire: &[u8], preflight: bool) -> Result<Sent, ChainError> {
        if wire.len() > json_rpc::PACKET_DATA_SIZE {
            return Err(ChainError::invalid_params(format!(
                "decoded solana_transaction::versioned::VersionedTransaction too large: {} bytes (max: {} bytes)",
                wire.len(),
                json_rpc::PACKET_DATA_SIZE
            )));
        }
        let tx: VersionedTransaction = bincode::deserialize(wire)
            .map_err(|e| ChainError::invalid_params(format!("failed to deserialize transaction: {e}")))?;
        tx.sanitize().map_err(|e| ChainError::invalid_params(format!("invalid transaction: {e}")))?;
        if !tx.verify_with_results().iter().all(|ok| *ok) {
            return Err(ChainError::Rpc { code: -32003, message: "Transaction signature verification failure".into(), err: None });
        }
        if tx.message.address_table_lookups().is_some_and(|lookups| !lookups.is_empty()) {
            // The ledger and the persisted state are keyed by static account keys; accounts
            // loaded through a table would be written in the bank and lost on restart.
            return Err(ChainError::invalid_params(
                "invalid transaction: address lookup tables are not supported by the embedded chain; send it without lookups",
            ));
        }
        // Applied and made durable in a task of its own: once the bank has applied a
        // transaction, it must reach Postgres whatever becomes of the caller (a request past
        // its deadline or a client that went away drops the caller's future at any await).
        let chain = self.clone();
        tokio::spawn(async move { chain.land(tx, preflight).await })
            .await
            .map_err(|e| ChainError::Transport(format!("embedded chain: the sending task failed: {e}")))?
    }

    /// Runs a transaction whose signatures `send` verified in the bank (one at a time) and returns once it is durable.
    /// Group commit: the bank goes on with the next transactions while earlier ones are being
    /// written, and whoever has the writer next writes every landed transaction still
    /// waiting, in landing order, in one database transaction. Each caller is answered only
    /// after the commit that holds its transaction, so nothing is confirmed that a crash could
    /// lose; a crash loses only unconfirmed transactions, and the bank rebuilt from Postgres is
    /// the state after the last confirmed one.
    async fn land(&self, tx: VersionedTransaction, preflight: bool) -> Result<Sent, ChainError> {
        let _in_flight = self.0.in_flight.acquire().await.expect("the chain's semaphore is never closed");
        let signature = tx.signatures[0].to_string();
        let (err, durable, landed) = {
            let _turn = self.0.bank_turn("transaction").await;
            let bank = self.0.runtime.bank();
            let mut clock: anchor_lang::prelude::Clock = bank.clock();
            clock.unix_timestamp = self.now();
            clock.slot = self.0.last_slot.load(Ordering::Relaxed) + 1;
            bank.set_sysvar_for_tests(&clock);

            // Signatures were verified by `send`, outside the turn: here only the message hash
            // and the precompiles, so the one-at-a-time section does not verify them again.
            let sanitized = bank
                .verify_transaction(tx.clone(), TransactionVerificationMode::HashAndVerifyPrecompiles)
                .map_err(|e| ChainError::invalid_params(format!("invalid transaction: {e}")))?;
            let batch = bank.prepare_sanitized_batch(std::slice::from_ref(&sanitized));
            let recording = ExecutionRecordingConfig { enable_cpi_recording: true, enable_log_recording: true, ..Default::default() };
            // Preflight, as `sendTransaction` does: what would fail is refused and never lands.
            // The transaction is executed once and, if it failed, not committed — what simulating
            // it first would refuse, since nothing else runs in the bank during this turn (a
            // simulation before every execution was a third of the turn's time).
            let refuse_failure = |_: &mut _, processed: &[TransactionProcessingResult]| match processed.first() {
                Some(Ok(tx)) if preflight => tx.status().map(|()| None),
                _ => Ok(None),
            };
            let executed = bank.load_execute_and_commit_transactions_with_pre_commit_callback(
                &batch,
                MAX_PROCESSING_AGE,
                recording,
                &mut Default::default(),
                None,
                refuse_failure,
            );
            drop(batch);
            let mut results = match executed {
                Ok((results, _)) => results,
                Err(err) => return Err(preflight_failure(&err)),
            };
            let committed = match results.pop() {
                Some(Ok(committed)) => committed,
                // Refused before execution (stale blockhash, duplicate, fee payer short of SOL):
                // nothing landed.
                Some(Err(err)) => return Err(preflight_failure(&err)),
                None => return Err(ChainError::Transport("the bank returned no result".into())),
            };
            let err = committed.status.err();
            self.0.last_slot.store(clock.slot, Ordering::Relaxed);
            self.0.slots.send_replace(clock.slot);
            // The accounts as this transaction left them (a later one may change them before
            // the write).
            let accounts = written_accounts(&bank, &tx);
            let inner = committed.inner_instructions.unwrap_or_default();
            // Resolved here, once, for the ledger write that applies it (`persist`) and for its
            // sender's answer: not in the writer's turn, which every trade waits on.
            let ahead = match self.0.hook.get() {
                Some(hook) if err.is_none() && hook.wants(&signature) => {
                    resolve_ran(&signature, &tx.message, &inner, clock.slot, clock.unix_timestamp).ok()
                }
                _ => None,
            };
            let landing = Landing {
                signature: signature.clone(),
                slot: clock.slot,
                block_time: clock.unix_timestamp,
                err: err.clone(),
                inner,
                logs: committed.log_messages.unwrap_or_default(),
                accounts,
                tx,
                ahead,
            };
            // What the caller is answered with, taken before the landing is queued (resolved
            // only for a caller that asks for the transaction, outside the turn, unless it was
            // here).
            let landed = match &landing.ahead {
                Some(resolved) => Ran::Resolved(resolved.clone()),
                None => Ran::Parts { message: landing.tx.message.clone(), inner: landing.inner.clone(), slot: landing.slot, block_time: landing.block_time },
            };
            let (done, durable) = oneshot::channel();
            self.0.unwritten.push((landing, done));
            (err, durable, landed)
        };
        // In a task of its own: whoever writes goes on with later groups, which this caller
        // does not wait for.
        let chain = self.clone();
        tokio::spawn(async move { chain.write_unwritten().await });
        durable.await.map_err(|_| ChainError::Transport("embedded chain: the write of this transaction was abandoned".into()))?;
        if let Some(err) = err {
            return Err(ChainError::TransactionFailed { signature, err });
        }
        Ok(Sent { signature, ran: landed })
    }

    /// Writes every landed transaction waiting, a group at a time, and answers their callers
    /// (nothing if another task is writing: see `GroupQueue::turn_after_woken`).
    async fn write_unwritten(&self) {
        let mut turn = self.0.unwritten.turn_after_woken().await;
        while let Some((writer, group)) = turn.next() {
            let (landings, callers): (Vec<Landing>, Vec<oneshot::Sender<()>>) = group.into_iter().unzip();
            self.persist(writer, &landings).await;
            for caller in callers {
                let _ = caller.send(());
            }
        }
    }

    /// Persists landed transactions, retrying until they are durable: the bank has applied
    /// them, so giving up would leave the bank ahead of Postgres. While it fails, `/health`
    /// reports the chain down (`is_persisting`); later sends still land in the bank, up to
    /// `MAX_UNWRITTEN`, and are answered only once this group and theirs are written. A failure that
    /// broke the writer connection lost the single-writer lock with it, so the retry first takes
    /// a new connection holding the lock again (never writing without it); a write that
    /// committed before its answer was lost is recognised by its last signature and not
    /// written twice.
    async fn persist(&self, writer: &mut sqlx::PgConnection, group: &[Landing]) {
        let last = &group[group.len() - 1].signature;
        let mut backoff = Duration::from_millis(50);
        let mut failures = 0u32;
        // Transactions of the group to apply in its write (`Landing::ahead`).
        let mut ahead: Vec<&ConfirmedTransaction> = group.iter().filter_map(|landing| landing.ahead.as_ref()).collect();
        loop {
            let written = match self.0.hook.get().filter(|_| !ahead.is_empty()) {
                Some(hook) => match record_and_apply(writer, group, hook.as_ref(), &ahead).await {
                    Ok((seqs, true)) => {
                        hook.applied(&ahead);
                        Ok(seqs)
                    }
                    Ok((seqs, false)) => Ok(seqs),
                    Err(e) => {
                        // The projection's trouble is its senders' to meet (they apply ahead as
                        // before): the ledger is written alone at once. (A broken connection
                        // fails that write too, which then retries as any failed write does.)
                        tracing::warn!(error = %e, signature = %last, "embedded chain: the ledger write with its group's projection failed; writing the ledger alone");
                        ahead.clear();
                        continue;
                    }
                },
                None => record(writer, group).await,
            };
            let error = match written {
                Ok(seqs) => {
                    let mut recent = self.recent();
                    for (landing, &seq) in group.iter().zip(&seqs) {
                        let info = SignatureInfo { signature: landing.signature.clone(), slot: landing.slot, failed: landing.err.is_some(), block_time: Some(landing.block_time) };
                        recent.push(seq, info, landing.tx.message.static_account_keys().to_vec());
                    }
                    drop(recent);
                    self.0.confirmed.send_replace(seqs[seqs.len() - 1]);
                    break;
                }
                Err(e) => e,
            };
            self.0.persist_failing.store(true, Ordering::Relaxed);
            failures += 1;
            if failures == 1 {
                tracing::error!(error = %error, signature = %last, transactions = group.len(), "embedded chain: landed transactions could not be persisted; retrying");
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
            if sqlx::query("SELECT 1").execute(&mut *writer).await.is_err() {
                match single_writer(&self.0.db).await {
                    Ok(connection) => *writer = connection,
                    Err(e) => {
                        tracing::warn!(error = %e, "embedded chain: no writer connection holding the chain's lock yet");
                        continue;
                    }
                }
            }
            match self.ledger_seq(writer, last).await {
                Ok(Some(seq)) => {
                    // Written, but which sequence each row drew is Postgres's to tell.
                    self.recent().forget_through(seq);
                    self.0.confirmed.send_replace(seq);
                    break;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "embedded chain: could not read the ledger"),
            }
        }
        if failures > 0 {
            tracing::info!(signature = %last, failures, "embedded chain: persisted after retrying");
        }
        self.0.persist_failing.store(false, Ordering::Relaxed);
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, recent::RecentLedger> {
        self.0.recent.lock().expect("the recent ledger is never poisoned")
    }

    async fn ledger_seq(&self, writer: &mut sqlx::PgConnection, signature: &str) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT seq FROM embedded_ledger WHERE signature = $1").bind(signature).fetch_optional(writer).await
    }

    /// False while landed transactions are being retried into Postgres after a failure (no
    /// send is confirmed meanwhile).
    pub fn is_persisting(&self) -> bool {
        !self.0.persist_failing.load(Ordering::Relaxed)
    }

}

/// `record`, and the group's transactions the hook wants applied in the same database
/// transaction (`LedgerHook::apply`). The ledger's sequences, and whether they were applied.
async fn record_and_apply(writer: &mut sqlx::PgConnection, group: &[Landing], hook: &dyn LedgerHook, ahead: &[&ConfirmedTransaction]) -> Result<(Vec<i64>, bool), ChainError> {
    use sqlx::Connection;
    let mut db = writer.begin().await.map_err(db_error)?;
    let seqs = record(&mut db, group).await?;
    let applied = hook.apply(&mut db, ahead).await.map_err(db_error)?;
    db.commit().await.map_err(db_error)?;
    Ok((seqs, applied))
}

/// Makes landed transactions durable, in landing order, in one statement (so one atomic write
/// and one round trip however many the group holds): each one's ledger row, its rows in the
/// by-account index, and the accounts as the last of them left them. Returns the ledger
/// sequence each drew, in landing order. A statement per transaction kept the single writer busy with round
/// trips while the bank waited on it.
async fn record(writer: &mut sqlx::PgConnection, group: &[Landing]) -> Result<Vec<i64>, ChainError> {
    let rows = LedgerRows::of(group);
    let accounts = final_accounts(group);
    let seqs: Vec<i64> = sqlx::query_scalar(
        "WITH input AS (
             SELECT * FROM unnest($1::TEXT[], $2::BIGINT[], $3::BIGINT[], $4::JSONB[], $5::TEXT[], $6::TEXT[], $7::TEXT[], $8::JSONB[],
                                  $9::JSONB[], $10::TEXT[], $11::BYTEA[], $12::JSONB[]) WITH ORDINALITY
                 AS i(signature, slot, block_time, err, account_keys, signers, header, instructions, inner_instructions, recent_blockhash,
                      wire, log_messages, n)
         ), ledger AS (
             -- Sorted by landing order before the sequence is drawn: volatile defaults are
             -- evaluated after the sort, so `seq` follows the order the bank ran them in.
             INSERT INTO embedded_ledger (signature, slot, block_time, err, account_keys, signers, header, instructions, inner_instructions,
                                          recent_blockhash, wire, log_messages)
             SELECT signature, slot, block_time, err, string_to_array(account_keys, ','), string_to_array(signers, ','),
                    string_to_array(header, ',')::SMALLINT[], instructions, inner_instructions, recent_blockhash, wire,
                    ARRAY(SELECT line FROM jsonb_array_elements_text(log_messages) WITH ORDINALITY AS l(line, k) ORDER BY k)
             FROM input ORDER BY n
             RETURNING seq, account_keys
         ), upserted AS (
             INSERT INTO embedded_accounts (address, lamports, owner, data, executable, rent_epoch)
             SELECT * FROM unnest($13::TEXT[], $14::BIGINT[], $15::TEXT[], $16::BYTEA[], $17::BOOLEAN[], $18::BIGINT[])
             ON CONFLICT (address) DO UPDATE SET lamports = EXCLUDED.lamports, owner = EXCLUDED.owner, data = EXCLUDED.data,
                 executable = EXCLUDED.executable, rent_epoch = EXCLUDED.rent_epoch
         ), closed AS (
             DELETE FROM embedded_accounts WHERE address = ANY($19)
         ), by_account AS (
             INSERT INTO embedded_ledger_accounts (address, seq) SELECT DISTINCT key, l.seq FROM ledger l, unnest(l.account_keys) AS key
         )
         SELECT array_agg(seq ORDER BY seq) FROM ledger",
    )
    // Prepared and planned once per connection (parsing it took as long as running it for a
    // few transactions, planning it a third as long): see the writer connection's
    // `plan_cache_mode`.
    .bind(&rows.signature)
    .bind(&rows.slot)
    .bind(&rows.block_time)
    .bind(&rows.err)
    .bind(&rows.account_keys)
    .bind(&rows.signers)
    .bind(&rows.header)
    .bind(&rows.instructions)
    .bind(&rows.inner_instructions)
    .bind(&rows.recent_blockhash)
    .bind(&rows.wire)
    .bind(&rows.log_messages)
    .bind(&accounts.addresses)
    .bind(&accounts.lamports)
    .bind(&accounts.owners)
    .bind(&accounts.data)
    .bind(&accounts.executable)
    .bind(&accounts.rent_epochs)
    .bind(&accounts.closed)
    .fetch_one(&mut *writer)
    .await
    .map_err(db_error)?;
    if seqs.len() != group.len() {
        return Err(ChainError::Transport(format!("embedded chain storage: {} ledger rows written for {} transactions", seqs.len(), group.len())));
    }
    Ok(seqs)
}

/// The ledger rows of a group, a column each, in landing order. Keys, signers and the header
/// go as comma-joined text (base58 and digits hold no comma), log lines as a JSON array (they
/// may hold anything): a statement's array arguments cannot nest arrays of different lengths.
#[derive(Default)]
struct LedgerRows {
    signature: Vec<String>,
    slot: Vec<i64>,
    block_time: Vec<i64>,
    err: Vec<Option<Value>>,
    account_keys: Vec<String>,
    signers: Vec<String>,
    header: Vec<String>,
    instructions: Vec<Value>,
    inner_instructions: Vec<Value>,
    recent_blockhash: Vec<String>,
    wire: Vec<Vec<u8>>,
    log_messages: Vec<Value>,
}

impl LedgerRows {
    fn of(group: &[Landing]) -> LedgerRows {
        let mut rows = LedgerRows::default();
        for Landing { tx, signature, slot, block_time, err, inner, logs, .. } in group {
            let keys: Vec<String> = tx.message.static_account_keys().iter().map(address_text::of).collect();
            let instruction_json = |ix: &CompiledInstruction| -> Value {
                let program_id = keys.get(ix.program_id_index as usize).cloned().unwrap_or_default();
                json!({"program_id": program_id, "program_index": ix.program_id_index, "accounts": ix.accounts, "data": BASE64.encode(&ix.data)})
            };
            let mut inner_json = Vec::new();
            for (outer_index, group) in inner.iter().enumerate() {
                for ix in group {
                    let mut value = instruction_json(&ix.instruction);
                    value["outer_index"] = json!(outer_index);
                    value["stack_height"] = json!(ix.stack_height);
                    inner_json.push(value);
                }
            }
            let h = tx.message.header();
            rows.signature.push(signature.clone());
            rows.slot.push(*slot as i64);
            rows.block_time.push(*block_time);
            rows.err.push(err.as_ref().map(|e| serde_json::to_value(e).unwrap_or(Value::Null)));
            rows.account_keys.push(keys.join(","));
            rows.signers.push(keys[..h.num_required_signatures as usize].join(","));
            rows.header.push(format!("{},{},{}", h.num_required_signatures, h.num_readonly_signed_accounts, h.num_readonly_unsigned_accounts));
            rows.instructions.push(Value::Array(tx.message.instructions().iter().map(instruction_json).collect()));
            rows.inner_instructions.push(Value::Array(inner_json));
            rows.recent_blockhash.push(tx.message.recent_blockhash().to_string());
            rows.wire.push(bincode::serialize(tx).expect("a transaction serializes"));
            rows.log_messages.push(json!(logs));
        }
        rows
    }
}

/// The accounts a group wrote, each as the last transaction to write it left it (stored, or
/// closed): one row per address, as one statement can write a row only once.
fn final_accounts(group: &[Landing]) -> StoredAccounts {
    // Address -> (landing, index in its accounts), or None if closed; the last write wins.
    let mut last: HashMap<&str, Option<(usize, usize)>> = HashMap::new();
    let mut order = Vec::new();
    for (l, landing) in group.iter().enumerate() {
        let written = &landing.accounts;
        for (i, address) in written.addresses.iter().enumerate() {
            if last.insert(address, Some((l, i))).is_none() {
                order.push(address.as_str());
            }
        }
        for address in &written.closed {
            if last.insert(address, None).is_none() {
                order.push(address.as_str());
            }
        }
    }
    let mut stored = StoredAccounts::default();
    for address in order {
        match last[address] {
            Some((l, i)) => {
                let a = &group[l].accounts;
                stored.addresses.push(a.addresses[i].clone());
                stored.lamports.push(a.lamports[i]);
                stored.owners.push(a.owners[i].clone());
                stored.data.push(a.data[i].clone());
                stored.executable.push(a.executable[i]);
                stored.rent_epochs.push(a.rent_epochs[i]);
            }
            None => stored.closed.push(address.to_string()),
        }
    }
    stored
}

/// A transaction's inner instructions as the bank recorded them (one list per outer
/// instruction) in the groups a node reports: by outer index, empty ones left out — as the
/// ledger row gives them back.
fn inner_groups(inner: Vec<Vec<solana_message::inner_instruction::InnerInstruction>>) -> Vec<InnerInstructions> {
    inner
        .into_iter()
        .enumerate()
        .filter(|(_, group)| !group.is_empty())
        .map(|(index, group)| InnerInstructions {
            index: index as u8,
            instructions: group.into_iter().map(|ix| InnerInstruction { instruction: ix.instruction, stack_height: Some(u32::from(ix.stack_height)) }).collect(),
        })
        .collect()
}

/// The writable accounts of `tx` as the bank holds them now (closed ones by address); sysvars
/// and programs are never persisted.
fn written_accounts(bank: &solana_runtime::bank::Bank, tx: &VersionedTransaction) -> StoredAccounts {
    let mut stored = StoredAccounts::default();
    for (index, key) in tx.message.static_account_keys().iter().enumerate() {
        if !tx.message.is_maybe_writable(index, None) {
            continue;
        }
        match bank.get_account(key) {
            Some(account) if is_runtime_account(&account) => {}
            Some(account) => {
                stored.addresses.push(address_text::of(key));
                stored.lamports.push(account.lamports() as i64);
                stored.owners.push(address_text::of(account.owner()));
                stored.data.push(account.data().to_vec());
                stored.executable.push(account.executable());
                stored.rent_epochs.push(account.rent_epoch() as i64);
            }
            // Closed by the transaction.
            None => stored.closed.push(address_text::of(key)),
        }
    }
    stored
}


impl EmbeddedChain {
    pub async fn account(&self, address: &str) -> Result<Option<Account>, ChainError> {
        let address = parse_address(address)?;
        let account = self.0.runtime.bank().get_account(&address);
        Ok(account.map(|a| Account { lamports: a.lamports(), owner: a.owner().to_string(), data: a.data().to_vec(), executable: a.executable() }))
    }

    /// Several accounts, in the order asked (`None` where one does not exist).
    pub async fn accounts(&self, addresses: &[&str]) -> Result<Vec<Option<Account>>, ChainError> {
        let mut out = Vec::with_capacity(addresses.len());
        for address in addresses {
            out.push(self.account(address).await?);
        }
        Ok(out)
    }

    /// The latest blockhash and the last block height at which it is valid.
    pub async fn latest_blockhash(&self) -> Result<(String, u64), ChainError> {
        let (hash, last_valid) = self.0.runtime.read(|bank| {
            let hash = bank.last_blockhash();
            (hash, bank.get_blockhash_last_valid_block_height(&hash))
        });
        let last_valid = last_valid.ok_or_else(|| ChainError::Format("no blockhash".into()))?;
        Ok((hash.to_string(), last_valid))
    }

    /// Whether a blockhash can still be used by a new transaction.
    pub async fn is_blockhash_valid(&self, blockhash: &str) -> Result<bool, ChainError> {
        Ok(blockhash.parse().is_ok_and(|hash| self.0.runtime.read(|bank| bank.is_blockhash_valid(&hash))))
    }

    /// The clock a transaction sent now would see.
    pub async fn clock(&self) -> Result<Clock, ChainError> {
        Ok(Clock { slot: self.0.last_slot.load(Ordering::Relaxed) + 1, unix_timestamp: self.now() })
    }

    /// Every landed transaction that mentions `address`, after `cursor` (exclusive), oldest
    /// first.
    pub async fn signatures_after(&self, address: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, ChainError> {
        let remembered = cursor.and_then(|signature| self.recent().seq_of(signature));
        let cursor_seq: i64 = match (cursor, remembered) {
            (None, _) => 0,
            (Some(_), Some(seq)) => seq,
            (Some(signature), None) => sqlx::query_scalar("SELECT seq FROM embedded_ledger WHERE signature = $1")
                .bind(signature)
                .fetch_optional(&self.0.db)
                .await
                .map_err(db_error)?
                .ok_or_else(|| ChainError::invalid_params(format!("Invalid param: unknown signature {signature}")))?,
        };
        // What followed a moment ago is in memory (a key that is no address names nothing).
        if let Ok(key) = address.parse::<Pubkey>() {
            if let Some(listed) = self.recent().naming_after(&key, cursor_seq) {
                return Ok(listed);
            }
        }
        // In pages along the primary key: the walk from the cursor is an index range scan
        // whatever the planner believes of the table's size (a query without the limit was a
        // sequential scan of the whole ledger on every pass).
        const PAGE: i64 = 5_000;
        let mut out = Vec::new();
        let mut after = cursor_seq;
        loop {
            let rows: Vec<(i64, String, i64, bool, i64)> = sqlx::query_as(
                "SELECT l.seq, l.signature, l.slot, l.err IS NOT NULL, l.block_time
                 FROM embedded_ledger_accounts a JOIN embedded_ledger l USING (seq)
                 WHERE a.address = $1 AND a.seq > $2 ORDER BY a.seq LIMIT $3",
            )
            .bind(address)
            .bind(after)
            .bind(PAGE)
            .fetch_all(&self.0.db)
            .await
            .map_err(db_error)?;
            let full = rows.len() as i64 == PAGE;
            after = rows.last().map_or(after, |r| r.0);
            out.extend(rows.into_iter().map(|(_, signature, slot, failed, block_time)| SignatureInfo { signature, slot: slot as u64, failed, block_time: Some(block_time) }));
            if !full {
                break;
            }
        }
        Ok(out)
    }

    /// `getSignaturesForAddress`: newest first, at most `limit`, older than `before` and newer
    /// than `until` (both exclusive).
    pub async fn signatures_for_address(
        &self,
        address: &str,
        before: Option<&str>,
        until: Option<&str>,
        limit: usize,
    ) -> Result<Vec<RpcConfirmedTransactionStatusWithSignature>, ChainError> {
        let rows: Vec<(String, i64, Option<Value>, i64)> = sqlx::query_as(
            SIGNATURES_FOR_ADDRESS,
        )
        .bind(address)
        .bind(before)
        .bind(until)
        .bind(limit as i64)
        .fetch_all(&self.0.db)
        .await
        .map_err(db_error)?;
        rows.into_iter()
            .map(|(signature, slot, err, block_time)| {
                let err = stored_error(&signature, err)?;
                Ok(RpcConfirmedTransactionStatusWithSignature {
                    signature,
                    slot: slot as u64,
                    err: err.map(Into::into),
                    memo: None,
                    block_time: Some(block_time),
                    confirmation_status: Some(TransactionConfirmationStatus::Finalized),
                    transaction_index: Some(0),
                })
            })
            .collect()
    }

    async fn ledger_row(&self, signature: &str) -> Result<Option<LedgerRow>, ChainError> {
        sqlx::query_as(
            "SELECT signature, slot, block_time, err, account_keys, header, instructions, inner_instructions, recent_blockhash, wire, log_messages
             FROM embedded_ledger WHERE signature = $1",
        )
        .bind(signature)
        .fetch_optional(&self.0.db)
        .await
        .map_err(db_error)
    }

    /// The ledger rows of `signatures` (in no order; those the ledger lacks left out): one
    /// round trip for many.
    async fn ledger_rows(&self, signatures: &[&str]) -> Result<Vec<LedgerRow>, ChainError> {
        sqlx::query_as(
            "SELECT signature, slot, block_time, err, account_keys, header, instructions, inner_instructions, recent_blockhash, wire, log_messages
             FROM embedded_ledger WHERE signature = ANY($1)",
        )
        .bind(signatures)
        .fetch_all(&self.0.db)
        .await
        .map_err(db_error)
    }

    /// A landed transaction, typed: its ledger row's header, instructions and error.
    async fn landed(&self, signature: &str) -> Result<Option<Landed>, ChainError> {
        self.ledger_row(signature).await?.map(Landed::of).transpose()
    }
}

impl Landed {
    fn of(row: LedgerRow) -> Result<Landed, ChainError> {
        let signature = row.signature.as_str();
        let corrupt = || ChainError::Format(format!("ledger row of {signature}"));
        let compiled = |value: &Value| -> Result<CompiledInstruction, ChainError> {
            let program_id_index = value["program_index"].as_u64().and_then(|i| u8::try_from(i).ok()).ok_or_else(corrupt)?;
            let accounts = serde_json::from_value(value["accounts"].clone()).map_err(|_| corrupt())?;
            let data = BASE64.decode(value["data"].as_str().ok_or_else(corrupt)?).map_err(|_| corrupt())?;
            Ok(CompiledInstruction { program_id_index, accounts, data })
        };
        let stored = |v: &Value| v.as_array().cloned().unwrap_or_default();
        let mut inner: Vec<InnerInstructions> = Vec::new();
        for ix in stored(&row.inner_instructions) {
            let index = ix["outer_index"].as_u64().and_then(|i| u8::try_from(i).ok()).ok_or_else(corrupt)?;
            let instruction = InnerInstruction { instruction: compiled(&ix)?, stack_height: ix["stack_height"].as_u64().map(|h| h as u32) };
            match inner.last_mut() {
                Some(group) if group.index == index => group.instructions.push(instruction),
                _ => inner.push(InnerInstructions { index, instructions: vec![instruction] }),
            }
        }
        let [required, readonly_signed, readonly_unsigned] = <[i16; 3]>::try_from(row.header).map_err(|_| corrupt())?;
        Ok(Landed {
            slot: row.slot as u64,
            block_time: row.block_time,
            err: stored_error(signature, row.err)?,
            header: MessageHeader {
                num_required_signatures: required as u8,
                num_readonly_signed_accounts: readonly_signed as u8,
                num_readonly_unsigned_accounts: readonly_unsigned as u8,
            },
            account_keys: row.account_keys,
            recent_blockhash: row.recent_blockhash,
            instructions: stored(&row.instructions).iter().map(compiled).collect::<Result<_, _>>()?,
            inner,
            wire: row.wire,
            logs: row.log_messages,
        })
    }
}

impl Landed {
    /// The transaction resolved as a cluster's `getTransaction` answer is (one resolution,
    /// `decode::Compiled`), without encoding it for the wire first.
    fn resolve(self, signature: &str) -> Result<ConfirmedTransaction, ChainError> {
        Compiled {
            signature,
            slot: self.slot,
            // One transaction per slot here.
            transaction_index: Some(0),
            block_time: Some(self.block_time),
            err: self.err,
            keys: self.account_keys,
            signers: self.header.num_required_signatures as usize,
            instructions: self.instructions,
            inner: self.inner,
        }
        .resolve()
    }
}

impl EmbeddedChain {
    /// `getTransaction` as a node answers it, or `None`: `json` (and `jsonParsed`, answered as
    /// `json`), or the signed transaction in `base64`/`base58`. Built through the status
    /// types' own `TransactionStatusMeta` conversion.
    pub async fn encoded_transaction(&self, signature: &str, encoding: UiTransactionEncoding) -> Result<Option<EncodedConfirmedTransactionWithStatusMeta>, ChainError> {
        let Some(landed) = self.landed(signature).await? else {
            return Ok(None);
        };
        let binary = match (encoding, &landed.wire) {
            (UiTransactionEncoding::Base64, Some(wire)) => Some(EncodedTransaction::Binary(BASE64.encode(wire), TransactionBinaryEncoding::Base64)),
            (UiTransactionEncoding::Base58 | UiTransactionEncoding::Binary, Some(wire)) => {
                Some(EncodedTransaction::Binary(bs58::encode(wire).into_string(), TransactionBinaryEncoding::Base58))
            }
            (UiTransactionEncoding::Base64 | UiTransactionEncoding::Base58 | UiTransactionEncoding::Binary, None) => {
                return Err(ChainError::invalid_params(format!("{signature} landed before this chain kept wire bytes: ask for encoding json")));
            }
            _ => None,
        };
        let meta = TransactionStatusMeta {
            status: landed.err.map_or(Ok(()), Err),
            fee: 5000 * u64::from(landed.header.num_required_signatures),
            inner_instructions: Some(landed.inner),
            log_messages: Some(landed.logs.unwrap_or_default()),
            pre_token_balances: Some(vec![]),
            post_token_balances: Some(vec![]),
            rewards: Some(vec![]),
            ..TransactionStatusMeta::default()
        };
        // Every signature, from the kept wire bytes (rows from before they were kept: the first).
        let signatures = landed
            .wire
            .as_deref()
            .and_then(|wire| bincode::deserialize::<VersionedTransaction>(wire).ok())
            .map_or_else(|| vec![signature.to_owned()], |tx| tx.signatures.iter().map(ToString::to_string).collect());
        let message = UiRawMessage {
            header: landed.header,
            account_keys: landed.account_keys,
            recent_blockhash: landed.recent_blockhash,
            instructions: landed.instructions.iter().map(|ix| UiCompiledInstruction::from(ix, None)).collect(),
            address_table_lookups: None,
        };
        Ok(Some(EncodedConfirmedTransactionWithStatusMeta {
            slot: landed.slot,
            block_time: Some(landed.block_time),
            transaction: EncodedTransactionWithStatusMeta {
                transaction: binary.unwrap_or_else(|| EncodedTransaction::Json(UiTransaction { signatures, message: UiMessage::Raw(message) })),
                meta: Some(meta.into()),
                version: Some(TransactionVersion::Legacy(Legacy::Legacy)),
            },
            transaction_index: Some(0),
        }))
    }

    /// The ledger's transaction, resolved as a cluster's `getTransaction` answer is (one
    /// resolution, `decode::Compiled`), without encoding it for the wire first.
    pub async fn transaction(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, ChainError> {
        self.landed(signature).await?.map(|landed| landed.resolve(signature)).transpose()
    }

    /// `transaction` for many signatures in one ledger read, in their order (`None` where the
    /// ledger lacks one): how the indexer fetches what it follows.
    pub async fn transactions(&self, signatures: &[&str]) -> Result<Vec<Option<ConfirmedTransaction>>, ChainError> {
        let mut found: HashMap<String, LedgerRow> = self.ledger_rows(signatures).await?.into_iter().map(|row| (row.signature.clone(), row)).collect();
        signatures
            .iter()
            .map(|signature| found.remove(*signature).map(|row| Landed::of(row)?.resolve(signature)).transpose())
            .collect()
    }

    /// A landed transaction's slot and error (what `getSignatureStatuses` reports), or `None`.
    pub async fn status(&self, signature: &str) -> Result<Option<(u64, Option<TransactionError>)>, ChainError> {
        let row: Option<(i64, Option<Value>)> = sqlx::query_as("SELECT slot, err FROM embedded_ledger WHERE signature = $1")
            .bind(signature)
            .fetch_optional(&self.0.db)
            .await
            .map_err(db_error)?;
        row.map(|(slot, err)| Ok((slot as u64, stored_error(signature, err)?))).transpose()
    }

    /// A landed transaction is final: the embedded chain has no forks and confirms only what
    /// is durable.
    pub async fn is_finalized(&self, signature: &str) -> Result<bool, ChainError> {
        Ok(self.status(signature).await?.is_some())
    }

}

/// `getSignaturesForAddress`'s page: a backward range scan of `embedded_ledger_accounts`
/// between the two cursors (each found by the signature's unique index).
pub const SIGNATURES_FOR_ADDRESS: &str = "SELECT l.signature, l.slot, l.err, l.block_time
     FROM embedded_ledger_accounts a JOIN embedded_ledger l USING (seq)
     WHERE a.address = $1
       AND a.seq < COALESCE((SELECT seq FROM embedded_ledger WHERE signature = $2), CASE WHEN $2::TEXT IS NULL THEN 9223372036854775807 ELSE 0 END)
       AND a.seq > COALESCE((SELECT seq FROM embedded_ledger WHERE signature = $3), 0)
     ORDER BY a.seq DESC LIMIT $4";

/// A stored transaction error (its JSON-RPC form), typed.
fn stored_error(signature: &str, err: Option<Value>) -> Result<Option<TransactionError>, ChainError> {
    err.map(|e| serde_json::from_value(e).map_err(|_| ChainError::Format(format!("ledger row of {signature}: transaction error")))).transpose()
}

/// A connection holding `SINGLE_WRITER_LOCK`. A previous holder that just went away (a restart
/// in the same process) can take a moment to release it, hence the short wait.
async fn single_writer(db: &PgPool) -> Result<sqlx::PgConnection, EmbeddedError> {
    // The ledger write is planned once on this connection, not for each group: planning it was
    // 0.16 ms of its 0.5 ms in Postgres, inside the writer's turn (a plan made while the account
    // table was small — a sequential scan for the closed accounts' delete — is made again as it
    // grows: `group_commit::own_connection`).
    let mut connection = group_commit::own_connection(db).await?;
    for _ in 0..50 {
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)").bind(SINGLE_WRITER_LOCK).fetch_one(&mut connection).await?;
        if locked {
            return Ok(connection);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(EmbeddedError::InUse)
}

/// A transaction the bank has applied, to be persisted.
struct Landing {
    tx: VersionedTransaction,
    signature: String,
    slot: u64,
    block_time: i64,
    err: Option<TransactionError>,
    inner: Vec<Vec<solana_message::inner_instruction::InnerInstruction>>,
    logs: Vec<String>,
    /// The accounts it wrote, as it left them.
    accounts: StoredAccounts,
    /// The transaction as the indexer would read it, if it did not fail and the hook of
    /// `apply_in_ledger` wants it: applied in its ledger write (`persist`).
    ahead: Option<ConfirmedTransaction>,
}

/// A transaction this chain confirmed, as the bank ran it (for its sender's answer).
struct Sent {
    signature: String,
    ran: Ran,
}

/// How a confirmed transaction ran: resolved already (`Landing::ahead`), or what resolving it
/// takes, for a caller that asks.
enum Ran {
    Resolved(ConfirmedTransaction),
    Parts { message: VersionedMessage, inner: Vec<Vec<solana_message::inner_instruction::InnerInstruction>>, slot: u64, block_time: i64 },
}

impl Sent {
    /// Resolved as a ledger read resolves it (`Landed::resolve`): what `transaction` would give.
    fn resolve(self) -> Result<ConfirmedTransaction, ChainError> {
        match self.ran {
            Ran::Resolved(tx) => Ok(tx),
            Ran::Parts { message, inner, slot, block_time } => resolve_ran(&self.signature, &message, &inner, slot, block_time),
        }
    }
}

/// A transaction that ran in the bank (and did not fail), resolved as a ledger read resolves it
/// (`Landed::resolve`).
fn resolve_ran(
    signature: &str, message: &VersionedMessage, inner: &[Vec<solana_message::inner_instruction::InnerInstruction>], slot: u64, block_time: i64,
) -> Result<ConfirmedTransaction, ChainError> {
    Compiled {
        signature,
        slot,
        // One transaction per slot here.
        transaction_index: Some(0),
        block_time: Some(block_time),
        err: None,
        keys: message.static_account_keys().iter().map(address_text::of).collect(),
        signers: message.header().num_required_signatures as usize,
        instructions: message.instructions().to_vec(),
        inner: inner_groups(inner.to_vec()),
    }
    .resolve()
}

/// A landed transaction, typed from its ledger row.
struct Landed {
    slot: u64,
    block_time: i64,
    err: Option<TransactionError>,
    header: MessageHeader,
    account_keys: Vec<String>,
    recent_blockhash: String,
    instructions: Vec<CompiledInstruction>,
    inner: Vec<InnerInstructions>,
    /// The signed transaction's bytes and its logs (none for rows landed before they were kept).
    wire: Option<Vec<u8>>,
    logs: Option<Vec<String>>,
}

/// A landed transaction as stored (see the migration for the JSON shapes).
#[derive(sqlx::FromRow)]
struct LedgerRow {
    signature: String,
    slot: i64,
    block_time: i64,
    err: Option<Value>,
    account_keys: Vec<String>,
    header: Vec<i16>,
    instructions: Value,
    inner_instructions: Value,
    recent_blockhash: String,
    wire: Option<Vec<u8>>,
    log_messages: Option<Vec<String>>,
}

/// The accounts a transaction wrote, as columns for one `unnest` upsert.
#[derive(Default)]
struct StoredAccounts {
    addresses: Vec<String>,
    lamports: Vec<i64>,
    owners: Vec<String>,
    data: Vec<Vec<u8>>,
    executable: Vec<bool>,
    rent_epochs: Vec<i64>,
    closed: Vec<String>,
}

async fn load_or_create_keys(db: &PgPool) -> Result<Keys, EmbeddedError> {
    const ROLES: [&str; 5] = ["mint", "mint_authority", "authority", "operator", "oracle"];
    for role in ROLES {
        sqlx::query("INSERT INTO embedded_keys (role, keypair) VALUES ($1, $2) ON CONFLICT (role) DO NOTHING")
            .bind(role)
            .bind(Keypair::new().to_bytes().to_vec())
            .execute(db)
            .await?;
    }
    let rows: Vec<(String, Vec<u8>)> = sqlx::query_as("SELECT role, keypair FROM embedded_keys").fetch_all(db).await?;
    let key = |role: &str| -> Result<Keypair, EmbeddedError> {
        let bytes = rows.iter().find(|(r, _)| r == role).map(|(_, k)| k).ok_or_else(|| EmbeddedError::Corrupt(format!("no {role} key")))?;
        Keypair::try_from(bytes.as_slice()).map_err(|_| EmbeddedError::Corrupt(format!("{role} key")))
    };
    Ok(Keys { mint: key("mint")?, mint_authority: key("mint_authority")?, authority: key("authority")?, operator: key("operator")?, oracle: key("oracle")? })
}
