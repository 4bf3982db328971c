//! The ledger's single writer: landed transactions made durable in Postgres in groups (their
//! ledger rows, the by-account index, the accounts they left), retried until written.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use solana_message::compiled_instruction::CompiledInstruction;
use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;
use sqlx::{Arguments, PgPool};
use tokio::sync::oneshot;

use chain_client::address_text;
use chain_client::{ChainError, ConfirmedTransaction, SignatureInfo};

use crate::balances::Balances;
use crate::hook::LedgerPart;
use crate::landing::{Landing, StoredAccounts};
use crate::{EmbeddedChain, EmbeddedError, LedgerHook, SINGLE_WRITER_LOCK, db_error};

/// `record`, with the group's transactions the hook wants applied in the same statement
/// (`LedgerHook::part`). The ledger's sequences, and whether they were applied.
pub(super) async fn record_and_apply(
    writer: &mut sqlx::PgConnection,
    group: &[Landing],
    hook: &dyn LedgerHook,
    ahead: &[&ConfirmedTransaction],
) -> Result<(Vec<i64>, bool), ChainError> {
    write(writer, group, |arguments| hook.part(ahead, arguments)).await
}

/// Makes landed transactions durable, in landing order, in one statement (so one atomic write
/// and one round trip however many the group holds): each one's ledger row, its rows in the
/// by-account index, and the accounts as the last of them left them. Returns the ledger
/// sequence each drew, in landing order. A statement per transaction kept the single writer busy with round
/// trips while the bank waited on it.
pub(super) async fn record(writer: &mut sqlx::PgConnection, group: &[Landing]) -> Result<Vec<i64>, ChainError> {
    Ok(write(writer, group, |_| Ok(None)).await?.0)
}

/// The group's ledger rows and accounts as the statement's parameters (`$1`..`$26` of
/// `LEDGER`), then whatever `part` adds after them, written in one statement (autocommit: its
/// commit is the statement's, no `BEGIN` and `COMMIT` round trips). The sequences, and the
/// part's `applied` (false without a part).
async fn write(
    writer: &mut sqlx::PgConnection,
    group: &[Landing],
    part: impl FnOnce(&mut PgArguments) -> Result<Option<LedgerPart>, BoxDynError>,
) -> Result<(Vec<i64>, bool), ChainError> {
    let rows = LedgerRows::of(group);
    let accounts = final_accounts(group);
    let mut arguments = PgArguments::default();
    let encoded = ledger_arguments(&mut arguments, &rows, &accounts).and_then(|()| {
        let ledger_only = arguments.len();
        let part = part(&mut arguments)?;
        debug_assert!(part.is_some() || arguments.len() == ledger_only, "a hook that adds no part adds no arguments");
        Ok(part)
    });
    let part = encoded.map_err(|e| ChainError::Transport(format!("embedded chain storage: {e}")))?;
    let sql = match &part {
        Some(LedgerPart { ctes, applied }) => format!("WITH {LEDGER}, {ctes} SELECT {SEQUENCES}, {applied}"),
        None => format!("WITH {LEDGER} SELECT {SEQUENCES}, false"),
    };
    // Prepared and planned once per connection (parsing it took as long as running it for a
    // few transactions, planning it a third as long): see the writer connection's
    // `plan_cache_mode`.
    let (seqs, applied): (Vec<i64>, bool) = sqlx::query_as_with(&sql, arguments).fetch_one(&mut *writer).await.map_err(db_error)?;
    if seqs.len() != group.len() {
        return Err(ChainError::Transport(format!("embedded chain storage: {} ledger rows written for {} transactions", seqs.len(), group.len())));
    }
    Ok((seqs, applied))
}

