//! The series listing (`GET /v1/series`) from memory: every active series' card (statistics
//! and current round) in listing order (tier, then slug), so a page costs no database round
//! trip.
//!
//! Kept current by Postgres notices (triggers `notify_series_card*`): a trigger on `series`, and one on `markets`
//! for what a card shows of its rounds, notify `fm_series_cards` with the series' id when it
//! commits. A notice marks the card dirty; the next listing re-reads the dirty cards (one query
//! for all of them) before it answers. A listing therefore reflects every change whose notice
//! has arrived (a millisecond or two after the commit on one machine), but for the grace below
//! while another request re-reads it. Cards are served only
//! while the listener is connected and after a full load; when the connection drops everything
//! is forgotten and listings read Postgres until the next full load.
//!
//! One request re-reads the dirty cards at a time. The others meanwhile answer from the cards
//! as they were if the oldest notice still unread arrived less than `notices::CATCH_UP_GRACE`
//! ago, and wait for the re-read otherwise: under load a change costs one read, not one per
//! request in flight, and no answer is more than that grace behind the notices. A re-read that
//! races a full load is harmless: a card is replaced only by a read that started after the
//! newest notice naming it (notices are numbered as they arrive).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use sqlx::PgPool;
use uuid::Uuid;

use super::notices::{self, CATCH_UP_GRACE, Current, Listening};
use crate::store::series::{self, SeriesRow};

const CHANNEL: &str = "fm_series_cards";

pub struct SeriesCards {
    state: Mutex<Cards>,
    /// One full load at a time (a slower, older load must not overwrite a newer one).
    loading: tokio::sync::Mutex<()>,
    /// One re-read of the dirty cards at a time.
    rereading: tokio::sync::Mutex<()>,
    /// How long after a notice the cards as they were are answered while another request
    /// re-reads (`CATCH_UP_GRACE`).
    grace: Duration,
    started: OnceLock<()>,
}

/// A page of the listing.
#[derive(Debug)]
pub struct SeriesPage {
    pub rows: Vec<SeriesRow>,
    /// How many series the listing has (of the exchange asked for).
    pub total: i64,
    /// The held cards' version it was read at; `None` when read from Postgres.
    pub version: Option<u64>,
}

#[derive(Default)]
struct Cards {
    /// The listener is connected.
    live: bool,
    /// Every active series is held (a full load finished while live).
    complete: bool,
    ordered: BTreeMap<(i16, String), Arc<SeriesRow>>,
    keys: HashMap<Uuid, (i16, String)>,
    /// Cards to re-read, with the number of the last notice naming each and when the first
    /// notice of those not yet re-read arrived.
    dirty: HashMap<Uuid, (u64, Instant)>,
    /// Notices received (numbers them).
    notices: u64,
    /// Bumped by every change to the held cards: a page rendered at one version is the same
    /// page while it holds.
    version: u64,
}

impl Default for SeriesCards {
    fn default() -> SeriesCards {
        SeriesCards::with_grace(CATCH_UP_GRACE)
    }
}

impl SeriesCards {
    pub fn new() -> SeriesCards {
        SeriesCards::default()
    }

    fn with_grace(grace: Duration) -> SeriesCards {
        SeriesCards {
            state: Mutex::default(),
            loading: tokio::sync::Mutex::default(),
            rereading: tokio::sync::Mutex::default(),
            grace,
            started: OnceLock::new(),
        }
    }

    /// A page of active series (optionally of one exchange), tier then slug, and how many there
    /// are: from memory once loaded (with the version of the cards it was read at), else from
    /// Postgres.
    pub async fn page(self: &Arc<Self>, db: &PgPool, exchange: Option<&str>, limit: i64, offset: i64) -> Result<SeriesPage, sqlx::Error> {
        if self.current(db).await?.is_some()
            && let Some(page) = self.page_from_memory(exchange, limit, offset)
        {
            return Ok(page);
        }
        let (rows, total) = series::list_series(db, exchange, limit, offset).await?;
        Ok(SeriesPage { rows, total, version: None })
    }

