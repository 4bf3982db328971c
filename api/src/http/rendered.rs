//! Response bodies already rendered, each with the version of the read model it was read at
//! (the series cards, the leaderboard's rankings, the market data): while the model holds that
//! version the same request gets the same bytes, so a front end polling a page costs a map
//! look-up instead of reading and rendering it again. Bounded by bytes, not count (a client
//! chooses the keys, and a page can be a few hundred KB): past `CAPACITY_BYTES` the map starts
//! over. A store made `with_max_age` also stops serving a body that old (answers whose windows
//! move with the clock).
//!
//! A kept body also holds its gzip form once a client has asked for it (`encoding`): compressed
//! once per body, not per request, and, where the body it replaces was asked for in gzip, by
//! the render that keeps it, before any request can take it. `CAPACITY_BYTES` counts the
//! bodies as rendered; their gzip forms are a fraction of that (JSON compresses several times
//! over).
//!
//! A key is rendered by one request at a time: after a change, the requests that find no body
//! at the new version wait for the first one's render and take its bytes, instead of each
//! reading and rendering the same page (a listing polled by many clients while its markets
//! trade would otherwise read it once per request in flight after every change). While that
//! render runs, a request is answered the body before the change instead, if a request found
//! that body current less than the store's grace ago (`notices::CATCH_UP_GRACE`, unless made
//! `with_render_grace`): every change it misses was heard since, so it is at most that far
//! behind what the service knows, and the requests of a polled page do not all wait out a read
//! of Postgres after each change. The change is visible as soon as the render is kept.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use flate2::{Compress, Compression, Crc, FlushCompress, Status};

use crate::services::key_gates::KeyGates;
use crate::services::notices::{CATCH_UP_GRACE, Current};

/// Bytes of bodies one store keeps at most.
const CAPACITY_BYTES: usize = 32 << 20;

pub struct RenderedPages<K> {
    held: Mutex<Held<K>>,
    /// One render of each key at a time (the others wait for it and take what it kept).
    rendering: KeyGates<K>,
    max_age: Option<Duration>,
    render_grace: Duration,
}

struct Held<K> {
    pages: HashMap<K, Page>,
    /// The kept bodies' bytes.
    bytes: usize,
}

struct Page {
    version: u64,
    at: Instant,
    body: KeptBody,
    /// The latest moment a request found the body current (`None`: none has since it was
    /// kept); a body is answered while its key renders again only within `render_grace` of it.
    current_at: Option<Instant>,
}

/// What a request finds kept for its key.
enum Found {
    /// The body at the request's version.
    Current(KeptBody),
    /// A body at an earlier version, found current within the grace.
    Recent(KeptBody),
    /// Nothing it may be answered.
    Nothing,
}

/// A rendered body (cloning it shares the bytes), and its gzip form once asked for.
#[derive(Clone, Debug)]
pub struct KeptBody(Arc<Forms>);

#[derive(Debug)]
struct Forms {
    identity: Bytes,
    gzip: OnceLock<Bytes>,
}

impl KeptBody {
    pub fn new(identity: Bytes) -> KeptBody {
        KeptBody(Arc::new(Forms { identity, gzip: OnceLock::new() }))
    }

    /// The body as rendered.
    pub fn identity(&self) -> Bytes {
        self.0.identity.clone()
    }

    /// The body gzip-compressed, made by the first caller (or by the render that kept it,
    /// where the body it replaced had been asked for in gzip).
    pub fn gzip(&self) -> Bytes {
        self.0.gzip.get_or_init(|| gzip(&self.0.identity)).clone()
    }

    /// Whether a client has asked for the gzip form.
    fn gzip_made(&self) -> bool {
        self.0.gzip.get().is_some()
    }

    fn len(&self) -> usize {
        self.0.identity.len()
    }
}

thread_local! {
    /// This thread's deflate state (a few hundred KB), reset for each body rather than made
    /// anew. The fastest level: a kept page is compressed again after every change it shows.
    static DEFLATE: RefCell<Compress> = RefCell::new(Compress::new(Compression::fast(), false));
}

