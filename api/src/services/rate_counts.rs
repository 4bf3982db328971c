//! Rate-limit window counts kept in this process and reconciled with Redis in batches, so a request costs
//! no Redis round trip while replicas still share their limits.
//!
//! Every bucket-window (`WindowKey`; in Redis a key such as `ns:rl:ip:203.0.113.9:29460712`) has
//! a local entry:
//! `synced`, the count Redis last answered (every replica's requests up to then, ours included),
//! and `unsynced`, what this replica counted since. A request is decided on `synced + unsynced`
//! with no I/O. A background pass every `sync_every` sends each touched entry's `unsynced` with
//! one pipelined `INCRBY` per key and takes the answer as the new `synced`.
//!
//! An entry that is new (the first request of a window here) or stale (not synced for two
//! passes) is synced before its request is decided — one round trip, so a replica never decides
//! on a count older than two passes. Requests arriving while that sync is in flight count
//! locally at once.
//!
//! Error bound: within one replica the count is exact (every request is counted exactly once,
//! locally, and sent once), but for a window's first sync abandoned by its request (its client
//! gone before Redis answered), whose amount is sent again and may be counted twice: never
//! fewer. Across replicas a decision misses at most what the *other* replicas
//! admitted for that bucket in the last two passes (200 ms by default): with R replicas serving
//! one client evenly at r requests/s, at most ·r·0.2 requests beyond the limit per window.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use client_limits::IpBucket;
use uuid::Uuid;

use crate::store::cache::Redis;

const SHARDS: usize = 16;

/// One window of one bucket: what a request is counted in. A plain value, so counting a request
/// here makes no text; its Redis key (`{namespace}:rl:{kind}:{who}:{window}`) is made when it is
/// sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WindowKey {
    /// The bucket's kind (`ip`, `key`, `user`, `trade`, `rpc`, `keyfail`, `webhookfail`).
    pub kind: &'static str,
    pub who: Who,
    /// The window's index: Unix seconds divided by the window's length.
    pub window: u64,
}

/// Whose a bucket is: a client address, or a user's or an API key's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Who {
    Ip(IpBucket),
    Id(Uuid),
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Who::Ip(ip) => ip.fmt(f),
            Who::Id(id) => id.fmt(f),
        }
    }
}

impl fmt::Display for WindowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.kind, self.who, self.window)
    }
}

/// The process's window counts.
pub struct WindowCounts {
    shards: Vec<Mutex<HashMap<WindowKey, Entry>>>,
    hasher: RandomState,
    sync_every: Duration,
    syncing: OnceLock<()>,
}

#[derive(Debug)]
struct Entry {
    /// Redis's count at the last sync (all replicas).
    synced: u64,
    /// Counted here since (sent, if a sync is in flight, only once its answer arrives).
    unsynced: u64,
    /// When `synced` was read; `None` before the first answer.
    synced_at: Option<Instant>,
    /// A sync of this entry is in flight (its amount is subtracted when it answers).
    in_flight: bool,
    /// Counted here since the last pass.
    touched: bool,
    /// The key's lifetime in Redis (twice the window: it outlives clock skew between replicas).
    ttl_secs: u64,
    /// Unix second after which the window is over and the entry can go once sent.
    ends_at: u64,
}

/// The current Unix second, as windows are counted and end (`ends_at`).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

/// Redis did not answer an entry's first sync: the caller serves the request unlimited.
#[derive(Debug)]
pub struct Unavailable;

impl WindowCounts {
    pub fn new(sync_every: Duration) -> WindowCounts {
        WindowCounts { shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(), hasher: RandomState::new(), sync_every, syncing: OnceLock::new() }
    }

    fn shard(&self, key: &WindowKey) -> &Mutex<HashMap<WindowKey, Entry>> {
        &self.shards[self.hasher.hash_one(key) as usize % SHARDS]
    }

    /// Counts one request in `key` (a window ending at `ends_at`, kept `ttl_secs` in Redis) and
    /// returns the window's count with it. `budget` bounds the one round trip a new or stale
    /// entry takes.
    pub async fn add(self: &Arc<Self>, redis: &Redis, key: WindowKey, ends_at: u64, ttl_secs: u64, budget: Duration) -> Result<u64, Unavailable> {
        self.count(redis, key, 1, ends_at, ttl_secs, budget).await
    }