    /// Series `slug`'s card and the held cards' version it was read at: from memory when it is
    /// held (an active series, cards current), else from Postgres (a series no longer active, or
    /// cards not being held; version `None`).
    pub async fn by_slug(self: &Arc<Self>, db: &PgPool, slug: &str) -> Result<Option<(SeriesRow, Option<u64>)>, sqlx::Error> {
        if self.current(db).await?.is_some()
            && let Some((card, version)) = self.held(slug)
        {
            return Ok(Some((card, Some(version))));
        }
        Ok(series::series_by_slug(db, slug).await?.map(|card| (card, None)))
    }

    /// Series `slug`'s id: from the held cards as they are, without bringing them up to date
    /// first (a notice still unread changes a card's statistics and rounds, not the series a
    /// slug names: a slug is written once, when `series::ensure` makes the series, and nothing
    /// changes it), else as `by_slug` finds it.
    pub async fn id_by_slug(self: &Arc<Self>, db: &PgPool, slug: &str) -> Result<Option<Uuid>, sqlx::Error> {
        self.start_listening(db);
        if let Some(id) = self.held_with(slug, |card, _| card.id) {
            return Ok(Some(id));
        }
        Ok(self.by_slug(db, slug).await?.map(|(card, _)| card.id))
    }

    /// The held card of `slug` and the cards' version, if the cards are current and hold it.
    fn held(&self, slug: &str) -> Option<(SeriesRow, u64)> {
        self.held_with(slug, |card, version| (SeriesRow::clone(card), version))
    }

    /// `read` of the held card of `slug` and the cards' version, if the cards are current and
    /// hold it.
    fn held_with<T>(&self, slug: &str, read: impl FnOnce(&SeriesRow, u64) -> T) -> Option<T> {
        let cards = self.state.lock().unwrap();
        if !(cards.live && cards.complete) {
            return None;
        }
        // Listing order is (tier, slug); tiers are 1 to 3 (a check on the table).
        let mut key = (1i16, slug.to_owned());
        for tier in 1..=3 {
            key.0 = tier;
            if let Some(card) = cards.ordered.get(&key) {
                return Some(read(card, cards.version));
            }
        }
        None
    }

    /// Brings the held cards up to date (a full load, or the dirty ones re-read) and returns
    /// their version; `None` when pages must come from Postgres (not listening).
    pub async fn current(self: &Arc<Self>, db: &PgPool) -> Result<Option<u64>, sqlx::Error> {
        Ok(self.current_as_of(db).await?.version)
    }

    /// `current`, as of when the call began, or when the oldest notice still unread arrived if
    /// that is earlier (the cards answered as they were while another request re-reads them,
    /// or a card notified again during the re-read; see the module doc).
    pub async fn current_as_of(self: &Arc<Self>, db: &PgPool) -> Result<Current, sqlx::Error> {
        let asked = Instant::now();
        self.start_listening(db);
        let (live, complete) = self.flags();
        if !live {
            return Ok(Current::new(None, asked));
        }
        if !complete {
            self.load_all(db).await?;
        }
        self.catch_up(db).await?;
        let cards = self.state.lock().unwrap();
        Ok(Current::new((cards.live && cards.complete).then_some(cards.version), cards.as_of(asked)))
    }

    fn flags(&self) -> (bool, bool) {
        let cards = self.state.lock().unwrap();
        (cards.live, cards.complete)
    }

    /// The page from the held cards; `None` unless they are current (listening, fully loaded).
    fn page_from_memory(&self, exchange: Option<&str>, limit: i64, offset: i64) -> Option<SeriesPage> {
        let cards = self.state.lock().unwrap();
        if !(cards.live && cards.complete) {
            return None;
        }
        let mut total = 0i64;
        let mut rows = Vec::new();
        for card in cards.ordered.values().filter(|c| exchange.is_none_or(|e| c.exchange == e)) {
            if total >= offset && (rows.len() as i64) < limit {
                rows.push(SeriesRow::clone(card));
            }
            total += 1;
        }
        Some(SeriesPage { rows, total, version: Some(cards.version) })
    }

