//! The leaderboard's rankings kept in memory: for each period start and ordering, the top
//! `TOP` traders, so a leaderboard request costs no database round trip while nothing changes.
//!
//! Kept exact by Postgres notices (triggers `notify_leaderboard*`, migration 49): a statement
//! that changes `trader_stats` (the projection's trades and payouts) notifies `fm_leaderboard`
//! with the wallets it changed, a display name's change with `names`, when it commits. A ranking
//! is served only while no notice has arrived since the read it came from began, so an answer
//! reflects every change whose notice has arrived (a millisecond or two after the commit on one
//! machine) — the same promise the series listing makes. After a notice, the next request of
//! each ranking makes it again; concurrent requests wait for that one instead of each making
//! their own. Rankings are served only while the listener is connected: when its connection
//! drops (notices may have been lost) everything is forgotten and every request reads Postgres
//! until it listens again.
//!
//! How a ranking is made again depends on its period:
//! - **All time** and **whole days** (7 and 30 days) rank a book held here: every trader's
//!   totals over the period (all time: the rows of `trader_totals`, which the triggers keep; whole
//!   days: their day rows added up) and the first few hundred traders of each order asked for. A
//!   notice names the traders it changed, so the book re-reads only theirs (one indexed query)
//!   and re-places only them in those lists, instead of reading or ranking every trader on each
//!   change. A notice that names no traders (too many for one notice, or a truncation), a gap in
//!   the notices kept, or a new period start reads the whole book again. So `trader_totals` is
//!   read by wallet or whole, never in a ranking's order, and has no index of its orders: the
//!   projection's updates of it, which change no indexed column, stay heap-only (migration 52).
//!   A book holds about 100 bytes a trader in its period.
//! - **The last 24 hours** add up the trades and settlements after an instant, read again each
//!   second it is asked for: its window moves with the clock, not only with notices.
//!
//! The period's start is part of a ranking's key, so a new UTC day starts new rankings and
//! books. A newer 24-hour window's ranking replaces the older; a book nobody asked for in a
//! minute goes when another is read.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::NaiveDate;
use sqlx::PgPool;

use super::key_gates::KeyGates;
use super::notices::Version;
use crate::domain::portfolio::{PeriodStart, SortBy, Totals};
use crate::store::positions::{self, LeaderRow};

const CHANNEL: &str = "fm_leaderboard";
/// Traders held per ranking: the most a request may ask for.
pub const TOP: i64 = 100;
/// Notices remembered for books to catch up with; a book further behind is read again.
const NOTICES_KEPT: usize = 1024;
/// A book not asked for in this long goes when another book is read.
const BOOK_IDLE: Duration = Duration::from_secs(60);

type Key = (Option<PeriodStart>, SortBy);
type Ranking = Arc<Vec<LeaderRow>>;

pub struct LeaderboardCache {
    /// Bumped by every notice (and connect or drop of the listener), with the latest notices'
    /// payloads: the traders they changed.
    version: Arc<Version>,
    /// Each ranking with the version its read began at: current while that version holds.
    rankings: Mutex<HashMap<Key, (u64, Ranking)>>,
    /// One read of each ranking at a time (the others wait for it and take what it read).
    reading: KeyGates<Key>,
    /// The books: all time's (`None`) and the whole-day periods', by their first day.
    books: Mutex<HashMap<Option<NaiveDate>, Book>>,
    /// One catch-up of each book at a time.
    booking: KeyGates<Option<NaiveDate>>,
    /// Books read whole (tests).
    whole_reads: AtomicU64,
}

impl Default for LeaderboardCache {
    fn default() -> LeaderboardCache {
        LeaderboardCache {
            version: Arc::new(Version::with_payloads(CHANNEL, NOTICES_KEPT)),
            rankings: Mutex::default(),
            reading: KeyGates::default(),
            books: Mutex::default(),
            booking: KeyGates::default(),
            whole_reads: AtomicU64::new(0),
        }
    }
}

impl LeaderboardCache {
    pub fn new() -> LeaderboardCache {
        LeaderboardCache::default()
    }

