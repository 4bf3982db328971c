//! Any Solana cluster through its JSON-RPC API, at `confirmed` commitment, with retries and
//! backoff on transport errors, 5xx and HTTP 429 (honouring `Retry-After`, capped).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{Account, Clock, ConfirmedTransaction, InnerInstruction, Instruction, SignatureInfo};

const ATTEMPTS: u32 = 5;
const BACKOFF: Duration = Duration::from_millis(200);
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// The Clock sysvar's address.
pub const CLOCK_SYSVAR: &str = "SysvarC1ock11111111111111111111111111111111";
/// `getSignaturesForAddress` returns at most this many per call.
pub const SIGNATURE_PAGE: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error("transport error: {0}")]
    Transport(String),
    #[error("HTTP {0}")]
    Http(u16),
    #[error("rate limited by the RPC node")]
    RateLimited,
    #[error("RPC error {code}: {message}")]
    Rpc { code: i64, message: String, data: Option<Value> },
    #[error("unexpected response: {0}")]
    Format(String),
    #[error("transaction {signature} failed: {err}")]
    TransactionFailed { signature: String, err: Value },
    #[error("transaction {0} was not confirmed in time")]
    NotConfirmed(String),
}

#[derive(Clone)]
pub struct RpcChain {
    url: String,
    http: reqwest::Client,
}

#[derive(Deserialize)]
struct Response {
    result: Option<Value>,
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

fn format_error(what: &str, e: impl std::fmt::Display) -> ChainError {
    ChainError::Format(format!("{what}: {e}"))
}

impl RpcChain {
    pub fn new(url: &str, timeout: Duration) -> RpcChain {
        let http = reqwest::Client::builder().timeout(timeout).build().expect("a plain reqwest client builds");
        RpcChain { url: url.to_owned(), http }
    }