/// The ledger write's common table expressions: the ledger rows (`$1`..`$19`, `LedgerRows`), the
/// accounts written (`$20`..`$25`) and closed (`$26`).
const LEDGER: &str = "landed AS (
    SELECT * FROM unnest($1::TEXT[], $2::BIGINT[], $3::BIGINT[], $4::JSONB[], $5::TEXT[], $6::TEXT[], $7::TEXT[], $8::JSONB[],
                         $9::JSONB[], $10::TEXT[], $11::BYTEA[], $12::JSONB[], $13::BIGINT[], $14::BIGINT[], $15::TEXT[], $16::TEXT[],
                         $17::JSONB[], $18::JSONB[], $19::JSONB[]) WITH ORDINALITY
        AS i(signature, slot, block_time, err, account_keys, signers, header, instructions, inner_instructions, recent_blockhash,
             wire, log_messages, fee, compute_units, pre_balances, post_balances, pre_token_balances, post_token_balances, return_data, n)
), ledger AS (
    -- Sorted by landing order before the sequence is drawn: volatile defaults are
    -- evaluated after the sort, so `seq` follows the order the bank ran them in.
    INSERT INTO embedded_ledger (signature, slot, block_time, err, account_keys, signers, header, instructions, inner_instructions,
                                 recent_blockhash, wire, log_messages, fee, compute_units, pre_balances, post_balances,
                                 pre_token_balances, post_token_balances, return_data)
    SELECT signature, slot, block_time, err, string_to_array(account_keys, ','), string_to_array(signers, ','),
           string_to_array(header, ',')::SMALLINT[], instructions, inner_instructions, recent_blockhash, wire,
           ARRAY(SELECT line FROM jsonb_array_elements_text(log_messages) WITH ORDINALITY AS l(line, k) ORDER BY k), fee, compute_units,
           string_to_array(pre_balances, ',')::BIGINT[], string_to_array(post_balances, ',')::BIGINT[], pre_token_balances,
           post_token_balances, return_data
    FROM landed ORDER BY n
    RETURNING seq, account_keys
), upserted AS (
    INSERT INTO embedded_accounts (address, lamports, owner, data, executable, rent_epoch)
    SELECT * FROM unnest($20::TEXT[], $21::BIGINT[], $22::TEXT[], $23::BYTEA[], $24::BOOLEAN[], $25::BIGINT[])
    ON CONFLICT (address) DO UPDATE SET lamports = EXCLUDED.lamports, owner = EXCLUDED.owner, data = EXCLUDED.data,
        executable = EXCLUDED.executable, rent_epoch = EXCLUDED.rent_epoch
), closed AS (
    DELETE FROM embedded_accounts WHERE address = ANY($26)
), by_account AS (
    -- One row per key of the group, with the sequences of the group's transactions naming it
    -- (migration 53).
    INSERT INTO embedded_ledger_account_groups (address, first_seq, seqs)
    SELECT key, min(l.seq), array_agg(DISTINCT l.seq ORDER BY l.seq) FROM ledger l, unnest(l.account_keys) AS key GROUP BY key
)";

/// The sequences the ledger rows drew, in landing order.
const SEQUENCES: &str = "(SELECT array_agg(seq ORDER BY seq) FROM ledger)";

/// `LEDGER`'s parameters.
fn ledger_arguments(arguments: &mut PgArguments, rows: &LedgerRows, accounts: &StoredAccounts) -> Result<(), BoxDynError> {
    arguments.add(&rows.signature)?;
    arguments.add(&rows.slot)?;
    arguments.add(&rows.block_time)?;
    arguments.add(&rows.err)?;
    arguments.add(&rows.account_keys)?;
    arguments.add(&rows.signers)?;
    arguments.add(&rows.header)?;
    arguments.add(&rows.instructions)?;
    arguments.add(&rows.inner_instructions)?;
    arguments.add(&rows.recent_blockhash)?;
    arguments.add(&rows.wire)?;
    arguments.add(&rows.log_messages)?;
    arguments.add(&rows.fee)?;
    arguments.add(&rows.compute_units)?;
    arguments.add(&rows.pre_balances)?;
    arguments.add(&rows.post_balances)?;
    arguments.add(&rows.pre_token_balances)?;
    arguments.add(&rows.post_token_balances)?;
    arguments.add(&rows.return_data)?;
    arguments.add(&accounts.addresses)?;
    arguments.add(&accounts.lamports)?;
    arguments.add(&accounts.owners)?;
    arguments.add(&accounts.data)?;
    arguments.add(&accounts.executable)?;
    arguments.add(&accounts.rent_epochs)?;
    arguments.add(&accounts.closed)
}

