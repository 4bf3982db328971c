//! Landing a transaction: verified, executed in the bank one at a time (with the preflight a
//! node's `sendTransaction` runs), then handed to the ledger's writer; its sender is answered once
//! it is durable.

use solana_account::ReadableAccount;
use solana_message::VersionedMessage;
use solana_rpc_client_api::response::RpcSimulateTransactionResult;
use solana_svm::transaction_processing_result::{ProcessedTransaction, TransactionProcessingResult};
use solana_svm::transaction_processor::ExecutionRecordingConfig;
use solana_transaction::TransactionVerificationMode;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction_context::transaction::TransactionReturnData;
use solana_transaction_error::TransactionError;
use solana_transaction_status_client_types::{InnerInstruction, InnerInstructions, UiTransactionReturnData};
use tokio::sync::oneshot;

use anchor_lang::solana_program::clock::MAX_PROCESSING_AGE;

use chain_client::address_text;
use chain_client::decode::Compiled;
use chain_client::{ChainError, ConfirmedTransaction};

use crate::balances::Balances;
use crate::json_rpc;
use crate::{EmbeddedChain, is_runtime_account};

/// A refused `sendTransaction` (-32002) for a transaction that failed before it ran (a stale
/// blockhash, a duplicate, a fee payer short of SOL): no logs, no compute units.
pub(super) fn preflight_failure(err: &TransactionError) -> ChainError {
    preflight_refusal(err, Vec::new(), 0, None, None, None)
}

/// A refused `sendTransaction` (-32002) with what a node reports of the failed simulation: the
/// program's logs (what Anchor's clients read a program error from), the compute units and
/// loaded account bytes it used, its return data and its fee.
fn preflight_refusal(
    err: &TransactionError,
    logs: Vec<String>,
    units_consumed: u64,
    loaded_accounts_data_size: Option<u32>,
    return_data: Option<UiTransactionReturnData>,
    fee: Option<u64>,
) -> ChainError {
    let simulation = RpcSimulateTransactionResult {
        err: Some(err.clone().into()),
        logs: Some(logs),
        accounts: None,
        units_consumed: Some(units_consumed),
        loaded_accounts_data_size,
        return_data,
        inner_instructions: None,
        replacement_blockhash: None,
        fee,
        pre_balances: None,
        post_balances: None,
        pre_token_balances: None,
        post_token_balances: None,
        loaded_addresses: None,
    };
    ChainError::Rpc { code: -32002, message: format!("Transaction simulation failed: {err}"), err: Some(err.clone()), preflight: Some(Box::new(simulation)) }
}

/// The refusal of a transaction the bank ran (or charged) and preflight turned away.
fn refused_after_running(processed: &ProcessedTransaction, err: &TransactionError, logs: impl FnOnce(Vec<String>) -> Vec<String>) -> ChainError {
    match processed {
        ProcessedTransaction::Executed(executed) => {
            let details = &executed.execution_details;
            preflight_refusal(
                err,
                logs(details.log_messages.clone().unwrap_or_default()),
                details.executed_units,
                Some(executed.loaded_transaction.loaded_accounts_data_size),
                details.return_data.clone().map(UiTransactionReturnData::from),
                Some(executed.loaded_transaction.fee_details.total_fee()),
            )
        }
        ProcessedTransaction::FeesOnly(fees_only) => preflight_refusal(err, Vec::new(), 0, None, None, Some(fees_only.fee_details.total_fee())),
    }
}

/// A transaction's inner instructions as the bank recorded them (one list per outer
/// instruction) in the groups a node reports: by outer index, empty ones left out — as the
/// ledger row gives them back.
pub(super) fn inner_groups(inner: Vec<Vec<solana_message::inner_instruction::InnerInstruction>>) -> Vec<InnerInstructions> {
    inner
        .into_iter()
        .enumerate()
        .filter(|(_, group)| !group.is_empty())
        .map(|(index, group)| InnerInstructions {
            index: index as u8,
            instructions: group
                .into_iter()
                .map(|ix| InnerInstruction { instruction: ix.instruction, stack_height: Some(u32::from(ix.stack_height)) })
                .collect(),
        })
        .collect()
}