    /// One JSON-RPC call, retried on transport errors, 5xx and 429. An RPC-level error (a
    /// well-formed `error` member) is final.
    async fn call<T: DeserializeOwned>(&self, method: &str, params: Value) -> Result<T, ChainError> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut last = ChainError::Transport("no attempt".into());
        for attempt in 0..ATTEMPTS {
            let mut wait = BACKOFF * 2u32.pow(attempt);
            match self.http.post(&self.url).json(&body).send().await {
                Err(e) => last = ChainError::Transport(e.to_string()),
                Ok(r) if r.status().as_u16() == 429 => {
                    let after = r.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).map(Duration::from_secs);
                    match after {
                        Some(after) if after > MAX_RETRY_AFTER => return Err(ChainError::RateLimited),
                        Some(after) => wait = after,
                        None => {}
                    }
                    last = ChainError::RateLimited;
                }
                Ok(r) if r.status().is_server_error() => last = ChainError::Http(r.status().as_u16()),
                Ok(r) if !r.status().is_success() => return Err(ChainError::Http(r.status().as_u16())),
                Ok(r) => {
                    let response: Response = r.json().await.map_err(|e| format_error(method, e))?;
                    if let Some(e) = response.error {
                        return Err(ChainError::Rpc { code: e.code, message: e.message, data: e.data });
                    }
                    return serde_json::from_value(response.result.unwrap_or(Value::Null)).map_err(|e| format_error(method, e));
                }
            }
            if attempt + 1 < ATTEMPTS {
                tracing::debug!(method, attempt, error = %last, "RPC call failed, retrying");
                tokio::time::sleep(wait).await;
            }
        }
        Err(last)
    }

    /// Every signature of `address` after `cursor` (exclusive; `None`: from the beginning),
    /// oldest first. Walks `getSignaturesForAddress` backwards from the newest with `before`,
    /// bounded by `until = cursor`.
    pub async fn signatures_after(&self, address: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, ChainError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Row {
            signature: String,
            slot: u64,
            err: Option<Value>,
            block_time: Option<i64>,
        }
        let mut all = Vec::new();
        let mut before: Option<String> = None;
        loop {
            let mut options = json!({"limit": SIGNATURE_PAGE, "commitment": "confirmed"});
            if let Some(b) = &before {
                options["before"] = json!(b);
            }
            if let Some(c) = cursor {
                options["until"] = json!(c);
            }
            let page: Vec<Row> = self.call("getSignaturesForAddress", json!([address, options])).await?;
            let full = page.len() == SIGNATURE_PAGE;
            before = page.last().map(|r| r.signature.clone());
            all.extend(page.into_iter().map(|r| SignatureInfo { signature: r.signature, slot: r.slot, failed: r.err.is_some(), block_time: r.block_time }));
            if !full || before.is_none() {
                break;
            }
        }
        all.reverse();
        Ok(all)
    }

    /// A confirmed transaction with its instructions' programs resolved, or `None` if the node
    /// does not know it (yet).
    pub async fn transaction(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, ChainError> {
        let options = json!({"encoding": "json", "commitment": "confirmed", "maxSupportedTransactionVersion": 0});
        let raw: Option<RawTransaction> = self.call("getTransaction", json!([signature, options])).await?;
        raw.map(|t| t.resolve(signature)).transpose()
    }

    pub async fn account(&self, address: &str) -> Result<Option<Account>, ChainError> {
        #[derive(Deserialize)]
        struct WithContext {
            value: Option<RawAccount>,
        }
        let options = json!({"encoding": "base64", "commitment": "confirmed"});
        let r: WithContext = self.call("getAccountInfo", json!([address, options])).await?;
        r.value.map(RawAccount::decode).transpose()
    }

    /// Several accounts in one call, in the order asked (`None` where one does not exist).
    pub async fn accounts(&self, addresses: &[&str]) -> Result<Vec<Option<Account>>, ChainError> {
        #[derive(Deserialize)]
        struct WithContext {
            value: Vec<Option<RawAccount>>,
        }
        let options = json!({"encoding": "base64", "commitment": "confirmed"});
        let r: WithContext = self.call("getMultipleAccounts", json!([addresses, options])).await?;
        if r.value.len() != addresses.len() {
            return Err(ChainError::Format(format!("asked {} accounts, got {}", addresses.len(), r.value.len())));
        }
        r.value.into_iter().map(|a| a.map(RawAccount::decode).transpose()).collect()
    }

    /// The latest blockhash and the last block height at which it is valid.
    pub async fn latest_blockhash(&self) -> Result<(String, u64), ChainError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Value {
            blockhash: String,
            last_valid_block_height: u64,
        }
        #[derive(Deserialize)]
        struct WithContext {
            value: Value,
        }
        let r: WithContext = self.call("getLatestBlockhash", json!([{"commitment": "confirmed"}])).await?;
        Ok((r.value.blockhash, r.value.last_valid_block_height))
    }

    /// Whether a blockhash can still be used by a new transaction.
    pub async fn is_blockhash_valid(&self, blockhash: &str) -> Result<bool, ChainError> {
        #[derive(Deserialize)]
        struct WithContext {
            value: bool,
        }
        let r: WithContext = self.call("isBlockhashValid", json!([blockhash, {"commitment": "confirmed"}])).await?;
        Ok(r.value)
    }

    /// The Clock sysvar: slot (bytes 0..8) and unix timestamp (bytes 32..40).
    pub async fn clock(&self) -> Result<Clock, ChainError> {
        let account = self.account(CLOCK_SYSVAR).await?.ok_or_else(|| ChainError::Format("no Clock sysvar".into()))?;
        let field = |at: usize| account.data.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()));
        match (field(0), field(32)) {
            (Some(slot), Some(ts)) => Ok(Clock { slot, unix_timestamp: ts as i64 }),
            _ => Err(ChainError::Format(format!("Clock sysvar of {} bytes", account.data.len()))),
        }
    }

    /// Whether the transaction is finalized (rooted: it can no longer be rolled back). The
    /// indexer works at `confirmed`; steps that release money re-check here.
    pub async fn is_finalized(&self, signature: &str) -> Result<bool, ChainError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Status {
            confirmation_status: Option<String>,
        }
        #[derive(Deserialize)]
        struct WithContext {
            value: Vec<Option<Status>>,
        }
        let r: WithContext = self.call("getSignatureStatuses", json!([[signature], {"searchTransactionHistory": true}])).await?;
        Ok(matches!(r.value.first(), Some(Some(Status { confirmation_status: Some(s) })) if s == "finalized"))
    }

    /// Sends a signed transaction (wire bytes) and waits until it is confirmed; a transaction
    /// that fails on chain, or at preflight, is an error carrying the cluster's reason.
    pub async fn send_and_confirm(&self, transaction: &[u8], timeout: Duration) -> Result<String, ChainError> {
        let options = json!({"encoding": "base64", "preflightCommitment": "confirmed"});
        let signature: String = self.call("sendTransaction", json!([BASE64.encode(transaction), options])).await?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            #[derive(Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct Status {
                err: Option<Value>,
                confirmation_status: Option<String>,
            }
            #[derive(Deserialize)]
            struct WithContext {
                value: Vec<Option<Status>>,
            }
            let r: WithContext = self.call("getSignatureStatuses", json!([[signature], {"searchTransactionHistory": false}])).await?;
            if let Some(Some(status)) = r.value.into_iter().next() {
                if let Some(err) = status.err {
                    return Err(ChainError::TransactionFailed { signature, err });
                }
                if matches!(status.confirmation_status.as_deref(), Some("confirmed" | "finalized")) {
                    return Ok(signature);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ChainError::NotConfirmed(signature));
            }
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
    }
}