/// The ledger rows of a group, a column each, in landing order. Keys, signers, the header and
/// the lamport balances go as comma-joined text (base58 and digits hold no comma), log lines
/// as a JSON array (they may hold anything): a statement's array arguments cannot nest arrays
/// of different lengths.
#[derive(Default)]
pub(super) struct LedgerRows {
    pub(super) signature: Vec<String>,
    pub(super) slot: Vec<i64>,
    pub(super) block_time: Vec<i64>,
    pub(super) err: Vec<Option<Value>>,
    pub(super) account_keys: Vec<String>,
    pub(super) signers: Vec<String>,
    pub(super) header: Vec<String>,
    pub(super) instructions: Vec<Value>,
    pub(super) inner_instructions: Vec<Value>,
    pub(super) recent_blockhash: Vec<String>,
    pub(super) wire: Vec<Vec<u8>>,
    pub(super) log_messages: Vec<Value>,
    pub(super) fee: Vec<i64>,
    pub(super) compute_units: Vec<i64>,
    pub(super) pre_balances: Vec<String>,
    pub(super) post_balances: Vec<String>,
    pub(super) pre_token_balances: Vec<Value>,
    pub(super) post_token_balances: Vec<Value>,
    pub(super) return_data: Vec<Option<Value>>,
}

impl LedgerRows {
    pub(super) fn of(group: &[Landing]) -> LedgerRows {
        let mut rows = LedgerRows::default();
        for Landing { tx, signature, slot, block_time, err, inner, logs, fee, compute_units, pre, post, return_data, .. } in group {
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
            rows.fee.push(*fee as i64);
            rows.compute_units.push(*compute_units as i64);
            let lamports = |balances: &Balances| balances.lamports.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
            rows.pre_balances.push(lamports(pre));
            rows.post_balances.push(lamports(post));
            rows.pre_token_balances.push(json!(pre.tokens));
            rows.post_token_balances.push(json!(post.tokens));
            rows.return_data.push(return_data.as_ref().map(|r| json!({"programId": address_text::of(&r.program_id), "data": BASE64.encode(&r.data)})));
        }
        rows
    }
}

/// The accounts a group wrote, each as the last transaction to write it left it (stored, or
/// closed): one row per address, as one statement can write a row only once.
pub(super) fn final_accounts(group: &[Landing]) -> StoredAccounts {
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

/// A connection holding `SINGLE_WRITER_LOCK`. A previous holder that just went away (a restart
/// in the same process) can take a moment to release it, hence the short wait.
pub(super) async fn single_writer(db: &PgPool) -> Result<sqlx::PgConnection, EmbeddedError> {
    // The ledger write is planned once on this connection, not for each group: planning is a
    // large share of the statement's time in Postgres, inside the writer's turn (a plan made while the account
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

impl EmbeddedChain {
    /// Writes every landed transaction waiting, a group at a time, and answers their callers
    /// (nothing if another task is writing: see `GroupQueue::turn_after_woken`).
    pub(super) async fn write_unwritten(&self) {
        let mut turn = self.0.unwritten.turn_after_woken().await;
        while let Some((writer, group)) = turn.next_group() {
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
    pub(super) async fn persist(&self, writer: &mut sqlx::PgConnection, group: &[Landing]) {
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
                        // fails that write too, which then retries as any failed write does; if
                        // the statement had committed before the connection broke, the retry
                        // finds the ledger written, `ledger_seq`, and the senders find their
                        // events recorded.)
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
                        let info = SignatureInfo {
                            signature: landing.signature.clone(),
                            slot: landing.slot,
                            failed: landing.err.is_some(),
                            block_time: Some(landing.block_time),
                        };
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

    pub(super) async fn ledger_seq(&self, writer: &mut sqlx::PgConnection, signature: &str) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT seq FROM embedded_ledger WHERE signature = $1").bind(signature).fetch_optional(writer).await
    }

    /// False while landed transactions are being retried into Postgres after a failure (no
    /// send is confirmed meanwhile).
    pub fn is_persisting(&self) -> bool {
        !self.0.persist_failing.load(Ordering::Relaxed)
    }
}