    /// How many cards are held (tests).
    pub fn len(&self) -> usize {
        self.state.lock().unwrap().ordered.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    async fn load_all(&self, db: &PgPool) -> Result<(), sqlx::Error> {
        let _one_at_a_time = self.loading.lock().await;
        let Some(started_after) = self.notices_if_incomplete() else { return Ok(()) };
        let rows = series::active_cards(db).await?;
        let mut cards = self.state.lock().unwrap();
        if !cards.live {
            return Ok(());
        }
        cards.ordered.clear();
        cards.keys.clear();
        for row in rows {
            cards.put(row);
        }
        // What was notified before the read began is in it; later notices stay dirty.
        cards.dirty.retain(|_, (notice, _)| *notice > started_after);
        cards.complete = true;
        Ok(())
    }

    /// The notices received so far, when a full load is due.
    fn notices_if_incomplete(&self) -> Option<u64> {
        let cards = self.state.lock().unwrap();
        (cards.live && !cards.complete).then_some(cards.notices)
    }

    fn dirty(&self) -> Vec<(Uuid, u64)> {
        self.state.lock().unwrap().dirty.iter().map(|(id, (n, _))| (*id, *n)).collect()
    }

    /// Re-reads the dirty cards, or lets the caller answer from the cards as they are while
    /// another request re-reads them, within the grace (see the module doc).
    async fn catch_up(&self, db: &PgPool) -> Result<(), sqlx::Error> {
        let oldest_unread = {
            let cards = self.state.lock().unwrap();
            match cards.oldest_unread() {
                Some(heard) => heard,
                None => return Ok(()),
            }
        };
        let _turn = match self.rereading.try_lock() {
            Ok(turn) => turn,
            Err(_) if oldest_unread.elapsed() < self.grace => return Ok(()),
            Err(_) => self.rereading.lock().await,
        };
        self.reread_dirty(db).await
    }

    async fn reread_dirty(&self, db: &PgPool) -> Result<(), sqlx::Error> {
        let wanted = self.dirty();
        if wanted.is_empty() {
            return Ok(());
        }
        let ids: Vec<Uuid> = wanted.iter().map(|(id, _)| *id).collect();
        let mut read: HashMap<Uuid, SeriesRow> = series::cards_of(db, &ids).await?.into_iter().map(|row| (row.id, row)).collect();
        let mut cards = self.state.lock().unwrap();
        for (id, notice) in wanted {
            // Only if no newer notice came (then this read may predate it) and nobody else
            // replaced the card since.
            if cards.dirty.get(&id).map(|(n, _)| *n) != Some(notice) {
                continue;
            }
            cards.dirty.remove(&id);
            cards.remove(id);
            // Absent: no longer active (or gone).
            if let Some(row) = read.remove(&id) {
                cards.put(row);
            }
        }
        Ok(())
    }

    fn start_listening(self: &Arc<Self>, db: &PgPool) {
        self.started.get_or_init(|| {
            tokio::spawn(listen(Arc::downgrade(self), db.clone()));
        });
    }
}

impl Cards {
    /// When the oldest notice not yet re-read arrived.
    fn oldest_unread(&self) -> Option<Instant> {
        self.dirty.values().map(|(_, heard)| *heard).min()
    }

    /// `asked`, or when the oldest notice not yet re-read arrived if that is earlier: every
    /// notice heard before the moment returned is in the cards held.
    fn as_of(&self, asked: Instant) -> Instant {
        self.oldest_unread().map_or(asked, |heard| heard.min(asked))
    }

