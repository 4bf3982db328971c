//! The client side of the chain: what the indexer reads (`ChainSource`), the plain types it
//! reads (base58 strings, byte vectors), a cluster over JSON-RPC (`RpcChain`), decoding a
//! transaction into those types, chain errors, token-instruction helpers, and the remembered
//! base58 text of addresses. The embedded chain (`localnet`) implements `ChainSource` too.

pub mod address_text;
pub mod decode;
mod error;
pub mod rpc;
pub mod token;

use solana_transaction_error::TransactionError;

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
