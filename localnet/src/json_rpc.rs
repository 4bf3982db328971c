//! The embedded chain answering Solana JSON-RPC, so a wallet, web3.js, `@solana/kit`, the Anchor
//! client or `RpcChain` can use it like a cluster: `sendTransaction`, `simulateTransaction`,
//! `getSignatureStatuses`, `getTransaction`, `getSignaturesForAddress`, `getLatestBlockhash`,
//! `isBlockhashValid`, `getAccountInfo`, `getMultipleAccounts`, `getProgramAccounts`,
//! `getBalance`, `getTokenAccountBalance`, `getTokenAccountsByOwner`, `getSlot`,
//! `getBlockHeight`, `getEpochInfo`, `getVersion`, `getGenesisHash`, `getHealth`,
//! `getMinimumBalanceForRentExemption`, `getFeeForMessage`, `getRecentPrioritizationFees`,
//! `requestAirdrop`; one request or a batch (an array, at most [`MAX_BATCH`]). Parameters are read into, and answers
//! built from, the same typed structs `solana-rpc-client` sends and expects
//! (`solana-rpc-client-api`, `solana-transaction-status-client-types`), so the two sides
//! cannot drift apart. The service mounts this at `/rpc` for local use.
//!
//! Limits are a mainnet node's, so what works here works there and a caller cannot make one
//! request cost more than a node would let it: at most [`MAX_MULTIPLE_ACCOUNTS`] keys per
//! `getMultipleAccounts`, [`MAX_SIGNATURE_STATUSES`] signatures per `getSignatureStatuses`,
//! [`MAX_SIGNATURES_FOR_ADDRESS`] signatures per `getSignaturesForAddress` page, and transactions of at most
//! [`PACKET_DATA_SIZE`] bytes (refused by their encoded length before anything is decoded).
//!
//! One HTTP request's answer, a whole batch's, holds at most [`MAX_RESPONSE_BYTES`]: account data
//! is weighed by its encoded length before it is encoded, and a request whose answer would carry
//! the total past the budget is answered with the `-32012` scan error instead (the code a node
//! answers when a scan's results pass its byte limit). An account asked for several times in one
//! `getMultipleAccounts` is read and encoded once; `dataSlice` and the encoding asked for are
//! honoured; base58 is refused for more than [`MAX_BASE58_BYTES`] of data, as a node refuses it
//! (its encoding takes time quadratic in the length).

use std::collections::HashMap;
use std::fmt::Debug;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anchor_lang::prelude::Pubkey;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use solana_account::{AccountSharedData, ReadableAccount};
use solana_account_decoder::encode_ui_account;
use solana_account_decoder::parse_account_data::{AccountAdditionalDataV3, SplTokenAdditionalDataV2};
use solana_account_decoder::parse_token::token_amount_to_ui_amount_v3;
use solana_account_decoder_client_types::{UiAccount, UiAccountEncoding};
use solana_commitment_config::CommitmentConfig;
use solana_epoch_info::EpochInfo;
use solana_message::VersionedMessage;
use solana_rpc_client_api::config::{
    RpcAccountInfoConfig, RpcEncodingConfigWrapper, RpcProgramAccountsConfig, RpcSendTransactionConfig, RpcSignatureStatusConfig,
    RpcSignaturesForAddressConfig, RpcSimulateTransactionConfig, RpcTokenAccountsFilter, RpcTransactionConfig,
};
use solana_rpc_client_api::filter::{Memcmp, RpcFilterType};
use solana_rpc_client_api::response::{Response, RpcBlockhash, RpcPrioritizationFee, RpcResponseContext, RpcSimulateTransactionResult, RpcVersionInfo};
use solana_signature::Signature;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction_status_client_types::{TransactionConfirmationStatus, TransactionStatus, UiTransactionEncoding};

use crate::EmbeddedChain;
use crate::node::MAX_AIRDROP_LAMPORTS;
use crate::node::passes as filter_passes;
use crate::node::{is_token_program, mint_decimals_of, token_account_of};
use chain_client::ChainError;

/// Requests per batch: what a client library sends at once stays far below it, and one HTTP
/// request cannot queue unbounded work.
pub const MAX_BATCH: usize = 100;