    /// The first `limit` (at most `TOP`) traders active since `since` (all time when `None`),
    /// best first by `sort`: from memory while current, else made again (and kept). With them,
    /// the version they are current at (`None`: read while changes could not be heard).
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
        // Made by whoever held the gate before us, after the change that made us wait?
        let Some(version) = self.version.now() else {
            return Ok((positions::leaderboard(db, since, sort, limit as i64).await?, None));
        };
        if let Some(top) = self.held(&key, version) {
            return Ok(first(&top, Some(version)));
        }
        // Made after `version` began: current at it.
        let top = match since {
            Some(PeriodStart::Day(day)) => self.rank_book(db, Some(day), sort, version).await?,
            None => self.rank_book(db, None, sort, version).await?,
            Some(PeriodStart::After(_)) => positions::leaderboard(db, since, sort, TOP).await?,
        };
        let top = Arc::new(top);
        let mut rankings = self.rankings.lock().unwrap();
        // Out-of-date rankings (a past day's among them) go as a new one comes.
        rankings.retain(|_, (read_at, _)| *read_at == version);
        if let Some(PeriodStart::After(newest)) = since {
            rankings.retain(|(start, _), _| !matches!(start, Some(PeriodStart::After(older)) if *older < newest));
        }
        rankings.insert(key, (version, Arc::clone(&top)));
        Ok(first(&top, Some(version)))
    }

    /// The current version of the rankings, listening from the first call on (`None` while
    /// not listening).
    pub fn version(&self, db: &PgPool) -> Option<u64> {
        self.version.current(db)
    }

    /// The ranking of `key`, if it was made at `version`.
    fn held(&self, key: &Key, version: u64) -> Option<Ranking> {
        self.rankings.lock().unwrap().get(key).filter(|(read_at, _)| *read_at == version).map(|(_, top)| Arc::clone(top))
    }

    /// The first `TOP` traders by `sort` over the days from `day` on (all time when `None`),
    /// from the book of `day` brought up to `version`: re-reading the traders the notices since
    /// the book's version changed, or the whole book when they cannot say.
    async fn rank_book(&self, db: &PgPool, day: Option<NaiveDate>, sort: SortBy, version: u64) -> Result<Vec<LeaderRow>, sqlx::Error> {
        let _one_catch_up = self.booking.turn(&day).await;
        let behind = self.books.lock().unwrap().get(&day).map(|book| book.version);
        // Brought further already (by another order's request since `version` was read): none.
        let changed = behind.and_then(|at| traders_between(&self.version, at, version));
        let update = match changed {
            Some(traders) if traders.is_empty() => Update::Traders(Vec::new()),
            Some(traders) => {
                let wallets: Vec<String> = traders.iter().map(|w| w.to_string()).collect();
                let mut totals: HashMap<String, Totals> = positions::period_totals_of(db, day, &wallets).await?.into_iter().collect();
                // Each changed trader's totals now: none when nothing is left in the period.
                Update::Traders(
                    wallets
                        .into_iter()
                        .map(|w| {
                            let now = totals.remove(&w);
                            (w, now)
                        })
                        .collect(),
                )
            }
            None => {
                self.whole_reads.fetch_add(1, Ordering::Relaxed);
                Update::Whole(positions::period_totals(db, day).await?)
            }
        };
        let ranked = {
            let mut books = self.books.lock().unwrap();
            let traders = match update {
                Update::Whole(whole) => {
                    let now = Instant::now();
                    books.retain(|_, book| now.duration_since(book.asked) < BOOK_IDLE);
                    books.insert(day, Book::new(version, whole));
                    Vec::new()
                }
                Update::Traders(traders) => traders,
            };
            // Gone only if it sat idle while another book was read: then Postgres ranks.
            books.get_mut(&day).map(|book| {
                for (wallet, totals) in traders {
                    book.change(&wallet, totals);
                }
                book.version = book.version.max(version);
                book.asked = Instant::now();
                book.rank(sort, TOP as usize)
            })
        };
        let Some(ranked) = ranked else {
            return positions::leaderboard(db, day.map(PeriodStart::Day), sort, TOP).await;
        };
        let wallets: Vec<String> = ranked.iter().map(|(w, _)| w.clone()).collect();
        let mut names: HashMap<String, String> = positions::display_names(db, &wallets).await?.into_iter().collect();
        Ok(ranked
            .into_iter()
            .map(|(wallet, t)| LeaderRow {
                display_name: names.remove(&wallet),
                wallet,
                realized_pnl: t.realized_pnl,
                volume: t.volume,
                trades: t.trades,
                settled: t.settled,
                wins: t.wins,
            })
            .collect())
    }

    /// How many times a book was read whole (tests).
    pub fn whole_book_reads(&self) -> u64 {
        self.whole_reads.load(Ordering::Relaxed)
    }

    /// How many rankings are held and current (tests).
    pub fn current_rankings(&self) -> usize {
        let Some(version) = self.version.now() else { return 0 };
        self.rankings.lock().unwrap().values().filter(|(read_at, _)| *read_at == version).count()
    }
}

/// How a book is brought up to a version.
enum Update {
    /// These traders' totals now (`None`: none left in the period).
    Traders(Vec<(String, Option<Totals>)>),
    /// Every trader's totals.
    Whole(Vec<(String, Totals)>),
}

