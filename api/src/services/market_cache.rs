//! Market rows kept in memory — what `GET /v1/markets/{id}` shows and what quotes are computed
//! from (status, trading window, `b`, `q_yes`, `q_no`) — so neither costs a database round trip.
//!
//! Kept current by Postgres itself: a trigger on `markets` notifies `fm_market_terms` with the
//! market's id whenever a column the row shows changes (triggers `notify_market_terms_*`; `*`
//! from `notify_market_series` when a series' symbol, exchange or tier would change), in the changing transaction, so the notice
//! arrives once it commits; this process's listener drops the entry and the next read takes
//! the row again. Staleness is therefore the notice's delivery, a millisecond or two on one
//! machine (`api/tests/api/markets.rs` measures it and requires it under a second). A trade
//! sent through this process drops its market itself once the trade is projected, so its
//! caller reads its own trade at once (`forget`). Entries are served only while the listener
//! is connected: when its connection drops (notices sent meanwhile are lost) everything is
//! forgotten, and reads go to Postgres until it listens again.
//!
//! A row read while a change commits may be the old one; a generation counter, bumped under
//! the same lock by every invalidation, keeps such a read from being cached.
//!
//! The requests of a polled market that miss it after a change wait for the first one's read
//! and take the row it kept, instead of each reading the same row (when that read keeps none,
//! they read on their own).
//!
//! The same counter versions the market listing (`GET /v1/markets`, unfiltered or of open
//! markets; the other statuses' listings: below): the trigger also names every new market
//! (`notify_market_terms_insert`), so any change to what a listing shows — a row, a status and
//! with it the counts, a new round — bumps it, and a page rendered at one version is the same
//! page while it holds (`version`).
//!
//! One market's pages (the market, its quotes, trades and price history) are versioned by that
//! market alone (`market_version`): the generation of the latest notice naming it (or of
//! `forget`), or of the latest change to every market (`*`, a reconnection, the map of changes
//! starting over), whichever is later. A trade on one market then leaves every other market's
//! kept pages standing, where the one counter would have each trade anywhere read them all
//! again. A series' settled rounds are versioned the same way by the notices naming the series
//! (`series:<id>`, sent for a row that is or was a settled or voided round: migration 62), so
//! trading leaves them kept (`rounds_version`). Likewise a row that is or was in any status but
//! open names that status (`status:<status>`, migration 64), and a listing of one status follows
//! its notices (`status_version`), so trades on open markets leave it kept too.

use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock, Weak};
use uuid::Uuid;

use super::key_gates::KeyGates;
use super::notices::{self, Listening};

use crate::domain::market::MarketStatus;
use crate::store::markets::{self, MarketRow};

/// The channel the trigger notifies.
const CHANNEL: &str = "fm_market_terms";
/// Rows kept at most, and markets (or series) whose latest change is kept at most (open markets
/// are a few tens of thousands; a row is about 300 bytes, a change about 40); past it the map
/// starts over, and when the changes start over every version moves to the generation then.
const CAPACITY: usize = 100_000;

#[derive(Default)]
pub struct MarketCache {
    held: RwLock<Held>,
    /// Bumped by every invalidation (under the write lock).
    generation: AtomicU64,
    /// The listener is connected: what is cached will be invalidated.
    live: AtomicBool,
    /// The first read of a market missing from memory, which the others wait for.
    reading: KeyGates<Uuid>,
    /// The generation after the latest `forget`.
    own_change: AtomicU64,
    started: OnceLock<()>,
}

#[derive(Default)]
struct Held {
    rows: HashMap<Uuid, Arc<MarketRow>>,
    /// Each market's latest change heard since `all_changed`, by generation.
    changed: HashMap<Uuid, Changed>,
    /// Each series' latest change to its settled rounds heard since `all_changed`.
    rounds_changed: HashMap<Uuid, u64>,
    /// The generation of the latest notice naming each status (every status but open) since
    /// `all_changed`.
    status_changed: HashMap<MarketStatus, u64>,
    /// The generation of the latest change to every market at once (a `*` notice, the listener
    /// connecting or losing its connection, a map of changes starting over): no version is
    /// below it.
    all_changed: u64,
}

#[derive(Clone, Copy, Default)]
struct Changed {
    /// The generation of the latest notice naming the market, or of `forget`.
    heard: u64,
    /// The generation of the latest `forget` of it.
    own: u64,
}

