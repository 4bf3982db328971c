//! Chain access. Types here are plain (base58 strings, byte vectors) so the same indexer code
//! can follow a real cluster or the embedded chain.

pub mod rpc;

/// Where the indexer reads the program's history: the RPC chain, or the embedded chain.
pub trait ChainSource: Send + Sync {
    /// Every signature of `address` after `cursor` (exclusive; `None`: from the start), oldest
    /// first.
    fn signatures_after(&self, address: &str, cursor: Option<&str>) -> impl Future<Output = Result<Vec<SignatureInfo>, rpc::ChainError>> + Send;

    /// A confirmed transaction, or `None` if the source does not know it (yet).
    fn transaction(&self, signature: &str) -> impl Future<Output = Result<Option<ConfirmedTransaction>, rpc::ChainError>> + Send;
}

impl ChainSource for rpc::RpcChain {
    async fn signatures_after(&self, address: &str, cursor: Option<&str>) -> Result<Vec<SignatureInfo>, rpc::ChainError> {
        rpc::RpcChain::signatures_after(self, address, cursor).await
    }

    async fn transaction(&self, signature: &str) -> Result<Option<ConfirmedTransaction>, rpc::ChainError> {
        rpc::RpcChain::transaction(self, signature).await
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
    pub block_time: Option<i64>,
    /// The transaction error, if it failed.
    pub err: Option<serde_json::Value>,
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
