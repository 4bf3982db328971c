//! Any Solana cluster through its JSON-RPC API (`solana-rpc-client`'s nonblocking `RpcClient`
//! and its typed requests and answers), at `confirmed` commitment. The transport retries
//! transport errors, 5xx and 429 with the service's one policy (see `sender`).

mod sender;

use std::str::FromStr;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::json;
use solana_account_decoder_client_types::{UiAccount, UiAccountEncoding};
use solana_commitment_config::CommitmentConfig;
use solana_hash::Hash;
use solana_pubkey::Pubkey;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use solana_rpc_client::rpc_client::{GetConfirmedSignaturesForAddress2Config, RpcClientConfig};
use solana_rpc_client_api::config::{RpcAccountInfoConfig, RpcSendTransactionConfig, RpcTransactionConfig};
use solana_rpc_client_api::request::RpcRequest;
use solana_rpc_client_api::response::Response;
use solana_signature::Signature;
use solana_transaction_status_client_types::{EncodedConfirmedTransactionWithStatusMeta, TransactionConfirmationStatus, UiTransactionEncoding};

use crate::{Account, ChainError, Clock, ConfirmedTransaction, SignatureInfo};

/// The Clock sysvar's address.
pub const CLOCK_SYSVAR: &str = "SysvarC1ock11111111111111111111111111111111";
/// `getSignaturesForAddress` returns at most this many per call.
pub const SIGNATURE_PAGE: usize = 1000;

#[derive(Clone)]
pub struct RpcChain {
    client: std::sync::Arc<RpcClient>,
}

fn confirmed() -> CommitmentConfig {
    CommitmentConfig::confirmed()
}

fn parse<T: FromStr>(what: &str, value: &str) -> Result<T, ChainError> {
    value.parse().map_err(|_| ChainError::invalid_params(format!("Invalid param: Invalid {what} {value:?}")))
}

fn account_of(ui: UiAccount) -> Result<Account, ChainError> {
    let data = ui.data.decode().ok_or_else(|| ChainError::Format("account data not in a binary encoding".into()))?;
    Ok(Account { lamports: ui.lamports, owner: ui.owner, data, executable: ui.executable })
}

fn binary_accounts() -> RpcAccountInfoConfig {
    RpcAccountInfoConfig { encoding: Some(UiAccountEncoding::Base64), commitment: Some(confirmed()), data_slice: None, min_context_slot: None }
}

impl RpcChain {
    pub fn new(url: &str, timeout: Duration) -> RpcChain {
        let client = RpcClient::new_sender(sender::RetryingSender::new(url, timeout), RpcClientConfig::with_commitment(confirmed()));
        RpcChain { client: std::sync::Arc::new(client) }
    }

    /// Every signature of `address` after `cursor` (exclusive; `None`: from the beginning),
    /// oldest first. Walks `getSignaturesForAddress` backwards from the newest with `before`,
    /// bounded by `until = cursor`.
    pub async fn signatures_after(&self, address: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, ChainError> {
        let address: Pubkey = parse("address", address)?;
        let until = cursor.map(|c| parse::<Signature>("signature", c)).transpose()?;
        let mut all = Vec::new();
        let mut before: Option<Signature> = None;
        loop {
            let config = GetConfirmedSignaturesForAddress2Config { before, until, limit: Some(SIGNATURE_PAGE), commitment: Some(confirmed()) };
            let page = self.client.get_signatures_for_address_with_config(&address, config).await?;
            let full = page.len() == SIGNATURE_PAGE;
            before = match page.last() {
                Some(last) => Some(parse("signature", &last.signature)?),
                None => None,
            };
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
        let config =
            RpcTransactionConfig { encoding: Some(UiTransactionEncoding::Json), commitment: Some(confirmed()), max_supported_transaction_version: Some(0) };
        // `RpcClient::get_transaction_with_config` treats "not found" (a null result) as an
        // error; asked directly, it is the `None` it means.
        let encoded: Option<EncodedConfirmedTransactionWithStatusMeta> = self.client.send(RpcRequest::GetTransaction, json!([signature, config])).await?;
        encoded.map(|t| ConfirmedTransaction::from_encoded(signature, t)).transpose()
    }

    pub async fn account(&self, address: &str) -> Result<Option<Account>, ChainError> {
        let address: Pubkey = parse("address", address)?;
        // Sent directly: `RpcClient::get_ui_account_with_config` turns every failure (a 503, a
        // rate limit) into "AccountNotFound", and the difference matters here.
        let response: Response<Option<UiAccount>> = self.client.send(RpcRequest::GetAccountInfo, json!([address.to_string(), binary_accounts()])).await?;
        response.value.map(account_of).transpose()
    }

    /// Several accounts in one call, in the order asked (`None` where one does not exist).
    pub async fn accounts(&self, addresses: &[&str]) -> Result<Vec<Option<Account>>, ChainError> {
        let keys = addresses.iter().map(|a| parse("address", a)).collect::<Result<Vec<Pubkey>, _>>()?;
        let response = self.client.get_multiple_ui_accounts_with_config(&keys, binary_accounts()).await?;
        if response.value.len() != addresses.len() {
            return Err(ChainError::Format(format!("asked {} accounts, got {}", addresses.len(), response.value.len())));
        }
        response.value.into_iter().map(|a| a.map(account_of).transpose()).collect()
    }

    /// The latest blockhash and the last block height at which it is valid.
    pub async fn latest_blockhash(&self) -> Result<(String, u64), ChainError> {
        let (hash, last_valid) = self.client.get_latest_blockhash_with_commitment(confirmed()).await?;
        Ok((hash.to_string(), last_valid))
    }

    /// Whether a blockhash can still be used by a new transaction.
    pub async fn is_blockhash_valid(&self, blockhash: &str) -> Result<bool, ChainError> {
        let hash: Hash = parse("blockhash", blockhash)?;
        Ok(self.client.is_blockhash_valid(&hash, confirmed()).await?)
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
        let signature: Signature = parse("signature", signature)?;
        let statuses = self.client.get_signature_statuses_with_history(&[signature]).await?.value;
        Ok(matches!(statuses.first(), Some(Some(status)) if status.confirmation_status == Some(TransactionConfirmationStatus::Finalized)))
    }

    /// Sends a signed transaction (wire bytes) and waits until it is confirmed; a transaction
    /// that fails on chain, or at preflight, is an error carrying the cluster's reason.
    pub async fn send_and_confirm(&self, transaction: &[u8], timeout: Duration) -> Result<String, ChainError> {
        let config = RpcSendTransactionConfig {
            encoding: Some(UiTransactionEncoding::Base64),
            preflight_commitment: Some(confirmed().commitment),
            ..RpcSendTransactionConfig::default()
        };
        // The wire bytes as signed, not re-serialised: what was co-signed is what is sent.
        let signature: String = self.client.send(RpcRequest::SendTransaction, json!([BASE64.encode(transaction), config])).await?;
        let parsed: Signature = parse("signature", &signature)?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let statuses = self.client.get_signature_statuses(&[parsed]).await?.value;
            if let Some(Some(status)) = statuses.into_iter().next() {
                if let Some(err) = status.err {
                    return Err(ChainError::TransactionFailed { signature, err });
                }
                if matches!(status.confirmation_status, Some(TransactionConfirmationStatus::Confirmed | TransactionConfirmationStatus::Finalized)) {
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
