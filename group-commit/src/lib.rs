//! Group commit's hand-off: work queued by many tasks (transactions to write, to project; the
//! service's pre-trade reads) and done a group at a time — everything queued when the worker
//! is free — by whichever task finds the worker free. The others do not wait for the worker:
//! whoever has it does their work before letting go. (A queue of tasks each taking the worker
//! in turn, most of them to find nothing left, held every next group back by a task wake-up
//! apiece: under load the wait for a turn grew to ten times the turn.)
//!
//! A task that panics while working drops its group (its callers learn it from their dropped
//! answer channels); what is still queued is done by the next task to take a turn.
//!
//! Each queue is named, and every group is recorded by name: its size (`fm_group_size`) and the
//! time its turn worked on it (`fm_group_work_seconds`, from the hand-out to the next look at
//! the queue). A queue's work is one group at a time, so the rate of that time's sum is the
//! share of time its worker was busy: near 1 it is saturated, and its callers wait for groups
//! ahead of theirs.

use std::sync::Mutex;
use std::time::Instant;

use sqlx::{PgConnection, PgPool};

/// Items queued by many tasks and the one worker (a connection, say) that does them, a group
/// at a time, for whichever task has its turn.
pub struct GroupQueue<T, W> {
    /// The `queue` label of the queue's metrics.
    name: &'static str,
    queue: Mutex<Vec<T>>,
    worker: tokio::sync::Mutex<W>,
}

impl<T, W> GroupQueue<T, W> {
    pub fn new(name: &'static str, worker: W) -> GroupQueue<T, W> {
        GroupQueue { name, queue: Mutex::new(Vec::new()), worker: tokio::sync::Mutex::new(worker) }
    }

    pub fn push(&self, item: T) {
        self.queue().push(item);
    }

    /// The turn to do what is queued, a group at a time (`Turn::next_group`), until nothing is left
    /// — or nothing at all if another task has the worker: that one does what is queued, this
    /// caller's included, before it lets go. Take it in a task of its own where the caller must
    /// not wait for groups queued after its own.
    pub fn turn(&self) -> Turn<'_, T, W> {
        Turn { queue: self, worker: None, group_began: None }
    }

    /// `turn`, taken once the tasks already woken have run. Work arrives in bursts — the
    /// callers a ledger group answers are woken together and each queues its transaction to be
    /// projected; senders leave the bank one after another, each queueing its landing — and a
    /// turn taken at once by the first of a burst held its item alone, leaving the rest to the
    /// next group. After a yield it finds theirs queued too. A projection statement costs most
    /// of its time whatever the group's size — one of sixteen trades about twice one of one — so
    /// on a busy machine fewer, larger groups
    /// are less work; on an idle one the yield costs one pass of the scheduler.
    pub async fn turn_after_woken(&self) -> Turn<'_, T, W> {
        tokio::task::yield_now().await;
        self.turn()
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Vec<T>> {
        self.queue.lock().expect("a group queue is never poisoned")
    }
}

/// A task's turn at the worker (`GroupQueue::turn`).
pub struct Turn<'a, T, W> {
    queue: &'a GroupQueue<T, W>,
    worker: Option<tokio::sync::MutexGuard<'a, W>>,
    /// When the last group was handed out: its work ends at the next call of `next_group` (or when
    /// the turn is dropped).
    group_began: Option<Instant>,
}

impl<T, W> Turn<'_, T, W> {
    /// The worker and everything queued, in queued order; `None` once nothing is left, or if
    /// another task has the worker. Ends the group handed out before (see `GroupQueue`).
    pub fn next_group(&mut self) -> Option<(&mut W, Vec<T>)> {
        self.end_group();
        loop {
            if self.worker.is_none() {
                self.worker = Some(self.queue.worker.try_lock().ok()?);
            }
            let group = std::mem::take(&mut *self.queue.queue());
            if !group.is_empty() {
                metrics::histogram!("fm_group_size", "queue" => self.queue.name).record(group.len() as f64);
                self.group_began = Some(Instant::now());
                return self.worker.as_deref_mut().map(|worker| (worker, group));
            }
            if !self.let_go() {
                return None;
            }
        }
    }

    /// Lets the worker go, and tells whether anything was queued meanwhile: by a task that
    /// found the worker taken after this turn's last look, and left it to this turn.
    fn let_go(&mut self) -> bool {
        self.worker = None;
        !self.queue.queue().is_empty()
    }

    fn end_group(&mut self) {
        if let Some(began) = self.group_began.take() {
            metrics::histogram!("fm_group_work_seconds", "queue" => self.queue.name).record(began.elapsed().as_secs_f64());
        }
    }
}

