//! What the embedded chain asks of whoever projects its transactions, without naming it: the
//! composition root hands the chain a [`LedgerHook`] (the projection's `Projector` is one), so
//! the chain depends on nothing above it.

use sqlx::PgConnection;

use chain_client::ConfirmedTransaction;

/// Applies some of the transactions the chain lands inside the database transaction that writes
/// their ledger rows: one commit, and one turn of the single writer, for both writes their
/// senders wait on.
#[async_trait::async_trait]
pub trait LedgerHook: Send + Sync + 'static {
    /// Whether the transaction `signature` is one to apply in its ledger write (its sender
    /// waits for it to be applied).
    fn wants(&self, signature: &str) -> bool;

    /// Applies `txs` in `db`, the ledger write's open transaction. Whether they were applied:
    /// if not, nothing was written and the chain commits the ledger rows alone.
    async fn apply(&self, db: &mut PgConnection, txs: &[&ConfirmedTransaction]) -> Result<bool, sqlx::Error>;

    /// `txs`, applied by `apply`, are committed.
    fn applied(&self, txs: &[&ConfirmedTransaction]);
}
