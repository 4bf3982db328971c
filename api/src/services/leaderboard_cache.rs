//! The leaderboard's rankings kept in memory: for each period start and ordering, the top
//! `TOP` traders, so a leaderboard request costs no database round trip while nothing changes.
//! A period's rankings add up a day row per trader per day (23,000 weekly traders: about 13 ms
//! of Postgres per request), so this is what keeps `GET /v1/leaderboard` in the read path's
//! class.
//!
//! Kept exact by Postgres notices (triggers `notify_leaderboard*`): a statement that changes `trader_stats` (the
//! projection's trades and payouts) or a display name notifies `fm_leaderboard` when it
//! commits. A ranking is served only while no notice has arrived since the read it came from
//! began, so an answer reflects every change whose notice has arrived (a millisecond or two
//! after the commit on one machine) — the same promise the series listing makes. After a
//! notice, the next request of each ranking reads it again; concurrent requests wait for that
//! one read instead of each making their own. Rankings are served only while the listener is
//! connected: when its connection drops (notices may have been lost) everything is forgotten
//! and every request reads Postgres until it listens again.
//!
//! The period's start is part of a ranking's key, so a new UTC day starts new rankings, and the
//! 24-hour window's, a whole second, a new ranking each second it is asked for: its window
//! moves with the clock, not only with notices. A newer window's ranking replaces the older.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sqlx::PgPool;

use super::key_gates::KeyGates;
use super::notices::Version;
use crate::domain::portfolio::{PeriodStart, SortBy};
use crate::store::positions::{self, LeaderRow};

const CHANNEL: &str = "fm_leaderboard";
/// Traders held per ranking: the most a request may ask for.
pub const TOP: i64 = 100;

type Key = (Option<PeriodStart>, SortBy);
type Ranking = Arc<Vec<LeaderRow>>;

pub struct LeaderboardCache {
    /// Bumped by every notice (and connect or drop of the listener).
    version: Arc<Version>,
    /// Each ranking with the version its read began at: current while that version holds.
    rankings: Mutex<HashMap<Key, (u64, Ranking)>>,
    /// One read of each ranking at a time (the others wait for it and take what it read).
    reading: KeyGates<Key>,
}

impl Default for LeaderboardCache {
    fn default() -> LeaderboardCache {
        LeaderboardCache { version: Arc::new(Version::new(CHANNEL)), rankings: Mutex::default(), reading: KeyGates::default() }
    }
}

impl LeaderboardCache {
    pub fn new() -> LeaderboardCache {
        LeaderboardCache::default()
    }

    /// The first `limit` (at most `TOP`) traders active since `since` (all time when `None`),
    /// best first by `sort`: from memory while current, else read (and kept). With them, the
    /// version they are current at (`None`: read while changes could not be heard).
    pub async fn top(&self, db: &PgPool, since: Option<PeriodStart>, sort: SortBy, limit: i64) -> Result<(Vec<LeaderRow>, Option<u64>), sqlx::Error> {
        let limit = limit.clamp(0, TOP) as usize;
        let first = |top: &Ranking, version: Option<u64>| (top.iter().take(limit).cloned().collect(), version);
        let key = (since, sort);
        let Some(version) = self.version.current(db) else {
            return Ok((positions::leaderboard(db, since, sort, limit as i64).await?, None));
        };
        if let Some(top) = self.held(&key, version) {
            return Ok(first(&top, Some(version)));
        }
        let _one_read = self.reading.turn(&key).await;
        // Read by whoever held the gate before us, after the change that made us wait?
        let version = self.version.now();
        if let Some(v) = version
            && let Some(top) = self.held(&key, v)
        {
            return Ok(first(&top, version));
        }
        // Read after `version` began: current at it.
        let top = Arc::new(positions::leaderboard(db, since, sort, TOP).await?);
        if let Some(version) = version {
            let mut rankings = self.rankings.lock().unwrap();
            // Out-of-date rankings (a past day's among them) go as a new one comes.
            rankings.retain(|_, (read_at, _)| *read_at == version);
            if let Some(PeriodStart::After(newest)) = since {
                rankings.retain(|(start, _), _| !matches!(start, Some(PeriodStart::After(older)) if *older < newest));
            }
            rankings.insert(key, (version, Arc::clone(&top)));
        }
        Ok(first(&top, version))
    }

    /// The current version of the rankings, listening from the first call on (`None` while
    /// not listening).
    pub fn version(&self, db: &PgPool) -> Option<u64> {
        self.version.current(db)
    }

    /// The ranking of `key`, if it was read at `version`.
    fn held(&self, key: &Key, version: u64) -> Option<Ranking> {
        self.rankings.lock().unwrap().get(key).filter(|(read_at, _)| *read_at == version).map(|(_, top)| Arc::clone(top))
    }

    /// How many rankings are held and current (tests).
    pub fn current_rankings(&self) -> usize {
        let Some(version) = self.version.now() else { return 0 };
        self.rankings.lock().unwrap().values().filter(|(read_at, _)| *read_at == version).count()
    }
}