/// Accounts one `getProgramAccounts` / `getTokenAccountsByOwner` answers: this chain holds a
/// test's or a local run's accounts, and an answer must stay one HTTP response.
pub const MAX_SCANNED_ACCOUNTS: usize = 10_000;

/// Bytes of JSON one HTTP request is answered with, across a whole batch. The largest account
/// (`MAX_PERMITTED_DATA_LENGTH`, 10 MiB: about 14 MB in base64) still fits in one answer, and a
/// 64 KiB request body cannot make the process build more than this: 13 batched
/// `getMultipleAccounts` of 100 copies of Token-2022's ProgramData would otherwise be ~880 MB.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// What an encoded account adds to an answer besides its data (its other fields, its key), an
/// upper bound used to weigh an answer before it is built.
const ENCODED_ACCOUNT_OVERHEAD: usize = 256;

/// The JSON-RPC code for an answer over [`MAX_RESPONSE_BYTES`]: Agave's `JSON_RPC_SCAN_ERROR`,
/// which a node answers when a scan's accumulated results pass its byte limit.
pub const RESPONSE_TOO_LARGE: i64 = -32012;

/// The most account data a node encodes in base58 (Agave's `MAX_BASE58_BYTES`).
const MAX_BASE58_BYTES: usize = 128;

/// Keys per `getMultipleAccounts` (Agave's `MAX_MULTIPLE_ACCOUNTS`).
pub const MAX_MULTIPLE_ACCOUNTS: usize = 100;

/// Signatures per `getSignatureStatuses` (Agave's `MAX_GET_SIGNATURE_STATUSES_QUERY_ITEMS`).
pub const MAX_SIGNATURE_STATUSES: usize = 256;

/// Filters per `getProgramAccounts` or `programSubscribe` (Agave's
/// `MAX_GET_PROGRAM_ACCOUNT_FILTERS`).
pub const MAX_PROGRAM_ACCOUNT_FILTERS: usize = 4;

/// Signatures per `getSignaturesForAddress` page (Agave's
/// `MAX_GET_CONFIRMED_SIGNATURES_FOR_ADDRESS2_LIMIT`).
pub const MAX_SIGNATURES_FOR_ADDRESS: usize = 1_000;

/// The largest account (`MAX_PERMITTED_DATA_LENGTH`, 10 MiB).
const MAX_PERMITTED_DATA_LENGTH: usize = 10 * 1024 * 1024;

/// Accounts a transaction may lock, so at most this many in a prioritization-fee query.
const MAX_TX_ACCOUNT_LOCKS: usize = 128;

/// The largest transaction, bytes: one network packet (1,280-byte IPv6 MTU less headers).
pub const PACKET_DATA_SIZE: usize = 1232;

/// The longest encodings of a `PACKET_DATA_SIZE` transaction (Agave's `MAX_BASE58_SIZE` and
/// `MAX_BASE64_SIZE`).
const MAX_BASE58_SIZE: usize = 1683;
const MAX_BASE64_SIZE: usize = 1644;

fn too_large() -> RpcFailure {
    let message =
        format!("scan aborted: the answer to this request (the whole batch) would exceed {MAX_RESPONSE_BYTES} bytes; ask for fewer accounts or a dataSlice");
    RpcFailure { code: RESPONSE_TOO_LARGE, message, data: None }
}

/// What one HTTP request's answer has used of [`MAX_RESPONSE_BYTES`].
#[derive(Default)]
struct ResponseBudget {
    spent: usize,
}

impl ResponseBudget {
    /// Counts `bytes` more, or refuses them when they would pass the budget.
    fn charge(&mut self, bytes: usize) -> Result<(), RpcFailure> {
        match self.spent.checked_add(bytes) {
            Some(total) if total <= MAX_RESPONSE_BYTES => {
                self.spent = total;
                Ok(())
            }
            _ => Err(too_large()),
        }
    }

    fn remaining(&self) -> usize {
        MAX_RESPONSE_BYTES.saturating_sub(self.spent)
    }
}

/// The length of a value's JSON, counted without keeping it.
fn json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The bytes of `account`'s data an answer carries under `config`'s `dataSlice`.
fn sliced_len(account: &AccountSharedData, config: &RpcAccountInfoConfig) -> usize {
    let len = account.data().len();
    config.data_slice.map_or(len, |slice| slice.length.min(len.saturating_sub(slice.offset)))
}