/// A market's version (`MarketCache::market_version`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarketVersion {
    /// Moves with every change to the market's row, trades or price points, and with every
    /// change to all markets at once.
    pub version: u64,
    /// The version after the latest change this process made to the market itself (`forget`),
    /// or after the latest change to every market if that is later: nothing kept before it may
    /// stand in for the pages.
    pub own_change: u64,
}

impl MarketCache {
    pub fn new() -> MarketCache {
        MarketCache::default()
    }

    /// Market `id`'s row: from memory, or read (and kept) when absent.
    pub async fn market(self: &Arc<Self>, db: &PgPool, id: Uuid) -> Result<Option<Arc<MarketRow>>, sqlx::Error> {
        self.start_listening(db);
        if let Some(row) = self.held(id) {
            return Ok(Some(row));
        }
        // The first request to miss reads the row holding the market's turn; the others wait
        // for that read and take the row it kept. If it kept none (a change came during the
        // read, or there is no such market), they read on their own, side by side. Not
        // listening, nothing is kept: nothing to wait for.
        let _first = if !self.live.load(Ordering::Acquire) {
            None
        } else if let Some(turn) = self.reading.try_turn(&id) {
            Some(turn)
        } else {
            drop(self.reading.turn(&id).await);
            if let Some(row) = self.held(id) {
                return Ok(Some(row));
            }
            None
        };
        let generation = self.generation.load(Ordering::Acquire);
        let read = markets::market(db, id).await?.map(Arc::new);
        if let Some(row) = &read {
            let mut held = self.held.write().unwrap();
            if self.live.load(Ordering::Acquire) && self.generation.load(Ordering::Acquire) == generation {
                if held.rows.len() >= CAPACITY {
                    held.rows.clear();
                }
                held.rows.insert(id, Arc::clone(row));
            }
        }
        Ok(read)
    }

    /// Market `id`'s row if it is held (and the listener connected).
    fn held(&self, id: Uuid) -> Option<Arc<MarketRow>> {
        if !self.live.load(Ordering::Acquire) {
            return None;
        }
        self.held.read().unwrap().rows.get(&id).map(Arc::clone)
    }

    /// Drops market `id`, changed by this process (a trade it sent, now projected): the next
    /// read takes the row again, without waiting for the notice.
    pub fn forget(&self, id: Uuid) {
        let generation = self.record(Change::Market { id, own: true });
        self.own_change.fetch_max(generation, Ordering::AcqRel);
    }

    /// The version after the latest change this process made itself (`forget`): its caller
    /// must read it at once, so a page kept at an earlier version is never answered in its
    /// place while the page renders again (`http::rendered`).
    pub fn own_change_version(&self) -> u64 {
        self.own_change.load(Ordering::Acquire)
    }

    /// The version of every market row as the notices have announced them: a listing read after
    /// taking it shows every change up to it, and a later change bumps it. `None` while not
    /// listening (a change would go unseen), so nothing read then is kept.
    pub fn version(self: &Arc<Self>, db: &PgPool) -> Option<u64> {
        self.start_listening(db);
        self.live.load(Ordering::Acquire).then(|| self.generation.load(Ordering::Acquire))
    }

    /// Market `id`'s version as the notices have announced its changes: a page of the market
    /// alone read after taking it shows every change to the market up to it, and a later change
    /// to the market moves it; changes to other markets do not. `None` while not listening.
    pub fn market_version(self: &Arc<Self>, db: &PgPool, id: Uuid) -> Option<MarketVersion> {
        self.start_listening(db);
        self.live.load(Ordering::Acquire).then(|| self.held.read().unwrap().version_of(id))
    }

    /// Series `series`' settled rounds' version as the notices have announced their changes
    /// (as `market_version`; nothing this process does floors it). `None` while not listening.
    pub fn rounds_version(self: &Arc<Self>, db: &PgPool, series: Uuid) -> Option<MarketVersion> {
        self.start_listening(db);
        self.live.load(Ordering::Acquire).then(|| self.held.read().unwrap().rounds_version_of(series))
    }

