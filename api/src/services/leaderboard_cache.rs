//! The leaderboard's rankings kept in memory: for each period start and ordering, the top
//! `TOP` traders, so a leaderboard request costs no database round trip while nothing changes.
//! A period's rankings add up a day row per trader per day (23,000 weekly traders: about 13 ms
//! of Postgres per request), so this is what keeps `GET /v1/leaderboard` in the read path's
//! class.
//!
//! Kept exact by Postgres notices (migration 31): a statement that changes `trader_stats` (the
//! projection's trades and payouts) or a display name notifies `fm_leaderboard` when it
//! commits. A ranking is served only while no notice has arrived since the read it came from
//! began, so an answer reflects every change whose notice has arrived (a millisecond or two
//! after the commit on one machine) — the same promise the series listing makes. After a
//! notice, the next request of each ranking reads it again; concurrent requests wait for that
//! one read instead of each making their own. Rankings are served only while the listener is
//! connected: when its connection drops (notices may have been lost) everything is forgotten
//! and every request reads Postgres until it listens again.
//!
//! The period's first day is part of a ranking's key, so a new UTC day starts new rankings.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use chrono::NaiveDate;
use sqlx::PgPool;

use super::notices::{self, Listening};
use crate::domain::portfolio::SortBy;
use crate::store::positions::{self, LeaderRow};

const CHANNEL: &str = "fm_leaderboard";
/// Traders held per ranking: the most a request may ask for.
pub const TOP: i64 = 100;

type Key = (Option<NaiveDate>, SortBy);

#[derive(Default)]
pub struct LeaderboardCache {
    state: Mutex<Held>,
    /// One read of each ranking at a time (the others wait for it and take what it read).
    reading: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>,
    started: OnceLock<()>,
}

#[derive(Default)]
struct Held {
    /// The listener is connected: every change from here on will be notified.
    live: bool,
    /// Bumped by every notice and every connect or drop of the listener: a read begun before
    /// a bump may be out of date and is not kept.
    changes: u64,
    /// Rankings read since the last change.
    rankings: HashMap<Key, Arc<Vec<LeaderRow>>>,
}

impl LeaderboardCache {
    pub fn new() -> LeaderboardCache {
        LeaderboardCache::default()
    }

    /// The first `limit` (at most `TOP`) traders active since `since` (all time when `None`),
    /// best first by `sort`: from memory while current, else read (and kept).
    pub async fn top(self: &Arc<Self>, db: &PgPool, since: Option<NaiveDate>, sort: SortBy, limit: i64) -> Result<Vec<LeaderRow>, sqlx::Error> {
        let limit = limit.clamp(0, TOP) as usize;
        self.start_listening(db);
        let key = (since, sort);
        if let Some(top) = self.current(&key) {
            return Ok(top.iter().take(limit).cloned().collect());
        }
        let gate = self.gate(key);
        let _one_read = gate.lock().await;
        // Read by whoever held the gate before us, after the change that made us wait?
        if let Some(top) = self.current(&key) {
            return Ok(top.iter().take(limit).cloned().collect());
        }
        let (live, changes) = {
            let held = self.state.lock().unwrap();
            (held.live, held.changes)
        };
        let top = Arc::new(positions::leaderboard(db, since, sort, TOP).await?);
        if live {
            let mut held = self.state.lock().unwrap();
            if held.live && held.changes == changes {
                held.rankings.insert(key, Arc::clone(&top));
            }
        }
        Ok(top.iter().take(limit).cloned().collect())
    }

    /// The held ranking, if it is current (listening, and no change since its read began).
    fn current(&self, key: &Key) -> Option<Arc<Vec<LeaderRow>>> {
        let held = self.state.lock().unwrap();
        held.rankings.get(key).filter(|_| held.live).map(Arc::clone)
    }

    /// The gate of one ranking's reads. A day's keys stop being asked for when the day ends:
    /// gates nobody holds are dropped once there are many.
    fn gate(&self, key: Key) -> Arc<tokio::sync::Mutex<()>> {
        let mut gates = self.reading.lock().unwrap();
        if gates.len() > 64 {
            gates.retain(|_, gate| Arc::strong_count(gate) > 1);
        }
        Arc::clone(gates.entry(key).or_default())
    }

    /// How many rankings are held and current (tests).
    pub fn current_rankings(&self) -> usize {
        let held = self.state.lock().unwrap();
        if held.live { held.rankings.len() } else { 0 }
    }

    fn start_listening(self: &Arc<Self>, db: &PgPool) {
        self.started.get_or_init(|| {
            tokio::spawn(listen(Arc::downgrade(self), db.clone()));
        });
    }
}

async fn listen(cache: Weak<LeaderboardCache>, db: PgPool) {
    notices::listen(db, CHANNEL, |event| {
        let Some(cache) = cache.upgrade() else { return false };
        let mut held = cache.state.lock().unwrap();
        match event {
            Listening::Connected => held.live = true,
            Listening::Notice(_) => {}
            Listening::Lost => held.live = false,
        }
        // Whatever is held may be out of date now.
        held.changes += 1;
        held.rankings.clear();
        true
    })
    .await
}