/// An upper bound of `account`'s encoded length in an answer, known before encoding it: its
/// data in base64 (no longer than base58 of at most [`MAX_BASE58_BYTES`], than a parsed SPL
/// account, or, within the overhead, than zstd-compressed data) and the other fields.
fn encoded_len_bound(account: &AccountSharedData, config: &RpcAccountInfoConfig) -> usize {
    let len = sliced_len(account, config);
    4 * len.div_ceil(3) + len / 64 + ENCODED_ACCOUNT_OVERHEAD
}

/// A program scan's filters, checked as a node checks them: at most
/// [`MAX_PROGRAM_ACCOUNT_FILTERS`], each well-formed.
pub(crate) fn verify_filters(filters: &[RpcFilterType]) -> Result<(), (i64, String)> {
    if filters.len() > MAX_PROGRAM_ACCOUNT_FILTERS {
        return Err((-32602, format!("Too many filters provided; max {MAX_PROGRAM_ACCOUNT_FILTERS}")));
    }
    filters.iter().try_for_each(|filter| filter.verify().map_err(|e| (-32602, format!("Invalid param: {e:?}"))))
}

impl From<(i64, String)> for RpcFailure {
    fn from((code, message): (i64, String)) -> Self {
        RpcFailure { code, message, data: None }
    }
}

fn too_many(max: usize) -> RpcFailure {
    invalid_params(format!("Invalid params: Too many inputs provided; max {max}"))
}

/// A JSON-RPC error object: code, message, and (for a preflight failure) the simulation.
struct RpcFailure {
    code: i64,
    message: String,
    /// Boxed: a simulation result is large, and failures are rare.
    data: Option<Box<RpcSimulateTransactionResult>>,
}

type Answer = Result<Value, RpcFailure>;

fn invalid_params(message: impl Into<String>) -> RpcFailure {
    RpcFailure { code: -32602, message: message.into(), data: None }
}

/// The ledger's reads answer from confirmed transactions only: a node refuses `processed` for
/// them (an absent commitment means `finalized`), and so does this chain, though everything it
/// lands is final, so a client written against it keeps working against a node.
fn at_least_confirmed(commitment: Option<CommitmentConfig>) -> Result<(), RpcFailure> {
    if commitment.unwrap_or_default().is_at_least_confirmed() { Ok(()) } else { Err(invalid_params("Method does not support commitment below `confirmed`")) }
}

impl From<ChainError> for RpcFailure {
    fn from(e: ChainError) -> Self {
        match e {
            ChainError::Rpc { code, message, err, preflight } => {
                RpcFailure { code, message, data: preflight.or_else(|| err.map(|err| Box::new(simulation_failure(err)))) }
            }
            other => RpcFailure { code: -32603, message: other.to_string(), data: None },
        }
    }
}

/// What a node attaches to a refused `sendTransaction`: the failed simulation.
fn simulation_failure(err: solana_transaction_error::TransactionError) -> RpcSimulateTransactionResult {
    RpcSimulateTransactionResult {
        err: Some(err.into()),
        logs: Some(vec![]),
        accounts: None,
        units_consumed: None,
        loaded_accounts_data_size: None,
        return_data: None,
        inner_instructions: None,
        replacement_blockhash: None,
        fee: None,
        pre_balances: None,
        post_balances: None,
        pre_token_balances: None,
        post_token_balances: None,
        loaded_addresses: None,
    }
}

fn to_json(value: impl Serialize) -> Answer {
    serde_json::to_value(value).map_err(|e| RpcFailure { code: -32603, message: e.to_string(), data: None })
}

/// Positional parameter `i`, typed; absent reads as JSON null (so optional configs default).
fn param<T: DeserializeOwned>(params: &Value, i: usize) -> Result<T, RpcFailure> {
    serde_json::from_value(params.get(i).cloned().unwrap_or(Value::Null)).map_err(|e| invalid_params(format!("Invalid params: parameter {i}: {e}")))
}

