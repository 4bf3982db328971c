//! The market data's version, for responses kept in memory: bumped by every Postgres notice
//! that the collectors changed what the market-data endpoints show (migration 32: statement
//! triggers on `perps`, `interval_changes`, `crowd_latest` and `crowd_history` notify
//! `fm_market_data` when the changing transaction commits). A response read at one version is
//! the response while the version holds — the collectors write every few minutes, so nearly
//! every request between two sweeps is the same. No version (nothing is kept) while the
//! listener is not connected: notices sent meanwhile would be lost.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use sqlx::PgPool;

use super::notices::{self, Listening};

const CHANNEL: &str = "fm_market_data";

#[derive(Default)]
pub struct MarketDataVersion {
    /// (listening, version): the version is bumped by every notice and every connect or drop.
    state: Mutex<(bool, u64)>,
    started: OnceLock<()>,
}

impl MarketDataVersion {
    pub fn new() -> MarketDataVersion {
        MarketDataVersion::default()
    }

    /// The current version; `None` while changes cannot be heard (responses must be read).
    pub fn current(self: &Arc<Self>, db: &PgPool) -> Option<u64> {
        self.started.get_or_init(|| {
            tokio::spawn(listen(Arc::downgrade(self), db.clone()));
        });
        let (live, version) = *self.state.lock().unwrap();
        live.then_some(version)
    }
}

async fn listen(version: Weak<MarketDataVersion>, db: PgPool) {
    notices::listen(db, CHANNEL, |event| {
        let Some(held) = version.upgrade() else { return false };
        let mut state = held.state.lock().unwrap();
        match event {
            Listening::Connected => state.0 = true,
            Listening::Notice(_) => {}
            Listening::Lost => state.0 = false,
        }
        state.1 += 1;
        true
    })
    .await
}
