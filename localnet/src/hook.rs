//! What the embedded chain asks of whoever projects its transactions, without naming it: the
//! composition root hands the chain a [`LedgerHook`] (the projection's `Projector` is one), so
//! the chain depends on nothing above it.

use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;

use chain_client::ConfirmedTransaction;

/// Applies some of the transactions the chain lands in the statement that writes their ledger
/// rows: one statement, one round trip and one commit, in one turn of the single writer, for
/// both writes their senders wait on.
pub trait LedgerHook: Send + Sync + 'static {
    /// Whether the transaction `signature` is one to apply in its ledger write (its sender
    /// waits for it to be applied).
    fn wants(&self, signature: &str) -> bool;

    /// The part of the ledger write's statement that applies `txs`, its parameters numbered
    /// after those in `arguments` and added there; `None` (and nothing added) to write the
    /// ledger rows alone. An error fails the write, which is then made without the hook.
    fn part(&self, txs: &[&ConfirmedTransaction], arguments: &mut PgArguments) -> Result<Option<LedgerPart>, BoxDynError>;

    /// `txs`, applied by the part, are committed.
    fn applied(&self, txs: &[&ConfirmedTransaction]);
}

/// What a hook adds to the ledger write's statement.
#[derive(Debug)]
pub struct LedgerPart {
    /// Common table expressions (`name AS (…)`, comma-separated) to follow the ledger's own
    /// (`landed`, `ledger`, `upserted`, `closed`, `by_account`: its names must differ).
    pub ctes: String,
    /// A boolean expression over them: whether the transactions were applied.
    pub applied: String,
}