/// A transaction's wire bytes from its encoded form, refused by length before decoding.
fn decode_wire(transaction: &str, encoding: UiTransactionEncoding) -> Result<Vec<u8>, RpcFailure> {
    let max_encoded = if encoding == UiTransactionEncoding::Base64 { MAX_BASE64_SIZE } else { MAX_BASE58_SIZE };
    if transaction.len() > max_encoded {
        return Err(invalid_params(format!(
            "{encoding} encoded solana_transaction::versioned::VersionedTransaction too large: {} bytes (max: encoded/raw {max_encoded}/{PACKET_DATA_SIZE})",
            transaction.len()
        )));
    }
    match encoding {
        UiTransactionEncoding::Base64 => BASE64.decode(transaction).map_err(|e| invalid_params(format!("invalid base64 encoding: {e:?}"))),
        UiTransactionEncoding::Base58 => bs58::decode(transaction).into_vec().map_err(|e| invalid_params(format!("invalid base58 encoding: {e:?}"))),
        other => Err(invalid_params(format!("unsupported encoding: {other}. Supported encodings: base58, base64"))),
    }
}

/// A key or signature parameter, checked as a node checks one (Agave's `verify_pubkey` and
/// `verify_signature`): refused with the parse error's name.
fn verified<T: FromStr<Err: Debug>>(value: &str) -> Result<T, RpcFailure> {
    value.parse().map_err(|e| invalid_params(format!("Invalid param: {e:?}")))
}

fn address(value: &str) -> Result<Pubkey, RpcFailure> {
    verified(value)
}

/// The runtime's feature set id, as `getVersion`'s `feature-set` carries it.
pub fn feature_set_id() -> u32 {
    u32::from_le_bytes(agave_feature_set::ID.as_ref()[..4].try_into().expect("a hash has 32 bytes"))
}

/// The encoding of an account asked for with none: base58 as a plain string (`binary`), as a
/// node answers `getAccountInfo`, `getProgramAccounts`, `getTokenAccountsByOwner` and the
/// account and program subscriptions (`getMultipleAccounts` alone defaults to base64).
const DEFAULT_ACCOUNT_ENCODING: UiAccountEncoding = UiAccountEncoding::Binary;

/// An account in the encoding asked for ([`DEFAULT_ACCOUNT_ENCODING`] if none; `jsonParsed`
/// decodes SPL token accounts and mints, with the mint's decimals, anything else falls back to
/// base64; base58 of more than [`MAX_BASE58_BYTES`] is the text a node puts in its place).
pub fn encoded_account(chain: &EmbeddedChain, address: &Pubkey, account: &AccountSharedData, config: &RpcAccountInfoConfig) -> UiAccount {
    let encoding = config.encoding.unwrap_or(DEFAULT_ACCOUNT_ENCODING);
    let additional = (encoding == UiAccountEncoding::JsonParsed)
        .then(|| token_account_of(account))
        .flatten()
        .and_then(|token| chain.mint_decimals(&token.mint))
        .map(|decimals| AccountAdditionalDataV3 { spl_token_additional_data: Some(SplTokenAdditionalDataV2::with_decimals(decimals)) });
    encode_ui_account(address, account, encoding, additional, config.data_slice)
}

/// [`encoded_account`] as an answer's JSON, refused when base58 is asked for (or meant by
/// default) for more than [`MAX_BASE58_BYTES`] of data (a node's code and message).
fn encoded_json(chain: &EmbeddedChain, address: &Pubkey, account: &AccountSharedData, config: &RpcAccountInfoConfig) -> Answer {
    let encoding = config.encoding.unwrap_or(DEFAULT_ACCOUNT_ENCODING);
    if matches!(encoding, UiAccountEncoding::Binary | UiAccountEncoding::Base58) && sliced_len(account, config) > MAX_BASE58_BYTES {
        return Err(RpcFailure {
            code: -32600,
            message: format!("Encoded binary (base 58) data should be less than {MAX_BASE58_BYTES} bytes, please use Base64 encoding."),
            data: None,
        });
    }
    to_json(encoded_account(chain, address, account, config))
}

