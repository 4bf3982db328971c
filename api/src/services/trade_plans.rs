//! The reads a trade makes before it is signed — its market's plan, and what its trader can
//! spend (a buy) or holds (a sell) — for the trades of a moment in one statement, on a
//! connection of its own (`GroupQueue`, as the chain's ledger writes and the projection do).
//! One statement a trade on a pooled connection was each trade's only statement of its own,
//! and sqlx checks a pooled connection with a round trip each time it is given back: two round
//! trips a trade, and a Postgres backend woken for each.

use std::sync::Arc;

use group_commit::{self, GroupQueue};
use sqlx::{PgConnection, PgPool};
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::store::markets::{self, MarketPlan, TradeRead, TraderAmount};

/// A read's answer from its group: the plan and amount (`None`: no such market). A group whose
/// statement failed drops its answers, and each caller reads alone, to get its own error.
type Answer = Option<(MarketPlan, u64)>;

pub struct TradePlans {
    db: PgPool,
    /// The reads waiting, and the turn: the connection groups are read on (out of the pool,
    /// `None` until the first group and after a failure).
    waiting: GroupQueue<(TradeRead, oneshot::Sender<Answer>), Option<PgConnection>>,
}

impl TradePlans {
    pub fn new(db: PgPool) -> TradePlans {
        TradePlans { db, waiting: GroupQueue::new("trade_reads", None) }
    }

    /// Market `market`'s plan with `wallet`'s `amount`, or `None` if there is no such market:
    /// read with the reads of the trades of the same moment. The group is read in a task of its
    /// own, so a caller that goes away mid-way does not abandon the others' reads.
    pub async fn read(self: &Arc<Self>, market: Uuid, wallet: &str, amount: TraderAmount) -> Result<Answer, sqlx::Error> {
        let (answer, answered) = oneshot::channel();
        self.waiting.push((TradeRead { market, wallet: wallet.to_owned(), amount }, answer));
        let plans = self.clone();
        tokio::spawn(async move { plans.read_waiting().await });
        match answered.await {
            Ok(found) => Ok(found),
            // The group's statement failed, or its task panicked.
            Err(_) => markets::plan_for_trader(&self.db, TradeRead { market, wallet: wallet.to_owned(), amount }).await,
        }
    }

    /// Reads every group waiting (nothing if another task has the turn: see
    /// `GroupQueue::turn_after_woken`).
    async fn read_waiting(&self) {
        let mut turn = self.waiting.turn_after_woken().await;
        while let Some((connection, group)) = turn.next_group() {
            let (reads, answers): (Vec<TradeRead>, Vec<oneshot::Sender<Answer>>) = group.into_iter().unzip();
            let read = group_commit::on_own_connection(connection, &self.db, async |connection| markets::plans_for_traders(connection, &reads).await).await;
            match read {
                Ok(found) => {
                    for (answer, found) in answers.into_iter().zip(found) {
                        let _ = answer.send(found);
                    }
                }
                // The answers are dropped: each caller reads alone.
                Err(e) => tracing::warn!(error = %e, reads = reads.len(), "grouped trade reads failed; each is read alone"),
            }
        }
    }
}