/// `body` in the gzip format (RFC 1952): a header (no name, no time; the fastest level; the
/// system unknown), the raw deflate stream, then the CRC-32 and length of `body`.
fn gzip(body: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(body.len() / 4 + 64);
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255]);
    DEFLATE.with_borrow_mut(|deflate| {
        deflate.reset();
        loop {
            let read = deflate.total_in() as usize;
            // Writes into the spare capacity only: more is made while the stream is unfinished.
            match deflate.compress_vec(&body[read..], &mut out, FlushCompress::Finish).expect("deflating in memory does not fail") {
                Status::StreamEnd => break,
                Status::Ok | Status::BufError => out.reserve(out.capacity()),
            }
        }
    });
    let mut crc = Crc::new();
    crc.update(body);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    Bytes::from(out)
}

impl<K> Default for RenderedPages<K> {
    fn default() -> RenderedPages<K> {
        RenderedPages {
            held: Mutex::new(Held { pages: HashMap::new(), bytes: 0 }),
            rendering: KeyGates::default(),
            max_age: None,
            render_grace: CATCH_UP_GRACE,
        }
    }
}

impl<K: Eq + Hash + Clone> RenderedPages<K> {
    /// A store that serves a body for at most `max_age` after it was rendered.
    pub fn with_max_age(max_age: Duration) -> RenderedPages<K> {
        RenderedPages { max_age: Some(max_age), ..RenderedPages::default() }
    }

    /// The same store, its bodies answered during a render of their key for `grace` after a
    /// request last found them current, instead of `CATCH_UP_GRACE`.
    pub fn with_render_grace(self, grace: Duration) -> RenderedPages<K> {
        RenderedPages { render_grace: grace, ..self }
    }

    /// The body rendered for `key` at `version`, if any and not too old (tests).
    #[cfg(test)]
    fn get(&self, key: &K, version: u64) -> Option<KeptBody> {
        let held = self.held.lock().unwrap();
        let page = held.pages.get(key).filter(|p| p.version == version && self.young(p))?;
        Some(page.body.clone())
    }

    fn young(&self, page: &Page) -> bool {
        self.max_age.is_none_or(|age| page.at.elapsed() < age)
    }

    /// What `key` may be answered at `current`. A body found current records when.
    fn find(&self, key: &K, current: Current) -> Found {
        let Some(version) = current.version else { return Found::Nothing };
        let mut held = self.held.lock().unwrap();
        let Some(page) = held.pages.get_mut(key).filter(|p| self.young(p)) else { return Found::Nothing };
        if page.version == version {
            page.current_at = page.current_at.max(Some(current.as_of));
            return Found::Current(page.body.clone());
        }
        match page.current_at {
            Some(at) if (current.floor..version).contains(&page.version) && at.elapsed() < self.render_grace => Found::Recent(page.body.clone()),
            _ => Found::Nothing,
        }
    }

    /// The body kept for `key` at `current` (the read model's version now), else the one
    /// `render` makes, kept at the version `render` says it read (`None`: not kept). A version
    /// `render` names must have been taken before its read, so a change the read missed has
    /// already moved it.
    ///
    /// Renders of one key take turns: one that finds, once its turn comes, a body kept at
    /// `current` (rendered meanwhile by the request before it) serves that body. A request
    /// that finds the key being rendered, and a body before the change found current within
    /// the grace, is answered that body (see the module doc).
    pub async fn get_or_render<E>(&self, key: K, current: Current, render: impl Future<Output = Result<(Bytes, Option<u64>), E>>) -> Result<KeptBody, E> {
        let _turn = match self.find(&key, current) {
            Found::Current(body) => return Ok(body),
            Found::Recent(body) => match self.rendering.try_turn(&key) {
                Some(turn) => Some(turn),
                // Another request renders the change: the body before it, meanwhile.
                None => return Ok(body),
            },
            // Without a current version nothing kept can be answered: nothing to wait for.
            Found::Nothing if current.version.is_none() => None,
            Found::Nothing => Some(self.rendering.turn(&key).await),
        };
        if let Found::Current(body) = self.find(&key, current) {
            return Ok(body);
        }
        let (body, version) = render.await?;
        let body = KeptBody::new(body);
        if let Some(version) = version {
            // Its clients ask for gzip: compressed here, in this render's turn, rather than by
            // the first request to take the new body while every other one asking for it at
            // that moment blocks its thread on that compression.
            if self.held.lock().unwrap().pages.get(&key).is_some_and(|page| page.body.gzip_made()) {
                body.gzip();
            }
            self.keep(key, version, body.clone());
        }
        Ok(body)
    }

