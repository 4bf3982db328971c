//! The chain the service runs against, chosen at start: a cluster over JSON-RPC, or the embedded
//! chain (`localnet`). The whole narrow interface the service uses (send and confirm, accounts,
//! blockhash, clock, finality, and what the indexer reads) over either.

use std::time::Duration;

use chain_client::{Account, ChainError, ChainSource, Clock, ConfirmedTransaction, RpcChain, SignatureInfo};
use localnet::EmbeddedChain;

/// The chain the service runs against.
#[derive(Clone)]
pub enum AnyChain {
    Rpc(RpcChain),
    Embedded(EmbeddedChain),
}

/// A send as `fm_chain_send_confirm_seconds` records it (by outcome).
async fn timed_send<T>(send: impl Future<Output = Result<T, ChainError>>) -> Result<T, ChainError> {
    let started = std::time::Instant::now();
    let sent = send.await;
    let outcome = if sent.is_ok() { "confirmed" } else { "failed" };
    metrics::histogram!("fm_chain_send_confirm_seconds", "outcome" => outcome).record(started.elapsed().as_secs_f64());
    sent
}

/// How long `send_and_confirm` waits on a real cluster.
pub const CONFIRM_TIMEOUT: Duration = Duration::from_secs(60);

impl AnyChain {
    /// Sends a signed transaction (wire bytes) and waits until it is confirmed.
    /// Recorded as `fm_chain_send_confirm_seconds` (by outcome) for the service's metrics.
    pub async fn send_and_confirm(&self, transaction: &[u8]) -> Result<String, ChainError> {
        timed_send(async {
            match self {
                AnyChain::Rpc(c) => c.send_and_confirm(transaction, CONFIRM_TIMEOUT).await,
                AnyChain::Embedded(c) => c.send_and_confirm(transaction).await,
            }
        })
        .await
    }

    /// `send_and_confirm`, answered with the confirmed transaction: the embedded chain builds it
    /// from the bank's results; a cluster is asked for it (`getTransaction`) once confirmed.
    pub async fn send_and_confirm_transaction(&self, transaction: &[u8]) -> Result<ConfirmedTransaction, ChainError> {
        timed_send(async {
            match self {
                AnyChain::Rpc(c) => {
                    let signature = c.send_and_confirm(transaction, CONFIRM_TIMEOUT).await?;
                    c.transaction(&signature).await?.ok_or_else(|| ChainError::Transport(format!("confirmed transaction {signature} not found")))
                }
                AnyChain::Embedded(c) => c.send_and_confirm_transaction(transaction).await,
            }
        })
        .await
    }

    pub async fn account(&self, address: &str) -> Result<Option<Account>, ChainError> {
        match self {
            AnyChain::Rpc(c) => c.account(address).await,
            AnyChain::Embedded(c) => c.account(address).await,
        }
    }

    pub async fn accounts(&self, addresses: &[&str]) -> Result<Vec<Option<Account>>, ChainError> {
        match self {
            AnyChain::Rpc(c) => c.accounts(addresses).await,
            AnyChain::Embedded(c) => c.accounts(addresses).await,
        }
    }

    pub async fn latest_blockhash(&self) -> Result<(String, u64), ChainError> {
        match self {
            AnyChain::Rpc(c) => c.latest_blockhash().await,
            AnyChain::Embedded(c) => c.latest_blockhash().await,
        }
    }

    pub async fn clock(&self) -> Result<Clock, ChainError> {
        match self {
            AnyChain::Rpc(c) => c.clock().await,
            AnyChain::Embedded(c) => c.clock().await,
        }
    }

    /// Whether a blockhash can still be used by a new transaction.
    pub async fn is_blockhash_valid(&self, blockhash: &str) -> Result<bool, ChainError> {
        match self {
            AnyChain::Rpc(c) => c.is_blockhash_valid(blockhash).await,
            AnyChain::Embedded(c) => c.is_blockhash_valid(blockhash).await,
        }
    }

    /// Whether a transaction can no longer be rolled back. Everything here works at
    /// `confirmed`; a step that releases money (marking a withdrawal sent, paying out on the
    /// strength of a credit) re-checks its transaction here first.
    pub async fn is_finalized(&self, signature: &str) -> Result<bool, ChainError> {
        match self {
            AnyChain::Rpc(c) => c.is_finalized(signature).await,
            AnyChain::Embedded(c) => c.is_finalized(signature).await,
        }
    }
}

impl ChainSource for AnyChain {
    async fn signatures_after(&self, address: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, ChainError> {
        match self {
            AnyChain::Rpc(c) => c.signatures_after(address, cursor).await,
            AnyChain::Embedded(c) => c.signatures_after(address, cursor).await,
        }
    }

    async fn transaction(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, ChainError> {
        match self {
            AnyChain::Rpc(c) => c.transaction(signature).await,
            AnyChain::Embedded(c) => c.transaction(signature).await,
        }
    }

    async fn transactions(&self, signatures: &[&str]) -> Result<Vec<Option<ConfirmedTransaction>>, ChainError> {
        match self {
            AnyChain::Rpc(c) => ChainSource::transactions(c, signatures).await,
            AnyChain::Embedded(c) => c.transactions(signatures).await,
        }
    }
}