/// The accounts a transaction wrote, as columns for one `unnest` upsert.
#[derive(Default)]
pub(super) struct StoredAccounts {
    pub(super) addresses: Vec<String>,
    pub(super) lamports: Vec<i64>,
    pub(super) owners: Vec<String>,
    pub(super) data: Vec<Vec<u8>>,
    pub(super) executable: Vec<bool>,
    pub(super) rent_epochs: Vec<i64>,
    pub(super) closed: Vec<String>,
}

/// The writable accounts of `tx` as the bank holds them now (closed ones by address); sysvars
/// and programs are never persisted.
pub(super) fn written_accounts(bank: &solana_runtime::bank::Bank, tx: &VersionedTransaction) -> StoredAccounts {
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

/// A transaction the bank has applied, to be persisted.
pub(super) struct Landing {
    pub(super) tx: VersionedTransaction,
    pub(super) signature: String,
    pub(super) slot: u64,
    pub(super) block_time: i64,
    pub(super) err: Option<TransactionError>,
    pub(super) inner: Vec<Vec<solana_message::inner_instruction::InnerInstruction>>,
    pub(super) logs: Vec<String>,
    /// Its fee, lamports (the signatures' and any priority fee), and the compute units it used.
    pub(super) fee: u64,
    pub(super) compute_units: u64,
    /// Its accounts' balances before and after it ran.
    pub(super) pre: Balances,
    pub(super) post: Balances,
    /// What the last program to set return data left there, if any data.
    pub(super) return_data: Option<TransactionReturnData>,
    /// The accounts it wrote, as it left them.
    pub(super) accounts: StoredAccounts,
    /// The transaction as the indexer would read it, if it did not fail and the hook of
    /// `apply_in_ledger` wants it: applied in its ledger write (`persist`).
    pub(super) ahead: Option<ConfirmedTransaction>,
}

/// A transaction this chain confirmed, as the bank ran it (for its sender's answer).
pub(super) struct Sent {
    pub(super) signature: String,
    pub(super) ran: Ran,
}

/// How a confirmed transaction ran: resolved already (`Landing::ahead`), or what resolving it
/// takes, for a caller that asks.
pub(super) enum Ran {
    Resolved(ConfirmedTransaction),
    Parts { message: VersionedMessage, inner: Vec<Vec<solana_message::inner_instruction::InnerInstruction>>, slot: u64, block_time: i64 },
}

impl Sent {
    /// Resolved as a ledger read resolves it (`Landed::resolve`): what `transaction` would give.
    pub(super) fn resolve(self) -> Result<ConfirmedTransaction, ChainError> {
        match self.ran {
            Ran::Resolved(tx) => Ok(tx),
            Ran::Parts { message, inner, slot, block_time } => resolve_ran(&self.signature, &message, &inner, slot, block_time),
        }
    }
}

/// A transaction that ran in the bank (and did not fail), resolved as a ledger read resolves it
/// (`Landed::resolve`).
pub(super) fn resolve_ran(
    signature: &str,
    message: &VersionedMessage,
    inner: &[Vec<solana_message::inner_instruction::InnerInstruction>],
    slot: u64,
    block_time: i64,
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

impl EmbeddedChain {
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

    pub(super) async fn send(&self, wire: &[u8], preflight: bool) -> Result<Sent, ChainError> {
        if wire.len() > json_rpc::PACKET_DATA_SIZE {
            return Err(ChainError::invalid_params(format!(
                "decoded solana_transaction::versioned::VersionedTransaction too large: {} bytes (max: {} bytes)",
                wire.len(),
                json_rpc::PACKET_DATA_SIZE
            )));
        }
        let tx: VersionedTransaction = bincode::deserialize(wire).map_err(|e| ChainError::invalid_params(format!("failed to deserialize transaction: {e}")))?;
        tx.sanitize().map_err(|e| ChainError::invalid_params(format!("invalid transaction: {e}")))?;
        if !tx.verify_with_results().iter().all(|ok| *ok) {
            return Err(ChainError::Rpc { code: -32003, message: "Transaction signature verification failure".into(), err: None, preflight: None });
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
    pub(super) async fn land(&self, tx: VersionedTransaction, preflight: bool) -> Result<Sent, ChainError> {
        let _in_flight = self.0.in_flight.acquire().await.expect("the chain's semaphore is never closed");
        let signature = tx.signatures[0].to_string();
        let (err, durable, landed) = {
            let _turn = self.0.bank_turn("transaction").await;
            let bank = self.0.runtime.bank();
            let mut clock: anchor_lang::prelude::Clock = bank.clock();
            clock.unix_timestamp = self.now();
            clock.slot = *self.0.last_slot.borrow() + 1;
            bank.set_sysvar_for_tests(&clock);

            // Signatures were verified by `send`, outside the turn: here only the message hash
            // and the precompiles, so the one-at-a-time section does not verify them again.
            let sanitized = bank
                .verify_transaction(tx.clone(), TransactionVerificationMode::HashAndVerifyPrecompiles)
                .map_err(|e| ChainError::invalid_params(format!("invalid transaction: {e}")))?;
            let batch = bank.prepare_sanitized_batch(std::slice::from_ref(&sanitized));
            // Everything a validator's replay records, for `getTransaction` (and for a refusal,
            // as a node's preflight simulation reports it): inner instructions, logs, return
            // data, balances.
            let recording = ExecutionRecordingConfig::new_single_setting(true);
            // Preflight, as `sendTransaction` does: what would fail is refused and never lands.
            // The transaction is executed once and, if it failed, not committed — what simulating
            // it first would refuse, since nothing else runs in the bank during this turn (a
            // simulation before every execution was a third of the turn's time).
            // A refusal keeps what the run reported, as a node's failed simulation does.
            let mut refused = None;
            let refuse_failure = |_: &mut _, processed: &[TransactionProcessingResult]| match processed.first() {
                Some(Ok(tx)) if preflight => tx.status().map(|()| None).inspect_err(|err| {
                    refused = Some(refused_after_running(tx, err, |raw| self.0.runtime.logs(raw)));
                }),
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
            let (mut results, recorded) = match executed {
                Ok(executed) => executed,
                Err(err) => return Err(refused.unwrap_or_else(|| preflight_failure(&err))),
            };
            let committed = match results.pop() {
                Some(Ok(committed)) => committed,
                // Refused before execution (stale blockhash, duplicate, fee payer short of SOL):
                // nothing landed.
                Some(Err(err)) => return Err(preflight_failure(&err)),
                None => return Err(ChainError::Transport("the bank returned no result".into())),
            };
            let err = committed.status.err();
            let (pre, post) = Balances::recorded(recorded);
            self.0.last_slot.send_replace(clock.slot);
            // The accounts as this transaction left them (a later one may change them before
            // the write).
            let accounts = written_accounts(&bank, &tx);
            let inner = committed.inner_instructions.unwrap_or_default();
            // Resolved here, once, for the ledger write that applies it (`persist`) and for its
            // sender's answer: not in the writer's turn, which every trade waits on.
            let ahead = match self.0.hook.get() {
                Some(hook) if err.is_none() && hook.wants(&signature) => resolve_ran(&signature, &tx.message, &inner, clock.slot, clock.unix_timestamp).ok(),
                _ => None,
            };
            let landing = Landing {
                signature: signature.clone(),
                slot: clock.slot,
                block_time: clock.unix_timestamp,
                err: err.clone(),
                inner,
                logs: self.0.runtime.logs(committed.log_messages.unwrap_or_default()),
                fee: committed.fee_details.total_fee(),
                compute_units: committed.executed_units,
                pre,
                post,
                return_data: committed.return_data,
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
}