    /// Keeps `body` for `key` at `version` as a render does (`keep`), and returns it (tests).
    #[cfg(test)]
    fn put(&self, key: K, version: u64, body: Bytes) -> KeptBody {
        let body = KeptBody::new(body);
        self.keep(key, version, body.clone());
        body
    }

    /// Keeps `body` as what `key` renders to at `version` (a body over the whole bound is not
    /// kept, nor one older than the body kept: a slow render of an earlier version does not
    /// replace a newer page).
    fn keep(&self, key: K, version: u64, body: KeptBody) {
        if body.len() > CAPACITY_BYTES {
            return;
        }
        let mut held = self.held.lock().unwrap();
        if held.pages.get(&key).is_some_and(|kept| kept.version > version) {
            return;
        }
        if held.bytes + body.len() > CAPACITY_BYTES {
            held.pages.clear();
            held.bytes = 0;
        }
        held.bytes += body.len();
        if let Some(replaced) = held.pages.insert(key, Page { version, at: Instant::now(), body, current_at: None }) {
            held.bytes -= replaced.body.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The version `version`, taken now.
    fn at(version: u64) -> Current {
        Current::take(|| Some(version))
    }

    fn bytes_held<K>(pages: &RenderedPages<K>) -> (usize, usize) {
        let held = pages.held.lock().unwrap();
        (held.bytes, held.pages.values().map(|p| p.body.len()).sum())
    }

    #[test]
    fn kept_bytes_stay_under_the_capacity_and_the_latest_is_served() {
        let kept = RenderedPages::default();
        let month = Bytes::from(vec![b'x'; 230_000]);
        for i in 0..1_000 {
            kept.put(format!("/v1/crowd/binance/S{i:04}USDT?hours=720"), 7, month.clone());
            let (bytes, summed) = bytes_held(&kept);
            assert!(bytes <= CAPACITY_BYTES, "{bytes} bytes kept after {i}");
            assert_eq!(bytes, summed);
        }
        let key = "/v1/crowd/binance/S0999USDT?hours=720".to_owned();
        assert_eq!(kept.get(&key, 7).map(|b| b.identity()), Some(month.clone()));
        assert!(kept.get(&key, 8).is_none(), "another version is not served");
        // Replacing a body counts its bytes once.
        kept.put(key.clone(), 8, month.clone());
        let (bytes, summed) = bytes_held(&kept);
        assert_eq!(bytes, summed);
        // An older version does not replace a newer body.
        kept.put(key.clone(), 7, Bytes::from_static(b"older"));
        assert_eq!(kept.get(&key, 8).map(|b| b.identity()), Some(month.clone()));
        // A body over the whole bound is not kept (and does not empty the store).
        kept.put("huge".to_owned(), 8, Bytes::from(vec![b'x'; CAPACITY_BYTES + 1]));
        assert!(kept.get(&"huge".to_owned(), 8).is_none());
        assert_eq!(kept.get(&key, 8).map(|b| b.identity()), Some(month));
    }

    #[tokio::test]
    async fn a_body_is_rendered_again_only_when_its_version_moved() {
        let kept = RenderedPages::default();
        let renders = std::cell::Cell::new(0);
        // Counts a render when it runs (awaited), not when it is made.
        let render = |body: &'static str, read_at: Option<u64>| {
            let renders = &renders;
            async move {
                renders.set(renders.get() + 1);
                Ok::<_, ()>((Bytes::from_static(body.as_bytes()), read_at))
            }
        };
        assert_eq!(kept.get_or_render(1, at(4), render("a", Some(4))).await.map(|b| b.identity()), Ok(Bytes::from_static(b"a")));
        assert_eq!(kept.get_or_render(1, at(4), render("b", Some(4))).await.map(|b| b.identity()), Ok(Bytes::from_static(b"a")), "kept at 4");
        assert_eq!(kept.get_or_render(1, at(5), render("c", Some(5))).await.map(|b| b.identity()), Ok(Bytes::from_static(b"c")), "moved to 5");
        // Read without a version (the model not current): answered, not kept.
        assert_eq!(kept.get_or_render(2, Current::take(|| None), render("d", None)).await.map(|b| b.identity()), Ok(Bytes::from_static(b"d")));
        // Nor is a body kept before answered then, however recently it was found current.
        assert_eq!(kept.get_or_render(1, Current::take(|| None), render("f", None)).await.map(|b| b.identity()), Ok(Bytes::from_static(b"f")));
        assert_eq!(kept.get(&1, 5).map(|b| b.identity()), Some(Bytes::from_static(b"c")), "the kept body stays");
        assert_eq!(kept.get_or_render(2, at(5), render("e", Some(5))).await.map(|b| b.identity()), Ok(Bytes::from_static(b"e")));
        // A failed render is the caller's error and keeps nothing.
        assert_eq!(kept.get_or_render(3, at(5), async { Err::<(Bytes, Option<u64>), _>(()) }).await.map(|b| b.identity()), Err(()));
        assert!(kept.get(&3, 5).is_none());
        assert_eq!(renders.get(), 5, "every call but the kept one rendered");
    }

    /// Requests of one key at one version that arrive while it renders wait for that render
    /// and take its body: one render, whatever their number.
    #[tokio::test]
    async fn concurrent_requests_of_a_key_render_it_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let kept = RenderedPages::default();
        let renders = AtomicUsize::new(0);
        let request = |key: u32, version: u64| {
            let (kept, renders) = (&kept, &renders);
            async move {
                kept.get_or_render(key, at(version), async {
                    renders.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok::<_, ()>((Bytes::from(format!("{key}@{version}")), Some(version)))
                })
                .await
                .unwrap()
                .identity()
            }
        };
        let bodies = futures_util::future::join_all((0..32).map(|_| request(1, 9))).await;
        assert!(bodies.iter().all(|b| b == "1@9"));
        assert_eq!(renders.load(Ordering::SeqCst), 1, "rendered once for 32 requests");
        // A new version renders again, once, and so does another key.
        let (a, b) = tokio::join!(futures_util::future::join_all((0..8).map(|_| request(1, 10))), request(2, 10));
        assert!(a.iter().all(|body| body == "1@10") && b == "2@10");
        assert_eq!(renders.load(Ordering::SeqCst), 3);
    }

