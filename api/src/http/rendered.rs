//! Response bodies already rendered, each with the version of the read model it was read at
//! (the series cards, the leaderboard's rankings): while the model holds that version the same
//! request gets the same bytes, so a front end polling a page costs a map look-up instead of
//! rendering it again. Bounded: past `CAPACITY` pages the map starts over.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

use axum::body::Bytes;

pub struct RenderedPages<K>(Mutex<HashMap<K, (u64, Bytes)>>);

impl<K> Default for RenderedPages<K> {
    fn default() -> RenderedPages<K> {
        RenderedPages(Mutex::new(HashMap::new()))
    }
}

impl<K: Eq + Hash> RenderedPages<K> {
    const CAPACITY: usize = 1_000;

    /// The body rendered for `key` at `version`, if any.
    pub fn get(&self, key: &K, version: u64) -> Option<Bytes> {
        self.0.lock().unwrap().get(key).filter(|(at, _)| *at == version).map(|(_, body)| body.clone())
    }

    /// Keeps `body` as what `key` renders to at `version`.
    pub fn put(&self, key: K, version: u64, body: Bytes) {
        let mut pages = self.0.lock().unwrap();
        if pages.len() >= Self::CAPACITY && !pages.contains_key(&key) {
            pages.clear();
        }
        pages.insert(key, (version, body));
    }
}