impl EmbeddedChain {
    /// Answers one JSON-RPC request, or a batch (an array of them: an array of answers, in
    /// order, as a node answers).
    pub async fn json_rpc(&self, request: &Value) -> Value {
        match request {
            Value::Array(requests) if requests.is_empty() => {
                json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid request: empty batch"}, "id": null})
            }
            Value::Array(requests) if requests.len() > MAX_BATCH => {
                json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": format!("Invalid request: at most {MAX_BATCH} requests per batch")}, "id": null})
            }
            Value::Array(requests) => {
                let mut budget = ResponseBudget::default();
                let mut answers = Vec::with_capacity(requests.len());
                for request in requests {
                    answers.push(self.one(request, &mut budget).await);
                }
                Value::Array(answers)
            }
            request => self.one(request, &mut ResponseBudget::default()).await,
        }
    }

    /// Answers one request, counting its answer in `budget` (the answer is the refusal when it
    /// would pass it).
    async fn one(&self, request: &Value, budget: &mut ResponseBudget) -> Value {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request["method"].as_str().unwrap_or("");
        let params = request.get("params").cloned().unwrap_or(json!([]));
        let before = budget.spent;
        let answer = self.answer(method, &params, budget).await;
        // What `answer` weighed in advance is replaced by what it built.
        budget.spent = before;
        let answer = answer.and_then(|result| {
            let result = json!({"jsonrpc": "2.0", "result": result, "id": id});
            budget.charge(json_len(&result)).map(|()| result)
        });
        match answer {
            Ok(answer) => answer,
            Err(RpcFailure { code, message, data }) => {
                let mut error = json!({"code": code, "message": message});
                if let Some(data) = data {
                    error["data"] = serde_json::to_value(data).unwrap_or(Value::Null);
                }
                let answer = json!({"jsonrpc": "2.0", "error": error, "id": id});
                // An error is small, and always answered.
                budget.spent = budget.spent.saturating_add(json_len(&answer));
                answer
            }
        }
    }

    /// `program`'s accounts passing `filters`, or a node's refusal when there are more than one
    /// answer may carry (never a silently cut list) or their data would pass what is left of
    /// `budget`. The scan stops keeping accounts once either is passed, so a refused scan holds
    /// no more than the budget's worth of data.
    fn scanned(&self, program: &Pubkey, filters: &[RpcFilterType], budget: &ResponseBudget) -> Result<Vec<(Pubkey, AccountSharedData)>, RpcFailure> {
        let kept = AtomicUsize::new(0);
        let bytes = AtomicUsize::new(0);
        let over = AtomicBool::new(false);
        let data_budget = budget.remaining();
        let accounts = self.program_accounts(program, |account| {
            if over.load(Ordering::Relaxed) || !filters.iter().all(|f| filter_passes(f, account)) {
                return false;
            }
            let count = kept.fetch_add(1, Ordering::Relaxed) + 1;
            let weight = 4 * account.data().len().div_ceil(3);
            let total = bytes.fetch_add(weight, Ordering::Relaxed).saturating_add(weight);
            if count > MAX_SCANNED_ACCOUNTS || total > data_budget {
                over.store(true, Ordering::Relaxed);
                return false;
            }
            true
        })?;
        if kept.load(Ordering::Relaxed) > MAX_SCANNED_ACCOUNTS {
            let message =
                format!("{program} excluded from account secondary indexes; this RPC method unavailable for key (over {MAX_SCANNED_ACCOUNTS} accounts)");
            return Err(RpcFailure { code: -32010, message, data: None });
        }
        if over.load(Ordering::Relaxed) {
            return Err(too_large());
        }
        Ok(accounts)
    }

    /// `accounts` as a `getProgramAccounts`-shaped list, weighed against `budget` before any
    /// is encoded.
    fn keyed_accounts(&self, accounts: &[(Pubkey, AccountSharedData)], config: &RpcAccountInfoConfig, budget: &mut ResponseBudget) -> Answer {
        budget.charge(accounts.iter().map(|(_, account)| encoded_len_bound(account, config)).sum())?;
        let mut keyed = Vec::with_capacity(accounts.len());
        for (address, account) in accounts {
            keyed.push(json!({"pubkey": address.to_string(), "account": encoded_json(self, address, account, config)?}));
        }
        Ok(Value::Array(keyed))
    }

    /// `value` with the slot it was read at and the RPC's API version, as a node answers (built
    /// as JSON directly, so a large value is not copied again).
    async fn with_context_json(&self, value: Value) -> Answer {
        let slot = self.clock().await.map(|c| c.slot).unwrap_or(0);
        Ok(json!({"context": to_json(RpcResponseContext::new(slot))?, "value": value}))
    }

