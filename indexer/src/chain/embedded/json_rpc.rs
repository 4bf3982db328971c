//! The embedded chain answering Solana JSON-RPC, so a wallet (or `RpcChain`) can use it like a
//! cluster: `sendTransaction`, `getSignatureStatuses`, `getLatestBlockhash`, `isBlockhashValid`,
//! `getAccountInfo`, `getMultipleAccounts`, `getBalance`, `getTransaction`,
//! `getSignaturesForAddress`, `getSlot`, `getHealth`. Parameters are read into, and answers
//! built from, the same typed structs `solana-rpc-client` sends and expects
//! (`solana-rpc-client-api`, `solana-transaction-status-client-types`), so the two sides
//! cannot drift apart. The service mounts this at `/rpc` for local use.
//!
//! Limits are a mainnet node's, so what works here works there and a caller cannot make one
//! request cost more than a node would let it: at most [`MAX_MULTIPLE_ACCOUNTS`] keys per
//! `getMultipleAccounts`, [`MAX_SIGNATURE_STATUSES`] signatures per `getSignatureStatuses`,
//! 1,000 signatures per `getSignaturesForAddress` page, and transactions of at most
//! [`PACKET_DATA_SIZE`] bytes (refused by their encoded length before anything is decoded).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use solana_account_decoder_client_types::{UiAccount, UiAccountData, UiAccountEncoding};
use solana_rpc_client_api::config::{RpcSendTransactionConfig, RpcSignaturesForAddressConfig};
use solana_rpc_client_api::response::{Response, RpcBlockhash, RpcResponseContext, RpcSimulateTransactionResult};
use solana_transaction_status_client_types::{TransactionConfirmationStatus, TransactionStatus, UiTransactionEncoding};

use super::EmbeddedChain;
use crate::chain::{Account, ChainError};

/// Keys per `getMultipleAccounts` (Agave's `MAX_MULTIPLE_ACCOUNTS`).
pub const MAX_MULTIPLE_ACCOUNTS: usize = 100;

/// Signatures per `getSignatureStatuses` (Agave's `MAX_GET_SIGNATURE_STATUSES_QUERY_ITEMS`).
pub const MAX_SIGNATURE_STATUSES: usize = 256;

/// The largest transaction, bytes: one network packet (1,280-byte IPv6 MTU less headers).
pub const PACKET_DATA_SIZE: usize = 1232;

/// The longest encodings of a `PACKET_DATA_SIZE` transaction (Agave's `MAX_BASE58_SIZE` and
/// `MAX_BASE64_SIZE`).
const MAX_BASE58_SIZE: usize = 1683;
const MAX_BASE64_SIZE: usize = 1644;

fn too_many(max: usize) -> RpcFailure {
    invalid_params(format!("Invalid params: Too many inputs provided; max {max}"))
}

/// A JSON-RPC error object: code, message, and (for a preflight failure) the simulation.
struct RpcFailure {
    code: i64,
    message: String,
    data: Option<RpcSimulateTransactionResult>,
}

type Answer = Result<Value, RpcFailure>;

fn invalid_params(message: impl Into<String>) -> RpcFailure {
    RpcFailure { code: -32602, message: message.into(), data: None }
}

impl From<ChainError> for RpcFailure {
    fn from(e: ChainError) -> Self {
        match e {
            ChainError::Rpc { code, message, err } => RpcFailure { code, message, data: err.map(simulation_failure) },
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

fn ui_account(a: Account) -> UiAccount {
    UiAccount {
        lamports: a.lamports,
        space: Some(a.data.len() as u64),
        data: UiAccountData::Binary(BASE64.encode(&a.data), UiAccountEncoding::Base64),
        owner: a.owner,
        executable: a.executable,
        rent_epoch: u64::MAX,
    }
}

impl EmbeddedChain {
    /// Answers one JSON-RPC request (a batch is not supported).
    pub async fn json_rpc(&self, request: &Value) -> Value {
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request["method"].as_str().unwrap_or("");
        let params = request.get("params").cloned().unwrap_or(json!([]));
        match self.answer(method, &params).await {
            Ok(result) => json!({"jsonrpc": "2.0", "result": result, "id": id}),
            Err(RpcFailure { code, message, data }) => {
                let mut error = json!({"code": code, "message": message});
                if let Some(data) = data {
                    error["data"] = serde_json::to_value(data).unwrap_or(Value::Null);
                }
                json!({"jsonrpc": "2.0", "error": error, "id": id})
            }
        }
    }

    async fn with_context<T: Serialize>(&self, value: T) -> Answer {
        let slot = self.clock().await.map(|c| c.slot).unwrap_or(0);
        to_json(Response { context: RpcResponseContext { slot, api_version: None }, value })
    }

    async fn answer(&self, method: &str, params: &Value) -> Answer {
        match method {
            "getHealth" => Ok(json!("ok")),
            "getSlot" => Ok(json!(self.clock().await?.slot)),
            "sendTransaction" => {
                let transaction: String = param(params, 0)?;
                let config: Option<RpcSendTransactionConfig> = param(params, 1)?;
                let config = config.unwrap_or_default();
                let encoding = config.encoding.unwrap_or(UiTransactionEncoding::Base58);
                let max_encoded = if encoding == UiTransactionEncoding::Base64 { MAX_BASE64_SIZE } else { MAX_BASE58_SIZE };
                if transaction.len() > max_encoded {
                    return Err(invalid_params(format!(
                        "{encoding} encoded solana_transaction::versioned::VersionedTransaction too large: {} bytes (max: encoded/raw {max_encoded}/{PACKET_DATA_SIZE})",
                        transaction.len()
                    )));
                }
                let wire = match encoding {
                    UiTransactionEncoding::Base64 => BASE64.decode(&transaction).map_err(|_| invalid_params("Invalid params: not base64"))?,
                    UiTransactionEncoding::Base58 => bs58::decode(&transaction).into_vec().map_err(|_| invalid_params("Invalid params: not base58"))?,
                    other => return Err(invalid_params(format!("Invalid params: unsupported encoding {other}"))),
                };
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
                let lamports = self.account(&param::<String>(params, 0)?).await?.map_or(0, |a| a.lamports);
                self.with_context(lamports).await
            }
            "getAccountInfo" => {
                let account = self.account(&param::<String>(params, 0)?).await?;
                self.with_context(account.map(ui_account)).await
            }
            "getMultipleAccounts" => {
                let addresses: Vec<String> = param(params, 0)?;
                if addresses.len() > MAX_MULTIPLE_ACCOUNTS {
                    return Err(too_many(MAX_MULTIPLE_ACCOUNTS));
                }
                let addresses: Vec<&str> = addresses.iter().map(String::as_str).collect();
                let accounts = self.accounts(&addresses).await?;
                self.with_context(accounts.into_iter().map(|a| a.map(ui_account)).collect::<Vec<_>>()).await
            }
            "getTransaction" => to_json(self.encoded_transaction(&param::<String>(params, 0)?).await?),
            "getSignaturesForAddress" => {
                let address: String = param(params, 0)?;
                let config: Option<RpcSignaturesForAddressConfig> = param(params, 1)?;
                let config = config.unwrap_or_default();
                let limit = config.limit.unwrap_or(1000).clamp(1, 1000);
                to_json(self.signatures_for_address(&address, config.before.as_deref(), config.until.as_deref(), limit).await?)
            }
            other => Err(RpcFailure { code: -32601, message: format!("Method not found: {other}"), data: None }),
        }
    }
}