    /// The version of the markets in `status` as a whole (any status but open: the notices name
    /// those): moves with every notice naming the status (sent for any row that is or was in it)
    /// and with every change to all markets, not with trades on open markets. A listing of that
    /// status read after taking it shows every change to it up to it. `None` while not
    /// listening.
    pub fn status_version(self: &Arc<Self>, db: &PgPool, status: MarketStatus) -> Option<MarketVersion> {
        self.start_listening(db);
        self.live.load(Ordering::Acquire).then(|| self.held.read().unwrap().status_version(status))
    }

    /// How many markets are held (tests, metrics).
    pub fn len(&self) -> usize {
        self.held.read().unwrap().rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records `change` under a new generation (dropping the rows it makes stale); the
    /// generation after.
    fn record(&self, change: Change) -> u64 {
        let mut held = self.held.write().unwrap();
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        match change {
            Change::Market { id, own } => {
                held.rows.remove(&id);
                if held.changed.len() >= CAPACITY && !held.changed.contains_key(&id) {
                    held.everything_changed_at(generation);
                }
                let changed = held.changed.entry(id).or_default();
                changed.heard = generation;
                if own {
                    changed.own = generation;
                }
            }
            Change::Rounds(series) => {
                if held.rounds_changed.len() >= CAPACITY && !held.rounds_changed.contains_key(&series) {
                    held.everything_changed_at(generation);
                }
                held.rounds_changed.insert(series, generation);
            }
            Change::Status(status) => {
                held.status_changed.insert(status, generation);
            }
            Change::All => {
                held.rows.clear();
                held.everything_changed_at(generation);
            }
        }
        generation
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
            Listening::Connected => {
                // A version taken before the connection dropped must not match again.
                cache.record(Change::All);
                cache.live.store(true, Ordering::Release);
            }
            Listening::Notice(notice) => {
                cache.record(Change::of_notice(notice));
            }
            Listening::Lost => {
                cache.live.store(false, Ordering::Release);
                cache.record(Change::All);
            }
        }
        true
    })
    .await
}

/// A change the cache records (`MarketCache::record`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    /// Market `id`'s row, trades or price points; `own`: made by this process (`forget`).
    Market { id: Uuid, own: bool },
    /// Series `id`'s settled or voided rounds.
    Rounds(Uuid),
    /// The markets in a status, any but open (which trades change).
    Status(MarketStatus),
    /// Whatever any market shows: `*` (a series' symbol, exchange or tier, or trades or price
    /// points truncated), the listener connecting or losing its connection.
    All,
}

impl Change {
    /// What a notice's payload names: a market's id, `series:<id>`, `status:<status>`, or `*`.
    /// Anything unreadable is taken as `*`.
    fn of_notice(notice: &str) -> Change {
        if let Some(status) = notice.strip_prefix("status:") {
            return MarketStatus::parse(status).map_or(Change::All, Change::Status);
        }
        let named = match notice.strip_prefix("series:") {
            Some(series) => Uuid::parse_str(series).map(Change::Rounds),
            None => Uuid::parse_str(notice).map(|id| Change::Market { id, own: false }),
        };
        named.unwrap_or(Change::All)
    }
}

impl Held {
    /// Forgets every change recorded: every version moves to `generation`.
    fn everything_changed_at(&mut self, generation: u64) {
        self.changed.clear();
        self.rounds_changed.clear();
        self.status_changed.clear();
        self.all_changed = generation;
    }

    fn version_of(&self, id: Uuid) -> MarketVersion {
        let changed = self.changed.get(&id).copied().unwrap_or_default();
        // A change to every market also ends any stand-in from before it.
        MarketVersion { version: changed.heard.max(self.all_changed), own_change: changed.own.max(self.all_changed) }
    }

    fn rounds_version_of(&self, series: Uuid) -> MarketVersion {
        let changed = self.rounds_changed.get(&series).copied().unwrap_or_default();
        MarketVersion { version: changed.max(self.all_changed), own_change: self.all_changed }
    }

