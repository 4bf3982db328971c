//! Chain access. Types here are plain (base58 strings, byte vectors) so the same indexer code
//! can follow a real cluster or the embedded chain.
//!
//! `ChainSource` is what the indexer reads; `AnyChain` is the whole narrow interface (send and
//! confirm, accounts, blockhash, clock, plus the source) over either implementation, chosen by
//! configuration at start-up.

mod decode;
pub mod embedded;
mod error;
pub mod rpc;
pub mod token;

use std::time::Duration;

use solana_transaction_error::TransactionError;

pub use embedded::EmbeddedChain;
pub use error::ChainError;
pub use rpc::RpcChain;

/// Where the indexer reads the program's history: the RPC chain, or the embedded chain.
pub trait ChainSource: Send + Sync {
    /// Every signature of `address` after `cursor` (exclusive; `None`: from the start), oldest
    /// first.
    fn signatures_after(&self, address: &str, cursor: Option<&str>) -> impl Future<Output = Result<Vec<SignatureInfo>, ChainError>> + Send;

    /// A confirmed transaction, or `None` if the source does not know it (yet).
    fn transaction(&self, signature: &str) -> impl Future<Output = Result<Option<ConfirmedTransaction>, ChainError>> + Send;

    /// `transaction` for several signatures, in their order: all asked at once (a source that
    /// can answer many in one read does).
    fn transactions(&self, signatures: &[&str]) -> impl Future<Output = Result<Vec<Option<ConfirmedTransaction>>, ChainError>> + Send {
        let requests: Vec<_> = signatures.iter().map(|signature| self.transaction(signature)).collect();
        async move { futures_util::future::join_all(requests).await.into_iter().collect() }
    }
}

impl ChainSource for RpcChain {
    async fn signatures_after(&self, address: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, ChainError> {
        RpcChain::signatures_after(self, address, cursor).await
    }

    async fn transaction(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, ChainError> {
        RpcChain::transaction(self, signature).await
    }
}

impl ChainSource for EmbeddedChain {
    async fn signatures_after(&self, address: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, ChainError> {
        EmbeddedChain::signatures_after(self, address, cursor).await
    }

    async fn transaction(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, ChainError> {
        EmbeddedChain::transaction(self, signature).await
    }

    async fn transactions(&self, signatures: &[&str]) -> Result<Vec<Option<ConfirmedTransaction>>, ChainError> {
        EmbeddedChain::transactions(self, signatures).await
    }
}

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

/// A program signature as listed by the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureInfo {
    pub signature: String,
    pub slot: u64,
    /// Whether the transaction failed (its events must be ignored).
    pub failed: bool,
    pub block_time: Option<i64>,
}

/// An instruction of a confirmed transaction with its program resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    pub program_id: String,
    /// The accounts it was given, in order.
    pub accounts: Vec<String>,
    pub data: Vec<u8>,
}

/// An inner (CPI) instruction, with the outer instruction it ran under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InnerInstruction {
    pub outer_index: usize,
    pub instruction: Instruction,
}

/// A confirmed transaction, reduced to what the indexer needs.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfirmedTransaction {
    pub signature: String,
    pub slot: u64,
    /// Its position in the block, where the node reports it (`transactionIndex`).
    pub transaction_index: Option<u32>,
    pub block_time: Option<i64>,
    /// The transaction error, if it failed.
    pub err: Option<TransactionError>,
    /// The accounts that signed it, fee payer first.
    pub signers: Vec<String>,
    pub instructions: Vec<Instruction>,
    pub inner_instructions: Vec<InnerInstruction>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub lamports: u64,
    pub owner: String,
    pub data: Vec<u8>,
    pub executable: bool,
}

/// The cluster's clock (the Clock sysvar).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    pub slot: u64,
    pub unix_timestamp: i64,
}
