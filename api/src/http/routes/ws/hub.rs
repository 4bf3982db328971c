//! This replica's WebSocket subscriptions, and the one task that receives the stream from Redis
//! and hands each event to the connections subscribed to its channel. An event is rendered once
//! (one read of the current state, in the REST API's formats) however many connections get it,
//! and only when this replica has a subscriber for it. A connection's queue is bounded: when it
//! is full the connection is told to close (a slow consumer), and the others never wait.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::render;
use crate::domain::caller::Caller;
use crate::services::Services;
use crate::services::stream::{self, Published};

/// Updates remembered to drop a republished one: a publisher's batch is at most
/// `stream::MAX_UPDATES`, or one row of at most twice that (a batch republished after a crash
/// comes before anything newer).
const REMEMBERED: usize = 4 * stream::MAX_UPDATES;

/// A message for one connection: its channel and sequence number, and the text to send.
#[derive(Debug)]
pub struct Outgoing {
    pub channel: String,
    pub seq: i64,
    /// Shared by every connection it goes to (cloning is a reference count, not a copy).
    pub text: axum::extract::ws::Utf8Bytes,
}

/// A subscribed connection: its queue, and how to tell it to close when the queue is full.
#[derive(Clone)]
pub struct Subscriber {
    pub queue: mpsc::Sender<Arc<Outgoing>>,
    pub overflow: CancellationToken,
}

#[derive(Default)]
struct Channel {
    subscribers: HashMap<u64, Subscriber>,
    /// For an account channel: whose (the account's views need the caller).
    caller: Option<Caller>,
}

#[derive(Default)]
struct Recent {
    seen: HashSet<(i64, u32)>,
    order: VecDeque<(i64, u32)>,
}

impl Recent {
    /// Whether the update `id` (an event's row id and part) is new (remembering it).
    fn first(&mut self, id: (i64, u32)) -> bool {
        if !self.seen.insert(id) {
            return false;
        }
        self.order.push_back(id);
        if self.order.len() > REMEMBERED
            && let Some(old) = self.order.pop_front()
        {
            self.seen.remove(&old);
        }
        true
    }
}

#[derive(Default)]
pub struct Hub {
    channels: RwLock<HashMap<String, Channel>>,
    recent: Mutex<Recent>,
    listening: tokio::sync::OnceCell<()>,
    next_id: AtomicU64,
}

impl Hub {
    pub fn new() -> Hub {
        Hub::default()
    }

    /// A new connection id.
    pub fn connection_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Starts receiving the stream (once per process), the first time a connection needs it.
    pub async fn listen(self: &Arc<Self>, services: &Services) {
        let (hub, services) = (self.clone(), services.clone());
        self.listening
            .get_or_init(|| async move {
                tokio::spawn(receive(hub, services));
            })
            .await;
    }

    /// Adds a subscriber of `channel` (the stream's name: `account:<wallet>` for an account).
    pub fn subscribe(&self, channel: &str, connection: u64, subscriber: Subscriber, caller: Option<Caller>) {
        let mut channels = self.channels.write().unwrap();
        let entry = channels.entry(channel.to_owned()).or_default();
        entry.subscribers.insert(connection, subscriber);
        if caller.is_some() {
            entry.caller = caller;
        }
    }

    pub fn unsubscribe(&self, channel: &str, connection: u64) {
        let mut channels = self.channels.write().unwrap();
        if let Some(entry) = channels.get_mut(channel) {
            entry.subscribers.remove(&connection);
            if entry.subscribers.is_empty() {
                channels.remove(channel);
            }
        }
    }

    /// Whether anyone here listens to `channel` (and, for an account, whose it is).
    fn listened(&self, channel: &str) -> Option<Option<Caller>> {
        self.channels.read().unwrap().get(channel).map(|c| c.caller.clone())
    }

    /// Hands a published event to this replica's subscribers of its channel.
    pub async fn dispatch(&self, services: &Services, event: Published) {
        if !self.recent.lock().unwrap().first((event.id, event.part)) {
            return;
        }
        let Some(caller) = self.listened(&event.channel) else { return };
        let data = match render::update(services, &event, caller.as_ref()).await {
            Ok(Some(data)) => data,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(event = event.id, channel = %event.channel, error = %e, "rendering a stream event failed; skipped");
                return;
            }
        };
        let shown = render::client_channel(&event.channel);
        let text = serde_json::json!({"type": "update", "channel": shown, "seq": event.seq, "event": event.kind, "data": data}).to_string();
        let outgoing = Arc::new(Outgoing { channel: shown.to_owned(), seq: event.seq, text: text.into() });
        // Queued under the read lock (nothing here waits), to whoever listens now.
        let channels = self.channels.read().unwrap();
        for subscriber in channels.get(&event.channel).into_iter().flat_map(|c| c.subscribers.values()) {
            if let Err(mpsc::error::TrySendError::Full(_)) = subscriber.queue.try_send(outgoing.clone()) {
                subscriber.overflow.cancel();
            }
        }
    }
}

/// Receives the stream from Redis for as long as the process runs, reconnecting after a failure
/// (events published while disconnected are not received: a client resubscribes for a fresh
/// snapshot when its `seq` shows a gap it cares about).
async fn receive(hub: Arc<Hub>, services: Services) {
    let channel = stream::redis_channel(&services);
    let mut backoff = Duration::from_millis(100);
    loop {
        let subscribed = async {
            let mut pubsub = services.redis.pubsub().await?;
            pubsub.subscribe(&channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        }
        .await;
        match subscribed {
            Ok(pubsub) => {
                backoff = Duration::from_millis(100);
                let mut messages = pubsub.into_on_message();
                while let Some(message) = messages.next().await {
                    let Ok(payload) = message.get_payload::<String>() else { continue };
                    match serde_json::from_str::<Published>(&payload) {
                        Ok(event) => hub.dispatch(&services, event).await,
                        Err(e) => tracing::warn!(error = %e, "an unreadable stream message; skipped"),
                    }
                }
                tracing::warn!("the stream subscription ended; reconnecting");
            }
            Err(e) => tracing::warn!(error = %e, "subscribing to the stream failed; retrying"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}