impl<T, W> Drop for Turn<'_, T, W> {
    /// A turn dropped with a group in hand (its task ended or panicked) ends that group too.
    fn drop(&mut self) {
        self.end_group();
    }
}

/// A connection of a worker's own, out of the pool (a queue's turn on Postgres): its
/// statements are planned once for every execution (`plan_cache_mode = force_generic_plan` for
/// the session, which no other user of the pool should inherit). The statements a turn runs are
/// few and take arrays of any length, so one plan serves every group, where planning them for
/// each group cost as much as running them. The generic plan is made again whenever a table's
/// statistics change (an ANALYZE invalidates it), so a plan made while a table was small does
/// not outlive its growth.
pub async fn own_connection(db: &PgPool) -> Result<PgConnection, sqlx::Error> {
    let mut connection = db.acquire().await?.detach();
    sqlx::query("SET plan_cache_mode = force_generic_plan").execute(&mut connection).await?;
    Ok(connection)
}

/// `work` on a turn's own connection (`own_connection`): opened on first use and kept from one
/// group to the next — a pooled connection taken and given back for each group cost two more
/// round trips (sqlx pings a connection it takes back) — and closed once `work` fails on it, so
/// the next group opens another.
pub async fn on_own_connection<R>(
    own: &mut Option<PgConnection>,
    db: &PgPool,
    work: impl AsyncFnOnce(&mut PgConnection) -> Result<R, sqlx::Error>,
) -> Result<R, sqlx::Error> {
    let connection = match own {
        Some(connection) => connection,
        None => own.insert(own_connection(db).await?),
    };
    let done = work(connection).await;
    if done.is_err() {
        *own = None;
    }
    done
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::GroupQueue;

    /// The race `let_go` closes, step by step: a turn has the worker and has found nothing
    /// queued; another task queues an item and finds the worker taken; the first turn, letting
    /// go, does the item.
    #[tokio::test]
    async fn an_item_queued_as_the_worker_is_let_go_is_done() {
        let queue: GroupQueue<u32, ()> = GroupQueue::new("test", ());
        let mut first = queue.turn();
        first.worker = Some(queue.worker.try_lock().unwrap());
        queue.push(7);
        assert!(queue.turn().next_group().is_none(), "the worker is taken: the item is left to the turn that has it");
        assert!(first.let_go(), "letting go, the turn sees the item");
        let (_, group) = first.next_group().expect("and does it");
        assert_eq!(group, vec![7]);
        assert!(first.next_group().is_none());
    }

    /// A task each for `items`, all spawned at once: each queues its item and then does what
    /// is queued while it has the turn, taken at once or after the others woken. Returns once
    /// every task has, with the groups done, in order.
    async fn queue_and_work(items: std::ops::Range<u32>, after_woken: bool) -> (Arc<GroupQueue<u32, Vec<Vec<u32>>>>, Vec<Vec<u32>>) {
        let queue = Arc::new(GroupQueue::new("test", Vec::new()));
        let tasks: Vec<_> = items
            .map(|i| {
                let queue = queue.clone();
                tokio::spawn(async move {
                    queue.push(i);
                    let mut turn = if after_woken { queue.turn_after_woken().await } else { queue.turn() };
                    while let Some((done, group)) = turn.next_group() {
                        done.push(group);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let groups = std::mem::take(&mut *queue.worker.lock().await);
        (queue, groups)
    }

    /// Tasks woken together that each queue an item and then take a turn after the others
    /// woken (`turn_after_woken`) make one group, where taking the turn at once made a group
    /// of each (on one thread, each task's turn ends before the next task runs).
    #[tokio::test(flavor = "current_thread")]
    async fn tasks_woken_together_make_one_group() {
        for (after_woken, expected) in [(true, vec![5]), (false, vec![1, 1, 1, 1, 1])] {
            let (_, groups) = queue_and_work(0..5, after_woken).await;
            let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
            assert_eq!(sizes, expected, "after_woken = {after_woken}");
        }
    }

    /// Many tasks queueing and taking turns at once, round after round: every item is done
    /// exactly once, and nothing is left queued once every task has returned — an item queued
    /// while a turn was letting go is not stranded. Rounds alternate the turn taken at once and
    /// after the others woken.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn every_item_is_done_once_and_none_is_left_queued() {
        for round in 0..200 {
            let (queue, groups) = queue_and_work(0..200, round % 2 == 1).await;
            assert!(queue.queue().is_empty(), "round {round}: items left queued with no one to do them");
            let mut all: Vec<u32> = groups.into_iter().flatten().collect();
            all.sort();
            assert_eq!(all, (0..200).collect::<Vec<_>>(), "round {round}");
        }
    }
}
