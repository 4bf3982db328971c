//! Postgres notices for this process's in-memory read models (`market_cache`, `series_cards`,
//! `leaderboard_cache`, the kept market-data responses): one listening connection per model,
//! reconnected after a failure. Notices sent while it is disconnected are lost, so the model is
//! told (`Listening::Lost`) and forgets what it holds.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use sqlx::PgPool;
use sqlx::postgres::PgListener;

/// How far behind what the service has heard a read model may answer while one request brings
/// it up to date after a change: the others get what it held before the change instead of all
/// waiting for that read (`series_cards`, the rendered pages of `http::rendered`). The change
/// shows as soon as the read is done; a read that outlasts this is waited for.
pub const CATCH_UP_GRACE: Duration = Duration::from_millis(5);

/// A read model's version as a request took it (`None`: changes cannot be heard now, so nothing
/// kept may be answered), and a moment every change heard before which the version shows (read
/// before the version was taken, or earlier when the model is behind its notices). An answer
/// kept at an earlier version may stand in for it while it is brought up to date (see
/// `CATCH_UP_GRACE`), but none before `floor`: the version of a change this process made itself,
/// which its caller reads at once.
#[derive(Clone, Copy, Debug)]
pub struct Current {
    pub version: Option<u64>,
    pub as_of: Instant,
    pub floor: u64,
}

impl Current {
    /// The version `version` gives, the clock read first.
    pub fn take(version: impl FnOnce() -> Option<u64>) -> Current {
        let as_of = Instant::now();
        Current::new(version(), as_of)
    }

    /// `version`, showing every change heard before `as_of`.
    pub fn new(version: Option<u64>, as_of: Instant) -> Current {
        Current { version, as_of, floor: 0 }
    }

    /// The same, with no answer before `floor` standing in for it.
    pub fn at_least(self, floor: u64) -> Current {
        Current { floor, ..self }
    }
}

/// What the listener reports to its model.
pub enum Listening<'a> {
    /// Listening now: every change committed from here on will be notified.
    Connected,
    /// A notice's payload.
    Notice(&'a str),
    /// The connection dropped (notices may have been lost).
    Lost,
}

/// Listens on `channel` and reports to `report` until it returns `false` (its model is gone)
/// or `db` is closed.
pub async fn listen(db: PgPool, channel: &'static str, mut report: impl FnMut(Listening<'_>) -> bool) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let connected = async {
            let mut listener = PgListener::connect_with(&db).await?;
            listener.listen(channel).await?;
            Ok::<_, sqlx::Error>(listener)
        }
        .await;
        match connected {
            Ok(mut listener) => {
                backoff = Duration::from_millis(100);
                if !report(Listening::Connected) {
                    return;
                }
                loop {
                    // A closed pool ends the listener (and its connection) with it.
                    let received = tokio::select! {
                        received = listener.try_recv() => received,
                        _ = db.close_event() => return,
                    };
                    let going = match received {
                        Ok(Some(notice)) => report(Listening::Notice(notice.payload())),
                        Ok(None) | Err(_) => {
                            tracing::warn!(channel, "a read model's listener lost its connection; reading Postgres until it is back");
                            if !report(Listening::Lost) {
                                return;
                            }
                            break;
                        }
                    };
                    if !going {
                        return;
                    }
                }
            }
            Err(_) if db.is_closed() => return,
            Err(e) => tracing::warn!(channel, error = %e, "a read model cannot listen; reading Postgres"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// A channel's version, for models that keep whole answers rather than rows: bumped by every
/// notice on the channel and every connect or drop of its listener, so an answer read at one
/// version is current while the version holds. No version while the listener is not connected
/// (a notice sent meanwhile would be lost). A model that catches up from what the notices say
/// (`with_payloads`) also gets the latest notices' payloads.
pub struct Version {
    channel: &'static str,
    state: Mutex<State>,
    /// Payloads kept (0: none).
    payloads_kept: usize,
    started: OnceLock<()>,
}

struct State {
    listening: bool,
    version: u64,
    /// The latest versions, each with its notice's payload (`None`: a connect or drop of the
    /// listener, when anything may have changed).
    latest: VecDeque<(u64, Option<Box<str>>)>,
}

impl Version {
    pub fn new(channel: &'static str) -> Version {
        Version::with_payloads(channel, 0)
    }

    /// A version that keeps the payloads of the latest `kept` notices (`payloads_between`).
    pub fn with_payloads(channel: &'static str, kept: usize) -> Version {
        let state = State { listening: false, version: 0, latest: VecDeque::new() };
        Version { channel, state: Mutex::new(state), payloads_kept: kept, started: OnceLock::new() }
    }

    /// The current version, listening from the first call on; `None` while changes cannot be
    /// heard (answers must be read).
    pub fn current(self: &Arc<Self>, db: &PgPool) -> Option<u64> {
        self.started.get_or_init(|| {
            tokio::spawn(follow(Arc::downgrade(self), db.clone()));
        });
        self.now()
    }

    /// The current version, without starting to listen.
    pub fn now(&self) -> Option<u64> {
        let state = self.state.lock().unwrap();
        state.listening.then_some(state.version)
    }

    /// The payloads of the notices that made the versions after `from` up to `to`, oldest
    /// first; `None` when they are not all kept, or the listener connected or dropped between
    /// (notices may have been lost).
    pub fn payloads_between(&self, from: u64, to: u64) -> Option<Vec<Box<str>>> {
        if from >= to {
            return Some(Vec::new());
        }
        let state = self.state.lock().unwrap();
        if state.latest.front().is_none_or(|(oldest, _)| *oldest > from + 1) {
            return None;
        }
        state.latest.iter().filter(|(v, _)| (from + 1..=to).contains(v)).map(|(_, payload)| payload.clone()).collect()
    }
}

async fn follow(version: Weak<Version>, db: PgPool) {
    let Some(channel) = version.upgrade().map(|v| v.channel) else { return };
    listen(db, channel, |event| {
        let Some(held) = version.upgrade() else { return false };
        let mut state = held.state.lock().unwrap();
        let payload = match event {
            Listening::Connected => {
                state.listening = true;
                None
            }
            Listening::Notice(payload) => Some(Box::from(payload)),
            Listening::Lost => {
                state.listening = false;
                None
            }
        };
        state.version += 1;
        if held.payloads_kept > 0 {
            let version = state.version;
            state.latest.push_back((version, payload));
            if state.latest.len() > held.payloads_kept {
                state.latest.pop_front();
            }
        }
        true
    })
    .await
}