    /// The window's count without counting (the failed-key check), synced like `add`.
    pub async fn peek(self: &Arc<Self>, redis: &Redis, key: WindowKey, ends_at: u64, ttl_secs: u64, budget: Duration) -> Result<u64, Unavailable> {
        self.count(redis, key, 0, ends_at, ttl_secs, budget).await
    }

    async fn count(self: &Arc<Self>, redis: &Redis, key: WindowKey, by: u64, ends_at: u64, ttl_secs: u64, budget: Duration) -> Result<u64, Unavailable> {
        self.start_syncing(redis);
        let stale_after = 2 * self.sync_every;
        let sending = {
            let mut shard = self.shard(&key).lock().unwrap();
            let entry =
                shard.entry(key).or_insert_with(|| Entry { synced: 0, unsynced: 0, synced_at: None, in_flight: false, touched: false, ttl_secs, ends_at });
            entry.unsynced += by;
            entry.touched |= by > 0;
            let fresh = entry.synced_at.is_some_and(|at| at.elapsed() <= stale_after);
            if fresh || entry.in_flight {
                return Ok(entry.synced + entry.unsynced);
            }
            entry.in_flight = true;
            entry.unsynced
        };
        // New or stale: ask Redis before deciding. The round trip's future is boxed: it is
        // large, and inline it would make every request's future as large, moved into a box
        // per request though almost none of them take this path.
        let abandoned = Abandoned { counts: self, key };
        let answer = Box::pin(tokio::time::timeout(budget, send(redis, &[(key, sending, ttl_secs)]))).await;
        std::mem::forget(abandoned);
        let mut shard = self.shard(&key).lock().unwrap();
        match answer {
            Ok(Ok(counts)) => {
                let entry = shard.get_mut(&key).expect("an entry in flight is never removed");
                settle(entry, sending, counts[0]);
                // This request was the last of those sent: Redis's answer is its place. (Those
                // counted here meanwhile were decided on what was known then.)
                Ok(counts[0])
            }
            _ => {
                // Served unlimited; the entry goes, so the next request asks again.
                shard.remove(&key);
                Err(Unavailable)
            }
        }
    }

    /// Starts the background pass (once per process, on first use: it needs the runtime).
    fn start_syncing(self: &Arc<Self>, redis: &Redis) {
        self.syncing.get_or_init(|| {
            tokio::spawn(sync_forever(Arc::downgrade(self), redis.clone(), self.sync_every));
        });
    }

    /// One pass: sends every touched entry's count, takes Redis's answers, and drops entries of
    /// windows that are over and fully sent.
    pub async fn sync(&self, redis: &Redis) {
        let now = unix_now();
        let mut batch = Vec::new();
        for shard in &self.shards {
            let mut shard = shard.lock().unwrap();
            // A window that is over decides nothing more: its unsent remainder can go with it.
            shard.retain(|_, e| e.in_flight || e.ends_at >= now);
            for (key, entry) in shard.iter_mut().filter(|(_, e)| e.touched && !e.in_flight) {
                entry.in_flight = true;
                entry.touched = false;
                batch.push((*key, entry.unsynced, entry.ttl_secs));
            }
        }
        if batch.is_empty() {
            return;
        }
        let answer = send(redis, &batch).await;
        for (i, (key, sending, _)) in batch.iter().enumerate() {
            let mut shard = self.shard(key).lock().unwrap();
            let Some(entry) = shard.get_mut(key) else { continue };
            match &answer {
                Ok(counts) => settle(entry, *sending, counts[i]),
                // Kept unsynced (sent with the next pass), and marked stale so a decision on it
                // asks Redis first.
                Err(_) => {
                    entry.in_flight = false;
                    entry.touched = true;
                }
            }
        }
        if let Err(e) = answer {
            tracing::warn!(error = %e, keys = batch.len(), "rate limit counts not synced; kept for the next pass");
        }
    }
}