    fn put(&mut self, row: SeriesRow) {
        self.version += 1;
        let key = (row.tier, row.slug.clone());
        self.keys.insert(row.id, key.clone());
        self.ordered.insert(key, Arc::new(row));
    }

    fn remove(&mut self, id: Uuid) {
        self.version += 1;
        if let Some(key) = self.keys.remove(&id) {
            self.ordered.remove(&key);
        }
    }

    fn forget_all(&mut self) {
        self.version += 1;
        self.complete = false;
        self.ordered.clear();
        self.keys.clear();
        self.dirty.clear();
    }
}

/// A notice naming a card (its series' id): the card is dirty, numbered by this notice; a card
/// already dirty keeps when its first unread notice came.
fn note_notice(cards: &mut Cards, payload: &str) {
    cards.notices += 1;
    let notice = cards.notices;
    if let Ok(id) = Uuid::parse_str(payload) {
        let heard = cards.dirty.get(&id).map_or_else(Instant::now, |(_, heard)| *heard);
        cards.dirty.insert(id, (notice, heard));
    }
}

async fn listen(cards: Weak<SeriesCards>, db: PgPool) {
    notices::listen(db, CHANNEL, |event| {
        let Some(held) = cards.upgrade() else { return false };
        let mut cards = held.state.lock().unwrap();
        match event {
            Listening::Connected => cards.live = true,
            Listening::Notice(payload) => note_notice(&mut cards, payload),
            Listening::Lost => {
                cards.live = false;
                cards.forget_all();
            }
        }
        true
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    /// While another request re-reads the dirty cards, a request answers from the cards as they
    /// were if the oldest unread notice is within the grace, and waits for the re-read past it.
    #[tokio::test]
    async fn a_request_answers_from_the_cards_as_they_were_while_another_rereads_them_within_the_grace() {
        // Never connected: neither path below reads Postgres.
        let db = PgPool::connect_lazy("postgres://127.0.0.1:5432/unused").unwrap();
        let grace = Duration::from_secs(600);
        let cards = SeriesCards::with_grace(grace);
        let another_request = cards.rereading.lock().await;
        let heard = Instant::now();
        cards.state.lock().unwrap().dirty.insert(Uuid::new_v4(), (1, heard));
        assert!(matches!(cards.catch_up(&db).now_or_never(), Some(Ok(()))), "answered from the cards as they were");
        assert_eq!(cards.state.lock().unwrap().as_of(Instant::now()), heard, "behind since the notice");
        let past_the_grace = Instant::now().checked_sub(grace * 2).unwrap();
        cards.state.lock().unwrap().dirty.insert(Uuid::new_v4(), (2, past_the_grace));
        let mut waiting = std::pin::pin!(cards.catch_up(&db));
        assert!(waiting.as_mut().now_or_never().is_none(), "past the grace it waits for the re-read");
        // The other request's re-read took every dirty card: the waiting one has none left.
        cards.state.lock().unwrap().dirty.clear();
        drop(another_request);
        assert!(matches!(waiting.await, Ok(())));
        let asked = Instant::now();
        assert_eq!(cards.state.lock().unwrap().as_of(asked), asked, "caught up");
    }

    /// A card notified again before its re-read is done keeps when its first unread notice
    /// came: the cards are behind since then, not since the latest.
    #[test]
    fn a_card_notified_again_stays_behind_since_its_first_unread_notice() {
        let cards = Arc::new(SeriesCards::new());
        let card = Uuid::new_v4();
        let notify = |cards: &Arc<SeriesCards>| {
            let mut held = cards.state.lock().unwrap();
            note_notice(&mut held, &card.to_string());
        };
        notify(&cards);
        let first = cards.state.lock().unwrap().dirty[&card];
        std::thread::sleep(Duration::from_millis(2));
        notify(&cards);
        let again = cards.state.lock().unwrap().dirty[&card];
        assert_eq!((again.0, again.1), (first.0 + 1, first.1), "numbered anew, heard as first");
    }
}