#[derive(Deserialize)]
struct RawAccount {
    lamports: u64,
    owner: String,
    data: (String, String),
    executable: bool,
}

impl RawAccount {
    fn decode(self) -> Result<Account, ChainError> {
        if self.data.1 != "base64" {
            return Err(ChainError::Format(format!("account data encoded as {}", self.data.1)));
        }
        let data = BASE64.decode(&self.data.0).map_err(|e| format_error("account data", e))?;
        Ok(Account { lamports: self.lamports, owner: self.owner, data, executable: self.executable })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTransaction {
    slot: u64,
    block_time: Option<i64>,
    transaction: RawTx,
    meta: Option<RawMeta>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTx {
    message: RawMessage,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMessage {
    account_keys: Vec<String>,
    header: RawHeader,
    instructions: Vec<RawInstruction>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawHeader {
    num_required_signatures: usize,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawInstruction {
    program_id_index: usize,
    data: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMeta {
    err: Option<Value>,
    #[serde(default)]
    inner_instructions: Option<Vec<RawInner>>,
    #[serde(default)]
    loaded_addresses: Option<LoadedAddresses>,
}

#[derive(Deserialize)]
struct RawInner {
    index: usize,
    instructions: Vec<RawInstruction>,
}

#[derive(Default, Deserialize)]
struct LoadedAddresses {
    #[serde(default)]
    writable: Vec<String>,
    #[serde(default)]
    readonly: Vec<String>,
}

impl RawTransaction {
    /// Resolves program indexes against the static keys followed by the addresses loaded from
    /// lookup tables (writable, then read-only), as the runtime orders them.
    fn resolve(self, signature: &str) -> Result<ConfirmedTransaction, ChainError> {
        let meta = self.meta.ok_or_else(|| ChainError::Format(format!("transaction {signature} has no meta")))?;
        let loaded = meta.loaded_addresses.unwrap_or_default();
        let message = &self.transaction.message;
        let signers = message.account_keys.iter().take(message.header.num_required_signatures).cloned().collect();
        let keys: Vec<String> = self.transaction.message.account_keys.into_iter().chain(loaded.writable).chain(loaded.readonly).collect();
        let instruction = |raw: RawInstruction| -> Result<Instruction, ChainError> {
            let program_id = keys.get(raw.program_id_index).cloned().ok_or_else(|| ChainError::Format(format!("program index {} out of range", raw.program_id_index)))?;
            let data = bs58::decode(&raw.data).into_vec().map_err(|e| format_error("instruction data", e))?;
            Ok(Instruction { program_id, data })
        };
        let instructions = self.transaction.message.instructions.into_iter().map(instruction).collect::<Result<_, _>>()?;
        let mut inner_instructions = Vec::new();
        for group in meta.inner_instructions.unwrap_or_default() {
            for raw in group.instructions {
                inner_instructions.push(InnerInstruction { outer_index: group.index, instruction: instruction(raw)? });
            }
        }
        Ok(ConfirmedTransaction { signature: signature.to_owned(), slot: self.slot, block_time: self.block_time, err: meta.err, signers, instructions, inner_instructions })
    }
}
