//! Reads: accounts, blockhashes, the clock, and the ledger's transactions and signature
//! listings, answered as a node answers them.

use std::collections::HashMap;

use anchor_lang::prelude::Pubkey;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;
use solana_account::ReadableAccount;
use solana_message::MessageHeader;
use solana_message::compiled_instruction::CompiledInstruction;
use solana_message::{Message, VersionedMessage};
use solana_rpc_client_api::response::RpcConfirmedTransactionStatusWithSignature;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction_context::transaction::TransactionReturnData;
use solana_transaction_error::TransactionError;
use solana_transaction_status::{ConfirmedTransactionWithStatusMeta, TransactionWithStatusMeta, VersionedTransactionWithStatusMeta};
use solana_transaction_status_client_types::{
    EncodeError, EncodedConfirmedTransactionWithStatusMeta, InnerInstruction, InnerInstructions, TransactionConfirmationStatus, TransactionStatusMeta,
    UiTransactionEncoding,
};

use chain_client::decode::Compiled;
use chain_client::{Account, ChainError, Clock, ConfirmedTransaction, SignatureInfo};

use crate::balances::{Balances, TokenBalance};
use crate::{EmbeddedChain, db_error, parse_address};

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
        Ok(Clock { slot: *self.0.last_slot.borrow() + 1, unix_timestamp: self.now() })
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
        if let Ok(key) = address.parse::<Pubkey>()
            && let Some(listed) = self.recent().naming_after(&key, cursor_seq)
        {
            return Ok(listed);
        }
        // In pages of index rows along the primary key: the walk from the cursor's group is an
        // index range scan whatever the planner believes of the table's size (a query without
        // the limit was a sequential scan of the whole ledger on every pass). A page of n rows
        // lists at least n - 1 transactions (every row after the cursor's own group holds one
        // past the cursor), so one listing fewer than `PAGE - 1` was the last page.
        const PAGE: i64 = 5_000;
        let mut out = Vec::new();
        let mut after = cursor_seq;
        loop {
            let rows: Vec<(i64, String, i64, bool, i64)> =
                sqlx::query_as(SIGNATURES_AFTER).bind(address).bind(after).bind(PAGE).fetch_all(&self.0.db).await.map_err(db_error)?;
            let full = rows.len() as i64 >= PAGE - 1;
            after = rows.last().map_or(after, |r| r.0);
            out.extend(rows.into_iter().map(|(_, signature, slot, failed, block_time)| SignatureInfo {
                signature,
                slot: slot as u64,
                failed,
                block_time: Some(block_time),
            }));
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
        let rows: Vec<ListedRow> =
            sqlx::query_as(SIGNATURES_FOR_ADDRESS).bind(address).bind(before).bind(until).bind(limit as i64).fetch_all(&self.0.db).await.map_err(db_error)?;
        rows.into_iter()
            .map(|row| {
                let err = stored_error(&row.signature, row.err)?;
                let memo = memos(&row.account_keys, &row.instructions).ok_or_else(|| ChainError::Format(format!("ledger row of {}", row.signature)))?;
                Ok(RpcConfirmedTransactionStatusWithSignature {
                    signature: row.signature,
                    slot: row.slot as u64,
                    err: err.map(Into::into),
                    memo,
                    block_time: Some(row.block_time),
                    confirmation_status: Some(TransactionConfirmationStatus::Finalized),
                    transaction_index: Some(0),
                })
            })
            .collect()
    }

    /// A ledger row with its balances and return data (which `ledger_rows`, for the indexer,
    /// leaves out).
    async fn ledger_row(&self, signature: &str) -> Result<Option<LedgerRow>, ChainError> {
        sqlx::query_as(
            "SELECT signature, slot, block_time, err, account_keys, header, instructions, inner_instructions, recent_blockhash, wire, log_messages,
                    fee, compute_units, pre_balances, post_balances, pre_token_balances, post_token_balances, return_data
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
            "SELECT signature, slot, block_time, err, account_keys, header, instructions, inner_instructions, recent_blockhash, wire, log_messages,
                    fee, compute_units
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

/// Return data as a ledger row keeps it (`{"programId", "data"}`, the data in base64), or
/// `None` if it does not read back.
fn stored_return_data(stored: &Value) -> Option<TransactionReturnData> {
    Some(TransactionReturnData { program_id: stored["programId"].as_str()?.parse().ok()?, data: BASE64.decode(stored["data"].as_str()?).ok()? })
}

/// Balances as a ledger row keeps them (none where it has none), or `None` if they do not
/// read back.
fn stored_balances(lamports: Option<Vec<i64>>, tokens: Option<Value>) -> Option<Balances> {
    Some(Balances {
        lamports: lamports.unwrap_or_default().into_iter().map(|l| u64::try_from(l).ok()).collect::<Option<_>>()?,
        tokens: tokens.map_or(Ok(Vec::new()), serde_json::from_value).ok()?,
    })
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
            fee: row.fee,
            compute_units: row.compute_units,
            pre: stored_balances(row.pre_balances, row.pre_token_balances).ok_or_else(corrupt)?,
            post: stored_balances(row.post_balances, row.post_token_balances).ok_or_else(corrupt)?,
            return_data: row.return_data.as_ref().map(|stored| stored_return_data(stored).ok_or_else(corrupt)).transpose()?,
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
    /// `getTransaction` as a node answers it, or `None`: `json`, `jsonParsed`, or the signed
    /// transaction in `base64`/`base58`, encoded by the node's own code
    /// (`ConfirmedTransactionWithStatusMeta::encode`). `max_version` is the client's
    /// `maxSupportedTransactionVersion`: as on a node, a versioned transaction is refused
    /// (-32015) to a client that supports none (or an older one), and the answer names the
    /// version only to a client that gave one.
    pub async fn encoded_transaction(
        &self,
        signature: &str,
        encoding: UiTransactionEncoding,
        max_version: Option<u8>,
    ) -> Result<Option<EncodedConfirmedTransactionWithStatusMeta>, ChainError> {
        let Some(landed) = self.landed(signature).await? else {
            return Ok(None);
        };
        let transaction = match &landed.wire {
            Some(wire) => bincode::deserialize::<VersionedTransaction>(wire).map_err(|_| ChainError::Format(format!("ledger row of {signature}")))?,
            // Rows landed before the signed transaction was kept: its message from the row's
            // parts, with the one signature the row holds.
            None if matches!(encoding, UiTransactionEncoding::Json | UiTransactionEncoding::JsonParsed) => VersionedTransaction {
                signatures: vec![signature.parse().map_err(|_| ChainError::Format(format!("ledger row of {signature}")))?],
                message: VersionedMessage::Legacy(Message {
                    header: landed.header,
                    account_keys: landed
                        .account_keys
                        .iter()
                        .map(|key| key.parse())
                        .collect::<Result<_, _>>()
                        .map_err(|_| ChainError::Format(format!("ledger row of {signature}")))?,
                    recent_blockhash: landed.recent_blockhash.parse().map_err(|_| ChainError::Format(format!("ledger row of {signature}")))?,
                    instructions: landed.instructions,
                }),
            },
            None => return Err(ChainError::invalid_params(format!("{signature} landed before this chain kept wire bytes: ask for encoding json"))),
        };
        let meta = TransactionStatusMeta {
            status: landed.err.map_or(Ok(()), Err),
            // As charged (rows landed before fees were kept: the signatures' alone).
            fee: landed.fee.map_or(5000 * u64::from(landed.header.num_required_signatures), |fee| fee as u64),
            compute_units_consumed: landed.compute_units.map(|units| units as u64),
            pre_balances: landed.pre.lamports,
            post_balances: landed.post.lamports,
            inner_instructions: Some(landed.inner),
            log_messages: Some(landed.logs.unwrap_or_default()),
            pre_token_balances: Some(landed.pre.tokens.iter().map(TokenBalance::to_node_ledger).collect()),
            post_token_balances: Some(landed.post.tokens.iter().map(TokenBalance::to_node_ledger).collect()),
            rewards: Some(vec![]),
            return_data: landed.return_data,
            ..TransactionStatusMeta::default()
        };
        // Encoded by the node's own code: `json`, `jsonParsed` (account keys with their roles,
        // instructions parsed as a node parses them), `base64`/`base58`, and the version check.
        let confirmed = ConfirmedTransactionWithStatusMeta {
            slot: landed.slot,
            tx_with_meta: TransactionWithStatusMeta::Complete(VersionedTransactionWithStatusMeta { transaction, meta }),
            block_time: Some(landed.block_time),
            // One transaction per slot here.
            index: 0,
        };
        confirmed.encode(encoding, max_version).map(Some).map_err(|EncodeError::UnsupportedTransactionVersion(number)| ChainError::Rpc {
            code: -32015,
            message: format!(
                "Transaction version ({number}) is not supported by the requesting client. Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": {number}"
            ),
            err: None,
            preflight: None,
        })
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
        signatures.iter().map(|signature| found.remove(*signature).map(|row| Landed::of(row)?.resolve(signature)).transpose()).collect()
    }

    /// A landed transaction's slot and error (what `getSignatureStatuses` reports), or `None`.
    pub async fn status(&self, signature: &str) -> Result<Option<(u64, Option<TransactionError>)>, ChainError> {
        let row: Option<(i64, Option<Value>)> =
            sqlx::query_as("SELECT slot, err FROM embedded_ledger WHERE signature = $1").bind(signature).fetch_optional(&self.0.db).await.map_err(db_error)?;
        row.map(|(slot, err)| Ok((slot as u64, stored_error(signature, err)?))).transpose()
    }

    /// A landed transaction is final: the embedded chain has no forks and confirms only what
    /// is durable.
    pub async fn is_finalized(&self, signature: &str) -> Result<bool, ChainError> {
        Ok(self.status(signature).await?.is_some())
    }
}

/// A transaction as `getSignaturesForAddress` lists it: its ledger row's status, and the keys
/// and instructions its memo is read from.
#[derive(sqlx::FromRow)]
struct ListedRow {
    signature: String,
    slot: i64,
    err: Option<Value>,
    block_time: i64,
    account_keys: Vec<String>,
    instructions: Value,
}

/// The SPL Memo programs whose instructions a node lists as a transaction's memo: v1 and v3.
const MEMO_PROGRAMS: [&str; 2] = ["Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo", "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"];

/// A transaction's `memo` as `getSignaturesForAddress` lists it: each top-level SPL Memo
/// instruction's data as `[<length in bytes>] <text>` (`(unparseable)` where the data is not
/// UTF-8), in instruction order, joined by `"; "`; `None` when it has none. The outer `None`
/// is a ledger row whose instructions are not as the ledger writes them.
fn memos(account_keys: &[String], instructions: &Value) -> Option<Option<String>> {
    let mut memos = Vec::new();
    for instruction in instructions.as_array()? {
        let program = account_keys.get(usize::try_from(instruction["program_index"].as_u64()?).ok()?)?;
        if MEMO_PROGRAMS.contains(&program.as_str()) {
            let data = BASE64.decode(instruction["data"].as_str()?).ok()?;
            let text = std::str::from_utf8(&data).unwrap_or("(unparseable)");
            memos.push(format!("[{}] {text}", data.len()));
        }
    }
    Some((!memos.is_empty()).then(|| memos.join("; ")))
}

/// `getSignaturesForAddress`'s page: a backward range scan of `embedded_ledger_account_groups`
/// from the `before` cursor (exclusive), at most `$4` rows of it (each holds at least one
/// transaction before the cursor, see migration 53), down to the row of the `until` cursor's
/// group; their sequences unnested, the cursors' own and what lies beyond them dropped. Each
/// cursor is found by the signature's unique index; an unknown `before` lists nothing, an
/// unknown `until` bounds nothing. Of the rows it walks, a page unnests only those it needs:
/// rows until `$4` sequences are held, beyond those of the first row.
pub const SIGNATURES_FOR_ADDRESS: &str = "WITH bounds AS (
         SELECT COALESCE((SELECT seq FROM embedded_ledger WHERE signature = $2),
                         CASE WHEN $2::TEXT IS NULL THEN 9223372036854775807 ELSE 0 END) AS before,
                COALESCE((SELECT seq FROM embedded_ledger WHERE signature = $3), 0) AS until
     ), listed AS (
         SELECT s.seq FROM (
             SELECT unnest(w.seqs) AS seq, w.before, w.until FROM (
                 SELECT g.seqs, b.before, b.until,
                        sum(cardinality(g.seqs)) OVER walk - cardinality(g.seqs) AS ahead,
                        first_value(cardinality(g.seqs)) OVER walk AS first_size
                 FROM bounds b, LATERAL (
                     SELECT g.first_seq, g.seqs FROM embedded_ledger_account_groups g
                     WHERE g.address = $1 AND g.first_seq < b.before
                       AND g.first_seq >= COALESCE((SELECT u.first_seq FROM embedded_ledger_account_groups u
                                                    WHERE u.address = $1 AND u.first_seq <= b.until ORDER BY u.first_seq DESC LIMIT 1), 0)
                     ORDER BY g.first_seq DESC LIMIT $4
                 ) g
                 WINDOW walk AS (ORDER BY g.first_seq DESC ROWS UNBOUNDED PRECEDING)
             ) w
             -- Only the first row (the `before` cursor's group) can hold sequences past the
             -- cursor, and only the last (the `until` cursor's) sequences before it: a row
             -- with `$4` sequences in range ahead of it, beyond the first's, is not needed.
             WHERE w.ahead < $4 + w.first_size
         ) s
         WHERE s.seq < s.before AND s.seq > s.until
         ORDER BY s.seq DESC LIMIT $4
     )
     SELECT l.signature, l.slot, l.err, l.block_time, l.account_keys, l.instructions
     FROM listed JOIN embedded_ledger l USING (seq)
     ORDER BY l.seq DESC LIMIT $4";

/// `signatures_after`'s page: from the row of the cursor's group (the last whose first
/// sequence is at or before the cursor), at most `$3` rows forwards, their sequences after the
/// cursor (`$2`, exclusive) unnested, oldest first.
const SIGNATURES_AFTER: &str = "SELECT l.seq, l.signature, l.slot, l.err IS NOT NULL, l.block_time
     FROM (SELECT unnest(g.seqs) AS seq FROM (
               SELECT g.seqs FROM embedded_ledger_account_groups g
               WHERE g.address = $1
                 AND g.first_seq >= COALESCE((SELECT c.first_seq FROM embedded_ledger_account_groups c
                                              WHERE c.address = $1 AND c.first_seq <= $2 ORDER BY c.first_seq DESC LIMIT 1), 0)
               ORDER BY g.first_seq LIMIT $3
           ) g) s
     JOIN embedded_ledger l USING (seq)
     WHERE s.seq > $2
     ORDER BY l.seq";

/// A stored transaction error (its JSON-RPC form), typed.
pub(super) fn stored_error(signature: &str, err: Option<Value>) -> Result<Option<TransactionError>, ChainError> {
    err.map(|e| serde_json::from_value(e).map_err(|_| ChainError::Format(format!("ledger row of {signature}: transaction error")))).transpose()
}

/// A landed transaction, typed from its ledger row.
pub(super) struct Landed {
    pub(super) slot: u64,
    pub(super) block_time: i64,
    pub(super) err: Option<TransactionError>,
    pub(super) header: MessageHeader,
    pub(super) account_keys: Vec<String>,
    pub(super) recent_blockhash: String,
    pub(super) instructions: Vec<CompiledInstruction>,
    pub(super) inner: Vec<InnerInstructions>,
    /// The signed transaction's bytes and its logs (none for rows landed before they were kept).
    pub(super) wire: Option<Vec<u8>>,
    pub(super) logs: Option<Vec<String>>,
    /// Its fee (lamports) and compute units (none for rows landed before they were kept).
    pub(super) fee: Option<i64>,
    pub(super) compute_units: Option<i64>,
    /// Its accounts' balances before and after it ran (empty for rows landed before they were
    /// kept, and where the row was read without them).
    pub(super) pre: Balances,
    pub(super) post: Balances,
    /// What a program left as return data (none where it left none, for rows landed before it
    /// was kept, and where the row was read without it).
    pub(super) return_data: Option<TransactionReturnData>,
}

/// A landed transaction as stored (see the migration for the JSON shapes).
#[derive(sqlx::FromRow)]
pub(super) struct LedgerRow {
    pub(super) signature: String,
    pub(super) slot: i64,
    pub(super) block_time: i64,
    pub(super) err: Option<Value>,
    pub(super) account_keys: Vec<String>,
    pub(super) header: Vec<i16>,
    pub(super) instructions: Value,
    pub(super) inner_instructions: Value,
    pub(super) recent_blockhash: String,
    pub(super) wire: Option<Vec<u8>>,
    pub(super) log_messages: Option<Vec<String>>,
    pub(super) fee: Option<i64>,
    pub(super) compute_units: Option<i64>,
    /// Not read by every query (none, too, for rows landed before they were kept).
    #[sqlx(default)]
    pub(super) pre_balances: Option<Vec<i64>>,
    #[sqlx(default)]
    pub(super) post_balances: Option<Vec<i64>>,
    #[sqlx(default)]
    pub(super) pre_token_balances: Option<Value>,
    #[sqlx(default)]
    pub(super) post_token_balances: Option<Value>,
    #[sqlx(default)]
    pub(super) return_data: Option<Value>,
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use serde_json::json;

    use super::{BASE64, MEMO_PROGRAMS, memos};

    #[test]
    fn memos_are_listed_as_a_node_lists_them() {
        let keys: Vec<String> =
            ["Payer11111111111111111111111111111111111111", MEMO_PROGRAMS[1], MEMO_PROGRAMS[0], "Other1111111111111111111111111111111111111"]
                .map(String::from)
                .into();
        let ix = |program: u64, data: &[u8]| json!({"program_index": program, "accounts": [0], "data": BASE64.encode(data)});
        assert_eq!(memos(&keys, &json!([ix(3, b"not a memo")])), Some(None));
        assert_eq!(memos(&keys, &json!([ix(1, b"fm:1"), ix(3, b"x"), ix(2, &[0xc3])])), Some(Some("[4] fm:1; [1] (unparseable)".into())));
        assert_eq!(memos(&keys, &json!([ix(1, b"")])), Some(Some("[0] ".into())));
        // A row not as the ledger writes it.
        assert_eq!(memos(&keys, &json!([ix(9, b"x")])), None);
        assert_eq!(memos(&keys, &json!([{"program_index": 1, "data": "not base64!"}])), None);
    }
}