/// Every trader's totals over the days from one day on (or all time), as of a version of the
/// notices, and the first traders of each order asked for, kept as traders change.
struct Book {
    version: u64,
    /// When a ranking was last made from it.
    asked: Instant,
    traders: HashMap<Box<str>, Totals>,
    firsts: HashMap<SortBy, Firsts>,
}

/// The first traders of a book by one order, best first: exactly the book's best
/// `ranked.len()`, and every trader not among them ranks after `bound` (`None`: there are no
/// others). A change re-places only the traders it names: one that ranks after the bound leaves
/// (the list shortens, and is ranked again from the whole book when shorter than `TOP`); one
/// that ranks before it enters (and the list is cut back to `FIRSTS_KEPT`).
struct Firsts {
    ranked: Vec<(Box<str>, Totals)>,
    bound: Option<(Box<str>, Totals)>,
}

/// Traders a book's list of firsts keeps: room for this many to fall out of it before the whole
/// book is ranked again.
const FIRSTS_KEPT: usize = 4 * TOP as usize;

impl Book {
    fn new(version: u64, traders: Vec<(String, Totals)>) -> Book {
        let traders = traders.into_iter().map(|(w, t)| (w.into_boxed_str(), t)).collect();
        Book { version, asked: Instant::now(), traders, firsts: HashMap::new() }
    }

    /// `wallet`'s totals are now `totals` (`None`: it has none in the period).
    fn change(&mut self, wallet: &str, totals: Option<Totals>) {
        match totals {
            Some(totals) => self.traders.insert(Box::from(wallet), totals),
            None => self.traders.remove(wallet),
        };
        for (sort, firsts) in &mut self.firsts {
            let order = |a: &(Box<str>, Totals), b: (&str, &Totals)| sort.ranks_before((&a.0, &a.1), b);
            firsts.ranked.retain(|(w, _)| &**w != wallet);
            let Some(totals) = totals else { continue };
            let entered = firsts.bound.as_ref().is_none_or(|bound| order(bound, (wallet, &totals)).is_ge());
            if entered {
                let at = firsts.ranked.partition_point(|r| order(r, (wallet, &totals)).is_lt());
                firsts.ranked.insert(at, (Box::from(wallet), totals));
                if firsts.ranked.len() > FIRSTS_KEPT {
                    firsts.ranked.truncate(FIRSTS_KEPT);
                    firsts.bound = firsts.ranked.last().cloned();
                }
            }
        }
    }

    /// The first `n` (at most `TOP`) traders by `sort`, best first.
    fn rank(&mut self, sort: SortBy, n: usize) -> Vec<(String, Totals)> {
        let firsts = match self.firsts.get(&sort) {
            Some(firsts) if firsts.ranked.len() >= n || firsts.bound.is_none() => firsts,
            _ => {
                let firsts = self.rank_whole(sort);
                self.firsts.entry(sort).insert_entry(firsts).into_mut()
            }
        };
        firsts.ranked.iter().take(n).map(|(w, t)| (w.to_string(), *t)).collect()
    }

    /// The first `FIRSTS_KEPT` traders by `sort`, from every trader of the book.
    fn rank_whole(&self, sort: SortBy) -> Firsts {
        let order = |a: &(&str, &Totals), b: &(&str, &Totals)| sort.ranks_before(*a, *b);
        let mut all: Vec<(&str, &Totals)> = self.traders.iter().map(|(w, t)| (&**w, t)).collect();
        let whole = all.len() <= FIRSTS_KEPT;
        if !whole {
            all.select_nth_unstable_by(FIRSTS_KEPT, order);
            all.truncate(FIRSTS_KEPT);
        }
        all.sort_unstable_by(order);
        let ranked: Vec<(Box<str>, Totals)> = all.into_iter().map(|(w, t)| (Box::from(w), *t)).collect();
        let bound = if whole { None } else { ranked.last().cloned() };
        Firsts { ranked, bound }
    }
}

/// The traders the notices after version `from` up to `to` name (migration 49 writes them);
/// `None` when they cannot say: a notice of everything (too many traders for one notice, a
/// truncation), or notices not kept or possibly lost.
fn traders_between(version: &Version, from: u64, to: u64) -> Option<HashSet<Box<str>>> {
    let mut traders = HashSet::new();
    for payload in version.payloads_between(from, to)? {
        match &*payload {
            // Display names: the totals stand.
            "names" => {}
            "*" | "" => return None,
            wallets => traders.extend(wallets.split(' ').map(Box::from)),
        }
    }
    Some(traders)
}
