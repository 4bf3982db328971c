//! The embedded chain answering Solana JSON-RPC, so a wallet (or `RpcChain`) can use it like a
//! cluster: `sendTransaction`, `getSignatureStatuses`, `getLatestBlockhash`, `isBlockhashValid`,
//! `getAccountInfo`, `getMultipleAccounts`, `getBalance`, `getTransaction`,
//! `getSignaturesForAddress`, `getSlot`, `getHealth`. Requests and answers are JSON values in
//! the real formats; the service mounts this at `/rpc` for local use (HTTP stays there).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use super::EmbeddedChain;
use crate::chain::ChainError;

fn error(code: i64, message: impl Into<String>, data: Option<Value>) -> Result<Value, (i64, String, Option<Value>)> {
    Err((code, message.into(), data))
}

fn invalid_params(message: impl Into<String>) -> Result<Value, (i64, String, Option<Value>)> {
    error(-32602, message, None)
}

impl From<ChainError> for (i64, String, Option<Value>) {
    fn from(e: ChainError) -> Self {
        match e {
            ChainError::Rpc { code, message, data } => (code, message, data),
            ChainError::TransactionFailed { signature, err } => (-32002, format!("transaction {signature} failed"), Some(json!({"err": err}))),
            other => (-32603, other.to_string(), None),
        }
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
            Err((code, message, data)) => {
                let mut error = json!({"code": code, "message": message});
                if let Some(data) = data {
                    error["data"] = data;
                }
                json!({"jsonrpc": "2.0", "error": error, "id": id})
            }
        }
    }

    async fn context(&self) -> Value {
        json!({"slot": self.clock().await.map(|c| c.slot).unwrap_or(0)})
    }

    async fn answer(&self, method: &str, params: &Value) -> Result<Value, (i64, String, Option<Value>)> {
        let string = |i: usize| params[i].as_str().ok_or((-32602, format!("Invalid params: parameter {i} must be a string"), None));
        match method {
            "getHealth" => Ok(json!("ok")),
            "getSlot" => Ok(json!(self.clock().await?.slot)),
            "sendTransaction" => {
                let encoding = params[1]["encoding"].as_str().unwrap_or("base58");
                let wire = match encoding {
                    "base64" => BASE64.decode(string(0)?).map_err(|_| (-32602, "Invalid params: not base64".to_owned(), None))?,
                    "base58" => bs58::decode(string(0)?).into_vec().map_err(|_| (-32602, "Invalid params: not base58".to_owned(), None))?,
                    other => return invalid_params(format!("Invalid params: unsupported encoding {other}")),
                };
                let preflight = !params[1]["skipPreflight"].as_bool().unwrap_or(false);
                let signature = if preflight { self.send_and_confirm(&wire).await } else { self.send_skipping_preflight(&wire).await };
                match signature {
                    Ok(signature) => Ok(json!(signature)),
                    // Landed and failed (skipPreflight): the signature, as a node answers.
                    Err(ChainError::TransactionFailed { signature, .. }) => Ok(json!(signature)),
                    Err(e) => Err(e.into()),
                }
            }
            "getSignatureStatuses" => {
                let signatures = params[0].as_array().ok_or((-32602, "Invalid params: expected an array of signatures".to_owned(), None))?;
                let mut value = Vec::with_capacity(signatures.len());
                for signature in signatures {
                    let status = match self.transaction(signature.as_str().unwrap_or("")).await? {
                        Some(tx) => {
                            let status = match &tx.err {
                                Some(err) => json!({"Err": err}),
                                None => json!({"Ok": null}),
                            };
                            json!({"slot": tx.slot, "confirmations": null, "err": tx.err, "status": status, "confirmationStatus": "finalized"})
                        }
                        None => Value::Null,
                    };
                    value.push(status);
                }
                Ok(json!({"context": self.context().await, "value": value}))
            }
            "getLatestBlockhash" => {
                let (blockhash, last_valid) = self.latest_blockhash().await?;
                Ok(json!({"context": self.context().await, "value": {"blockhash": blockhash, "lastValidBlockHeight": last_valid}}))
            }
            "isBlockhashValid" => Ok(json!({"context": self.context().await, "value": self.is_blockhash_valid(string(0)?).await?})),
            "getBalance" => Ok(json!({"context": self.context().await, "value": self.account(string(0)?).await?.map_or(0, |a| a.lamports)})),
            "getAccountInfo" => {
                let account = self.account(string(0)?).await?;
                Ok(json!({"context": self.context().await, "value": account.map(account_json)}))
            }
            "getMultipleAccounts" => {
                let addresses: Vec<&str> = params[0].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
                let accounts = self.accounts(&addresses).await?;
                Ok(json!({"context": self.context().await, "value": accounts.into_iter().map(|a| a.map(account_json)).collect::<Vec<_>>()}))
            }
            "getTransaction" => Ok(self.transaction_json(string(0)?).await?.unwrap_or(Value::Null)),
            "getSignaturesForAddress" => {
                let options = &params[1];
                let limit = options["limit"].as_u64().unwrap_or(1000).clamp(1, 1000) as usize;
                let rows = self.signatures_for_address(string(0)?, options["before"].as_str(), options["until"].as_str(), limit).await?;
                Ok(json!(rows
                    .into_iter()
                    .map(|(signature, slot, err, block_time)| json!({"signature": signature, "slot": slot, "err": err,
                                    "memo": null, "blockTime": block_time, "confirmationStatus": "finalized"}))
                    .collect::<Vec<_>>()))
            }
            other => error(-32601, format!("Method not found: {other}"), None),
        }
    }
}

fn account_json(a: crate::chain::Account) -> Value {
    json!({"data": [BASE64.encode(&a.data), "base64"], "executable": a.executable, "lamports": a.lamports, "owner": a.owner,
           "rentEpoch": u64::MAX, "space": a.data.len()})
}