    /// A render of `body` at `version` that waits for `go` (counted in `renders` when it runs).
    async fn held_render(
        go: tokio::sync::oneshot::Receiver<()>,
        body: &'static str,
        version: u64,
        renders: &std::cell::Cell<u32>,
    ) -> Result<(Bytes, Option<u64>), ()> {
        renders.set(renders.get() + 1);
        go.await.unwrap();
        Ok((Bytes::from_static(body.as_bytes()), Some(version)))
    }

    /// While a change renders, a request is answered the body before it if a request found that
    /// body current within the grace (by the moment before it took its version, the latest such
    /// moment), and the body is not before the request's floor; otherwise it waits for the render.
    #[tokio::test]
    async fn a_request_during_a_render_gets_the_body_before_the_change_only_within_the_grace() {
        use futures_util::FutureExt;
        let renders = std::cell::Cell::new(0);
        let unused = || async { Ok::<(Bytes, Option<u64>), ()>((Bytes::from_static(b"unused"), Some(0))) };
        let long = Duration::from_secs(600);
        let now = Instant::now();
        let long_ago = now.checked_sub(long * 2).unwrap();
        // (grace, the moments requests at version 4 took it, the floor at version 5, answered the body before)
        let cases = [
            (long, vec![now], 0, true),
            (Duration::ZERO, vec![now], 0, false),
            (long, vec![], 0, false),
            (long, vec![long_ago], 0, false),
            (long, vec![now, long_ago], 0, true),
            (long, vec![now], 5, false),
        ];
        for (grace, found_current, floor, answered_before) in cases {
            let case = format!("grace {grace:?}, found current {} times, floor {floor}", found_current.len());
            let kept = RenderedPages::default().with_render_grace(grace);
            kept.put(1, 4, Bytes::from_static(b"before"));
            for as_of in found_current {
                assert_eq!(kept.get_or_render(1, Current::new(Some(4), as_of), unused()).await.unwrap().identity(), "before");
            }
            // The first request at version 5 renders it, and holds its turn until `go`.
            let (go, wait) = tokio::sync::oneshot::channel();
            let mut first = std::pin::pin!(kept.get_or_render(1, at(5), held_render(wait, "after", 5, &renders)));
            assert!(first.as_mut().now_or_never().is_none(), "the render waits for go");
            let mut second = std::pin::pin!(kept.get_or_render(1, at(5).at_least(floor), unused()));
            let early = second.as_mut().now_or_never().map(|body| body.unwrap().identity());
            assert_eq!(early.as_deref(), answered_before.then_some(&b"before"[..]), "{case}");
            go.send(()).unwrap();
            assert_eq!(first.await.unwrap().identity(), "after");
            if !answered_before {
                assert_eq!(second.await.unwrap().identity(), "after", "{case}: waited for the render and took its body");
            }
            // Once kept, the change is what every request gets.
            assert_eq!(kept.get_or_render(1, at(5), unused()).await.unwrap().identity(), "after");
        }
        assert_eq!(renders.get(), 6, "one render a change, whoever waited");
    }

