//! What quotes are computed from, kept in memory: each market's pricing state (status, trading
//! window, `b`, `q_yes`, `q_no`), so a quote costs no database round trip.
//!
//! Kept current by Postgres itself: a trigger on `markets` notifies `fm_market_terms` with the
//! market's id whenever one of those columns changes (migration 25), in the changing
//! transaction, so the notice arrives once it commits; this process's listener drops the entry
//! and the next quote reads the row again. Staleness is therefore the notice's delivery, a
//! millisecond or two on one machine (`api/tests/api/markets.rs` measures it and requires it
//! under a second). Entries are served only while the listener is connected: when its
//! connection drops (notices sent meanwhile are lost) everything is forgotten, and quotes read
//! Postgres until it listens again.
//!
//! A row read while a change commits may be the old one; a generation counter, bumped under
//! the same lock by every invalidation, keeps such a read from being cached.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock, Weak};
use sqlx::PgPool;
use uuid::Uuid;

use super::notices::{self, Listening};

use crate::domain::quote::PricedMarket;
use crate::store::markets;

/// The channel the trigger notifies.
const CHANNEL: &str = "fm_market_terms";
/// Entries kept at most (open markets are a few tens of thousands); past it the map starts over.
const CAPACITY: usize = 200_000;

#[derive(Default)]
pub struct MarketCache {
    entries: RwLock<HashMap<Uuid, PricedMarket>>,
    /// Bumped by every invalidation (under the write lock).
    generation: AtomicU64,
    /// The listener is connected: what is cached will be invalidated.
    live: AtomicBool,
    started: OnceLock<()>,
}

impl MarketCache {
    pub fn new() -> MarketCache {
        MarketCache::default()
    }

    /// Market `id`'s pricing state: from memory, or read (and kept) when absent.
    pub async fn priced(self: &Arc<Self>, db: &PgPool, id: Uuid) -> Result<Option<PricedMarket>, sqlx::Error> {
        self.start_listening(db);
        if self.live.load(Ordering::Acquire)
            && let Some(priced) = self.entries.read().unwrap().get(&id)
        {
            return Ok(Some(*priced));
        }
        let generation = self.generation.load(Ordering::Acquire);
        let read = markets::priced(db, id).await?;
        if let Some(priced) = read {
            let mut entries = self.entries.write().unwrap();
            if self.live.load(Ordering::Acquire) && self.generation.load(Ordering::Acquire) == generation {
                if entries.len() >= CAPACITY {
                    entries.clear();
                }
                entries.insert(id, priced);
            }
        }
        Ok(read)
    }

    /// How many markets are held (tests, metrics).
    pub fn len(&self) -> usize {
        self.entries.read().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn forget(&self, id: Option<Uuid>) {
        let mut entries = self.entries.write().unwrap();
        self.generation.fetch_add(1, Ordering::AcqRel);
        match id {
            Some(id) => {
                entries.remove(&id);
            }
            None => entries.clear(),
        }
    }

    fn start_listening(self: &Arc<Self>, db: &PgPool) {
        self.started.get_or_init(|| {
            tokio::spawn(listen(Arc::downgrade(self), db.clone()));
        });
    }
}

/// Drops the markets the notices name, for as long as the cache exists.
async fn listen(cache: Weak<MarketCache>, db: PgPool) {
    notices::listen(db, CHANNEL, |event| {
        let Some(cache) = cache.upgrade() else { return false };
        match event {
            Listening::Connected => cache.live.store(true, Ordering::Release),
            Listening::Notice(id) => cache.forget(Some(Uuid::parse_str(id).unwrap_or_default())),
            Listening::Lost => {
                cache.live.store(false, Ordering::Release);
                cache.forget(None);
            }
        }
        true
    })
    .await
}
