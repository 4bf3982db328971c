//! One async turn per key: a read model that fills a key from Postgres after a change lets the
//! first request of that key read it while the others of the same key wait for that read and
//! take what it kept, instead of each making the same read (`leaderboard_cache`, the rendered
//! pages of `http::rendered`).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

/// Gates kept before those nobody holds are dropped: callers (clients, days) choose the keys.
const GATES_KEPT: usize = 64;

pub struct KeyGates<K> {
    gates: Mutex<HashMap<K, Arc<tokio::sync::Mutex<()>>>>,
}

impl<K> Default for KeyGates<K> {
    fn default() -> KeyGates<K> {
        KeyGates { gates: Mutex::default() }
    }
}

impl<K: Eq + Hash + Clone> KeyGates<K> {
    /// `key`'s turn, once every earlier taker of it has let go.
    pub async fn turn(&self, key: &K) -> OwnedMutexGuard<()> {
        self.gate(key).lock_owned().await
    }

    /// `key`'s turn if nobody has it or waits for it.
    pub fn try_turn(&self, key: &K) -> Option<OwnedMutexGuard<()>> {
        self.gate(key).try_lock_owned().ok()
    }

    fn gate(&self, key: &K) -> Arc<tokio::sync::Mutex<()>> {
        let mut gates = self.gates.lock().unwrap();
        if gates.len() > GATES_KEPT {
            gates.retain(|_, gate| Arc::strong_count(gate) > 1);
        }
        Arc::clone(gates.entry(key.clone()).or_default())
    }

    /// How many gates are kept (tests).
    pub fn len(&self) -> usize {
        self.gates.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    #[tokio::test]
    async fn a_key_has_one_turn_at_a_time_and_idle_gates_go() {
        let gates = KeyGates::default();
        let first = gates.turn(&1).await;
        // Another key's turn is free; the same key's waits for the first.
        let _other = gates.turn(&2).await;
        assert!(gates.turn(&1).now_or_never().is_none(), "key 1 was taken twice");
        assert!(gates.try_turn(&1).is_none(), "key 1 was tried while taken");
        drop(first);
        assert!(gates.try_turn(&1).is_some(), "key 1 is free to try once let go");
        assert!(gates.turn(&1).now_or_never().is_some(), "key 1 is free once let go");
        // Past the bound, the gates nobody holds are dropped: one over it, the next turn prunes.
        for key in 3..=(GATES_KEPT as i32 + 1) {
            drop(gates.turn(&key).await);
        }
        assert_eq!(gates.len(), GATES_KEPT + 1);
        drop(gates.turn(&1_000).await);
        assert_eq!(gates.len(), 2, "the held gate (key 2) and the newest are kept");
    }
}