/// An entry's round trip, until its answer arrives: dropped before that (the request's future
/// dropped while it waits, as when its client goes away), it leaves the entry as a failed sync
/// does: not in flight, its amount unsynced and sent with the next pass. Otherwise the entry
/// would stay in flight, never sent again nor dropped. Should Redis have applied the abandoned
/// `INCRBY`, the amount is counted twice: the limit is reached a few requests early, never
/// late.
struct Abandoned<'a> {
    counts: &'a WindowCounts,
    key: WindowKey,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if let Some(entry) = self.counts.shard(&self.key).lock().unwrap().get_mut(&self.key) {
            entry.in_flight = false;
            entry.touched = true;
        }
    }
}

/// Takes Redis's answer for an entry that sent `sent`.
fn settle(entry: &mut Entry, sent: u64, count: u64) {
    entry.synced = count;
    entry.unsynced -= sent;
    entry.synced_at = Some(Instant::now());
    entry.in_flight = false;
}

/// Adds each `(key, amount, ttl_secs)` of `batch` to its Redis key: the counts after, in order.
async fn send(redis: &Redis, batch: &[(WindowKey, u64, u64)]) -> Result<Vec<u64>, redis::RedisError> {
    let keyed: Vec<(String, u64, u64)> = batch.iter().map(|(key, amount, ttl)| (redis.key("rl", key), *amount, *ttl)).collect();
    redis.add_to_counts(&keyed).await
}

async fn sync_forever(counts: Weak<WindowCounts>, redis: Redis, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(counts) = counts.upgrade() else { return };
        counts.sync(&redis).await;
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use futures_util::FutureExt;

    use super::*;

    fn redis(namespace: &str) -> Redis {
        let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        Redis::new(&url, Duration::from_secs(2), namespace).unwrap()
    }

    fn ip(text: &str) -> Who {
        Who::Ip(IpBucket::of(text.parse::<IpAddr>().unwrap()))
    }

    #[test]
    fn a_window_has_the_redis_key_every_replica_counts_it_under() {
        let redis = redis("ns");
        let key = |kind, who, window| redis.key("rl", WindowKey { kind, who, window });
        assert_eq!(key("ip", ip("203.0.113.9"), 29_460_712), "ns:rl:ip:203.0.113.9:29460712");
        assert_eq!(key("keyfail", ip("2001:db8:1:2:aaaa::1"), 7), "ns:rl:keyfail:2001:db8:1:2::/64:7");
        let id = Uuid::parse_str("0b3d5c38-4f1e-4f57-9d5e-3f1c2c0f2a11").unwrap();
        assert_eq!(key("user", Who::Id(id), 491_011), "ns:rl:user:0b3d5c38-4f1e-4f57-9d5e-3f1c2c0f2a11:491011");
    }

    #[tokio::test]
    async fn a_round_trip_dropped_before_its_answer_leaves_its_count_for_the_next_pass() {
        let redis = redis(&format!("rate-counts-test-{}", Uuid::new_v4().simple()));
        let counts = Arc::new(WindowCounts::new(Duration::from_secs(3600)));
        // No background pass: this test makes its own.
        counts.syncing.set(()).unwrap();
        let key = WindowKey { kind: "ip", who: ip("203.0.113.9"), window: unix_now() / 60 };
        let ends_at = unix_now() + 60;
        // The window's first request asks Redis; its future is dropped before the answer.
        assert!(counts.add(&redis, key, ends_at, 120, Duration::from_secs(2)).now_or_never().is_none());
        {
            let shard = counts.shard(&key).lock().unwrap();
            let entry = &shard[&key];
            assert!(!entry.in_flight && entry.touched, "{entry:?}");
            assert_eq!((entry.unsynced, entry.synced_at), (1, None));
        }
        // The next pass sends it; the next request is decided on Redis's count.
        counts.sync(&redis).await;
        assert_eq!(counts.add(&redis, key, ends_at, 120, Duration::from_secs(2)).await.unwrap(), 2);
        let shard = counts.shard(&key).lock().unwrap();
        assert_eq!((shard[&key].synced, shard[&key].unsynced), (1, 1));
    }
}