    #[test]
    fn a_kept_body_is_gzip_compressed_once_and_inflates_to_itself() {
        use std::io::Read;
        let kept = RenderedPages::default();
        let page = Bytes::from(serde_json::to_vec(&serde_json::json!({"data": vec!["0.500000"; 2_000], "meta": {}, "error": null})).unwrap());
        let body = kept.put(1, 3, page.clone());
        let gzip = kept.get(&1, 3).unwrap().gzip();
        assert!(gzip.len() * 10 < page.len(), "{} bytes compressed to {}", page.len(), gzip.len());
        assert_eq!(body.gzip().as_ptr(), gzip.as_ptr(), "compressed once, shared by every answer");
        let inflate = |gzip: &[u8]| {
            let mut inflated = Vec::new();
            flate2::read::GzDecoder::new(gzip).read_to_end(&mut inflated).unwrap();
            inflated
        };
        assert_eq!(inflate(&gzip), page);
        // Bodies that outgrow the first guess at their compressed size (random bytes do not
        // compress), and none at all, one after another on the thread's reused state.
        let random: Vec<u8> = (0..100_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for body in [&random[..], b"", &page[..], &random[..1_000]] {
            assert_eq!(inflate(&super::gzip(body)), body);
        }
    }

    /// A page whose clients asked for gzip has the next body's gzip form made by the render
    /// that keeps it; a page no client asked so is kept as rendered, not compressed for nobody.
    #[tokio::test]
    async fn a_render_compresses_its_body_where_the_body_before_it_was_asked_for_in_gzip() {
        let kept = RenderedPages::default();
        let render = |body: &'static str, version: u64| async move { Ok::<_, ()>((Bytes::from_static(body.as_bytes()), Some(version))) };
        kept.get_or_render(1, at(4), render("a", 4)).await.unwrap().gzip();
        kept.get_or_render(2, at(4), render("b", 4)).await.unwrap();
        let asked = kept.get_or_render(1, at(5), render("c", 5)).await.unwrap();
        assert!(asked.gzip_made(), "the new body of a page read in gzip is compressed when kept");
        assert_eq!(kept.get(&1, 5).unwrap().gzip().as_ptr(), asked.gzip().as_ptr(), "the kept body is the one compressed");
        assert!(!kept.get_or_render(2, at(5), render("d", 5)).await.unwrap().gzip_made(), "no client asked for it in gzip");
    }

    #[test]
    fn a_body_past_the_max_age_is_not_served() {
        let kept = RenderedPages::with_max_age(Duration::from_millis(50));
        kept.put(1, 3, Bytes::from_static(b"{}"));
        assert!(kept.get(&1, 3).is_some());
        std::thread::sleep(Duration::from_millis(60));
        assert!(kept.get(&1, 3).is_none(), "served past its max age");
    }
}