    fn status_version(&self, status: MarketStatus) -> MarketVersion {
        let changed = self.status_changed.get(&status).copied().unwrap_or_default();
        MarketVersion { version: changed.max(self.all_changed), own_change: self.all_changed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(cache: &MarketCache, id: Uuid) -> MarketVersion {
        cache.held.read().unwrap().version_of(id)
    }

    #[test]
    fn a_market_version_moves_with_its_own_changes_and_with_all_markets() {
        let cache = MarketCache::new();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let start = cache.record(Change::All);
        assert_eq!(version(&cache, a), MarketVersion { version: start, own_change: start });

        let heard = cache.record(Change::Market { id: a, own: false });
        assert_eq!(version(&cache, a), MarketVersion { version: heard, own_change: start }, "a notice naming it");
        assert_eq!(version(&cache, b).version, start, "another market's change leaves it");

        cache.forget(b);
        let own = cache.generation.load(Ordering::Acquire);
        assert_eq!(version(&cache, b), MarketVersion { version: own, own_change: own }, "its own change floors it");
        assert_eq!(version(&cache, a).version, heard);
        let again = cache.record(Change::Market { id: b, own: false });
        assert_eq!(version(&cache, b), MarketVersion { version: again, own_change: own }, "a later notice keeps the floor");

        let all = cache.record(Change::All);
        for id in [a, b, Uuid::new_v4()] {
            assert_eq!(version(&cache, id), MarketVersion { version: all, own_change: all }, "`*` moves every market");
        }
    }

    #[test]
    fn a_series_rounds_version_moves_with_its_notices_only() {
        let cache = MarketCache::new();
        let (series, other, market) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let start = cache.record(Change::All);
        let rounds = |series| cache.held.read().unwrap().rounds_version_of(series);
        cache.record(Change::Market { id: market, own: false });
        cache.forget(market);
        assert_eq!(rounds(series), MarketVersion { version: start, own_change: start }, "markets' changes leave it");
        let settled = cache.record(Change::Rounds(series));
        assert_eq!(rounds(series).version, settled);
        assert_eq!(rounds(other).version, start, "another series' rounds keep theirs");
        assert!(version(&cache, market).version < settled, "and the markets theirs");
        let all = cache.record(Change::All);
        assert_eq!(rounds(series), MarketVersion { version: all, own_change: all }, "`*` moves every series");
    }

    #[test]
    fn a_status_version_moves_with_its_notices_only() {
        let cache = MarketCache::new();
        let (series, market) = (Uuid::new_v4(), Uuid::new_v4());
        let start = cache.record(Change::All);
        let of = |status| cache.held.read().unwrap().status_version(status);
        cache.record(Change::Market { id: market, own: false });
        cache.forget(market);
        cache.record(Change::Rounds(series));
        assert_eq!(of(MarketStatus::Settled), MarketVersion { version: start, own_change: start }, "markets', trades' and series' notices leave it");
        let settled = cache.record(Change::Status(MarketStatus::Settled));
        assert_eq!(of(MarketStatus::Settled).version, settled);
        let closed = cache.record(Change::Status(MarketStatus::Closed));
        assert_eq!((of(MarketStatus::Closed).version, of(MarketStatus::Settled).version), (closed, settled), "each status keeps its own");
        assert_eq!(of(MarketStatus::Voided).version, start);
        let all = cache.record(Change::All);
        for status in MarketStatus::ALL {
            assert_eq!(of(status), MarketVersion { version: all, own_change: all }, "`*` moves every status");
        }
    }

    #[test]
    fn notices_name_a_market_a_series_or_everything() {
        let id = Uuid::new_v4();
        assert_eq!(Change::of_notice(&id.to_string()), Change::Market { id, own: false });
        assert_eq!(Change::of_notice(&format!("series:{id}")), Change::Rounds(id));
        assert_eq!(Change::of_notice("status:closed"), Change::Status(MarketStatus::Closed));
        for unreadable in ["*", "series:*", "series:", "status:", "status:done", "", "not-a-uuid", &format!("market:{id}")] {
            assert_eq!(Change::of_notice(unreadable), Change::All, "{unreadable:?}");
        }
    }

    #[test]
    fn changes_starting_over_move_every_market() {
        let cache = MarketCache::new();
        let first = Uuid::new_v4();
        cache.record(Change::Market { id: first, own: true });
        for _ in 1..CAPACITY {
            cache.record(Change::Market { id: Uuid::new_v4(), own: false });
        }
        let before = version(&cache, first);
        let over = cache.record(Change::Market { id: Uuid::new_v4(), own: false });
        let after = version(&cache, first);
        assert!(after.version > before.version && after.own_change >= before.own_change, "no version moves back: {before:?} → {after:?}");
        assert_eq!(after, MarketVersion { version: over, own_change: over });
        assert_eq!(cache.held.read().unwrap().changed.len(), 1);
    }
}