    async fn with_context<T: Serialize>(&self, value: T) -> Answer {
        let slot = self.clock().await.map(|c| c.slot).unwrap_or(0);
        to_json(Response { context: RpcResponseContext::new(slot), value })
    }

    async fn answer(&self, method: &str, params: &Value, budget: &mut ResponseBudget) -> Answer {
        match method {
            "getHealth" => Ok(json!("ok")),
            "getBlockHeight" => Ok(json!(self.block_height())),
            "getEpochInfo" => {
                let e = self.epoch_position().await?;
                to_json(EpochInfo {
                    epoch: e.epoch,
                    slot_index: e.slot_index,
                    slots_in_epoch: e.slots_in_epoch,
                    absolute_slot: e.absolute_slot,
                    block_height: e.block_height,
                    transaction_count: Some(e.transaction_count),
                })
            }
            // The Agave runtime this chain embeds.
            // A node's feature set id: the first four bytes of the hash of its runtime's feature
            // ids, as solana-version computes it (wallets read it as a number).
            "getVersion" => to_json(RpcVersionInfo { solana_core: "4.0.0".into(), feature_set: Some(feature_set_id()) }),
            "getGenesisHash" => Ok(json!(self.genesis_hash())),
            "getMinimumBalanceForRentExemption" => {
                let len: usize = param(params, 0)?;
                // A node refuses a length no account can have as an invalid request.
                if len > MAX_PERMITTED_DATA_LENGTH {
                    return Err(RpcFailure { code: -32600, message: "Invalid request".into(), data: None });
                }
                Ok(json!(self.rent_exempt_minimum(len)))
            }
            "getFeeForMessage" => {
                let encoded: String = param(params, 0)?;
                let bytes = BASE64.decode(&encoded).map_err(|e| invalid_params(format!("invalid base64 encoding: {e:?}")))?;
                if bytes.len() > PACKET_DATA_SIZE {
                    return Err(invalid_params("Invalid params: message too large"));
                }
                let message: VersionedMessage = bincode::deserialize(&bytes).map_err(|e| invalid_params(format!("Invalid params: not a message: {e}")))?;
                let fee = self.fee_for_message(message)?;
                self.with_context(fee).await
            }
            // No fee market here: every recent slot cleared at zero.
            "getRecentPrioritizationFees" => {
                let accounts: Option<Vec<String>> = param(params, 0)?;
                if accounts.as_ref().is_some_and(|a| a.len() > MAX_TX_ACCOUNT_LOCKS) {
                    return Err(too_many(MAX_TX_ACCOUNT_LOCKS));
                }
                let slot = self.clock().await?.slot;
                to_json(vec![RpcPrioritizationFee { slot: slot.saturating_sub(1), prioritization_fee: 0 }])
            }
            "simulateTransaction" => {
                let transaction: String = param(params, 0)?;
                let config: Option<RpcSimulateTransactionConfig> = param(params, 1)?;
                let config = config.unwrap_or_default();
                let wire = decode_wire(&transaction, config.encoding.unwrap_or(UiTransactionEncoding::Base58))?;
                let tx: VersionedTransaction = bincode::deserialize(&wire).map_err(|e| invalid_params(format!("failed to deserialize transaction: {e}")))?;
                let result = self.simulate(tx, config.sig_verify, config.replace_recent_blockhash, config.inner_instructions, config.accounts.as_ref())?;
                self.with_context(result).await
            }
            "getProgramAccounts" => {
                let program = address(&param::<String>(params, 0)?)?;
                let config: Option<RpcProgramAccountsConfig> = param(params, 1)?;
                let config = config.unwrap_or_default();
                let filters = config.filters.unwrap_or_default();
                verify_filters(&filters)?;
                let accounts = self.scanned(&program, &filters, budget)?;
                let keyed = self.keyed_accounts(&accounts, &config.account_config, budget)?;
                drop(accounts);
                if config.with_context.unwrap_or(false) { self.with_context_json(keyed).await } else { Ok(keyed) }
            }
            "getTokenAccountBalance" => {
                let token_account = address(&param::<String>(params, 0)?)?;
                let account = self.bank_account(&token_account).ok_or_else(|| invalid_params("Invalid param: could not find account"))?;
                let token = token_account_of(&account).ok_or_else(|| invalid_params("Invalid param: not a Token account"))?;
                let decimals = self.mint_decimals(&token.mint).ok_or_else(|| invalid_params("Invalid param: could not find mint"))?;
                self.with_context(token_amount_to_ui_amount_v3(token.amount, &SplTokenAdditionalDataV2::with_decimals(decimals))).await
            }
            "getTokenAccountsByOwner" => {
                let owner = address(&param::<String>(params, 0)?)?;
                let filter: RpcTokenAccountsFilter = param(params, 1)?;
                let config: Option<RpcAccountInfoConfig> = param(params, 2)?;
                let config = config.unwrap_or_default();
                // The token program whose accounts are listed: the one asked for, or the mint's.
                let (program, mint) = match filter {
                    RpcTokenAccountsFilter::Mint(mint) => {
                        let mint = address(&mint)?;
                        let account = self.bank_account(&mint).ok_or_else(|| invalid_params("Invalid param: could not find mint"))?;
                        if mint_decimals_of(&account).is_none() {
                            return Err(invalid_params("Invalid param: not a Token mint"));
                        }
                        (*account.owner(), Some(mint))
                    }
                    RpcTokenAccountsFilter::ProgramId(program) => match address(&program)? {
                        program if is_token_program(&program) => (program, None),
                        _ => return Err(invalid_params("Invalid param: unrecognized Token program id")),
                    },
                };
                // An initialized token account (its mint at 0, its owner at 32).
                let mut filters = vec![RpcFilterType::TokenAccountState, RpcFilterType::Memcmp(Memcmp::new_raw_bytes(32, owner.to_bytes().to_vec()))];
                if let Some(mint) = mint {
                    filters.push(RpcFilterType::Memcmp(Memcmp::new_raw_bytes(0, mint.to_bytes().to_vec())));
                }
                let accounts = self.scanned(&program, &filters, budget)?;
                let keyed = self.keyed_accounts(&accounts, &config, budget)?;
                self.with_context_json(keyed).await
            }
            "requestAirdrop" => {
                let to = address(&param::<String>(params, 0)?)?;
                let lamports: u64 = param(params, 1)?;
                if lamports == 0 || lamports > MAX_AIRDROP_LAMPORTS {
                    return Err(invalid_params(format!("Invalid params: lamports must be from 1 to {MAX_AIRDROP_LAMPORTS}")));
                }
                Ok(json!(self.airdrop(&to, lamports).await?))
            }
            "getSlot" => Ok(json!(self.clock().await?.slot)),
            "sendTransaction" => {
                let transaction: String = param(params, 0)?;
                let config: Option<RpcSendTransactionConfig> = param(params, 1)?;
                let config = config.unwrap_or_default();
                let wire = decode_wire(&transaction, config.encoding.unwrap_or(UiTransactionEncoding::Base58))?;
                let signature = if config.skip_preflight { self.send_skipping_preflight(&wire).await } else { self.send_and_confirm(&wire).await };
                match signature {
                    Ok(signature) => Ok(json!(signature)),
                    // Landed and failed (skipPreflight): the signature, as a node answers.
                    Err(ChainError::TransactionFailed { signature, .. }) => Ok(json!(signature)),
                    Err(e) => Err(e.into()),
                }
            }
            "getSignatureStatuses" => {
                let signatures: Vec<String> = param(params, 0)?;
                // `searchTransactionHistory` changes nothing here: the whole ledger is kept, so
                // every status is found either way.
                let _: Option<RpcSignatureStatusConfig> = param(params, 1)?;
                if signatures.len() > MAX_SIGNATURE_STATUSES {
                    return Err(too_many(MAX_SIGNATURE_STATUSES));
                }
                let mut value = Vec::with_capacity(signatures.len());
                for signature in &signatures {
                    // No forks here: what landed is rooted.
                    value.push(self.status(signature).await?.map(|(slot, err)| TransactionStatus {
                        slot,
                        confirmations: None,
                        status: err.clone().map_or(Ok(()), Err),
                        err,
                        confirmation_status: Some(TransactionConfirmationStatus::Finalized),
                    }));
                }
                self.with_context(value).await
            }
            "getLatestBlockhash" => {
                let (blockhash, last_valid_block_height) = self.latest_blockhash().await?;
                self.with_context(RpcBlockhash { blockhash, last_valid_block_height }).await
            }
            "isBlockhashValid" => {
                let valid = self.is_blockhash_valid(&param::<String>(params, 0)?).await?;
                self.with_context(valid).await
            }
            "getBalance" => {
                let lamports = self.bank_account(&address(&param::<String>(params, 0)?)?).map_or(0, |a| a.lamports());
                self.with_context(lamports).await
            }
            "getAccountInfo" => {
                let key = address(&param::<String>(params, 0)?)?;
                let config: Option<RpcAccountInfoConfig> = param(params, 1)?;
                let config = config.unwrap_or_default();
                let value = match self.bank_account(&key) {
                    Some(account) => {
                        budget.charge(encoded_len_bound(&account, &config))?;
                        encoded_json(self, &key, &account, &config)?
                    }
                    None => Value::Null,
                };
                self.with_context_json(value).await
            }
            "getMultipleAccounts" => {
                let addresses: Vec<String> = param(params, 0)?;
                if addresses.len() > MAX_MULTIPLE_ACCOUNTS {
                    return Err(too_many(MAX_MULTIPLE_ACCOUNTS));
                }
                let config: Option<RpcAccountInfoConfig> = param(params, 1)?;
                let mut config = config.unwrap_or_default();
                config.encoding.get_or_insert(UiAccountEncoding::Base64);
                let keys = addresses.iter().map(|a| address(a)).collect::<Result<Vec<_>, _>>()?;
                // Each distinct account read once, weighed for every time it is listed, and
                // encoded once; the answer still lists one entry per key asked for.
                let mut distinct: HashMap<Pubkey, Option<AccountSharedData>> = HashMap::with_capacity(keys.len());
                for key in &keys {
                    distinct.entry(*key).or_insert_with(|| self.bank_account(key));
                }
                budget.charge(keys.iter().map(|key| distinct[key].as_ref().map_or(0, |account| encoded_len_bound(account, &config))).sum())?;
                let mut encoded: HashMap<Pubkey, Value> = HashMap::with_capacity(distinct.len());
                for (key, account) in &distinct {
                    let value = match account {
                        Some(account) => encoded_json(self, key, account, &config)?,
                        None => Value::Null,
                    };
                    encoded.insert(*key, value);
                }
                drop(distinct);
                self.with_context_json(Value::Array(keys.iter().map(|key| encoded[key].clone()).collect())).await
            }
            "getTransaction" => {
                // Checked as a node checks them: a signature that parses, then the commitment.
                let signature: String = param(params, 0)?;
                verified::<Signature>(&signature)?;
                let config: Option<RpcEncodingConfigWrapper<RpcTransactionConfig>> = param(params, 1)?;
                let config = config.map(|c| c.convert_to_current()).unwrap_or_default();
                at_least_confirmed(config.commitment)?;
                let encoding = config.encoding.unwrap_or(UiTransactionEncoding::Json);
                to_json(self.encoded_transaction(&signature, encoding, config.max_supported_transaction_version).await?)
            }
            "getSignaturesForAddress" => {
                // Checked as a node checks them: an address and signatures that parse, a limit
                // of 1 to 1,000, a commitment of at least `confirmed`.
                let address: String = param(params, 0)?;
                let config: Option<RpcSignaturesForAddressConfig> = param(params, 1)?;
                let config = config.unwrap_or_default();
                verified::<Pubkey>(&address)?;
                for signature in config.before.iter().chain(&config.until) {
                    verified::<Signature>(signature)?;
                }
                let limit = config.limit.unwrap_or(MAX_SIGNATURES_FOR_ADDRESS);
                if limit == 0 || limit > MAX_SIGNATURES_FOR_ADDRESS {
                    return Err(invalid_params(format!("Invalid limit; max {MAX_SIGNATURES_FOR_ADDRESS}")));
                }
                at_least_confirmed(config.commitment)?;
                to_json(self.signatures_for_address(&address, config.before.as_deref(), config.until.as_deref(), limit).await?)
            }
            other => Err(RpcFailure { code: -32601, message: format!("Method not found: {other}"), data: None }),
        }
    }
}
