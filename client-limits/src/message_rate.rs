//! A WebSocket connection's own limit on the messages its client sends: each may cost a
//! database read, and the HTTP rate limits never see them. A fixed one-second window per
//! connection (no shared state: a client gets this much per connection, and connections are
//! limited elsewhere).

use std::time::Duration;

use tokio::time::Instant;

pub struct MessageRate {
    per_second: u32,
    window: Instant,
    in_window: u32,
}

impl MessageRate {
    pub fn per_second(per_second: u32) -> MessageRate {
        MessageRate { per_second, window: Instant::now(), in_window: 0 }
    }

    /// Counts a message; whether it may be processed.
    pub fn admit(&mut self) -> bool {
        if self.window.elapsed() >= Duration::from_secs(1) {
            (self.window, self.in_window) = (Instant::now(), 0);
        }
        self.in_window += 1;
        self.in_window <= self.per_second
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_admits_its_share_then_starts_again() {
        let mut rate = MessageRate::per_second(3);
        assert_eq!((0..5).map(|_| rate.admit()).collect::<Vec<_>>(), [true, true, true, false, false]);
        // The window is over: a new one starts.
        rate.window -= Duration::from_millis(1_001);
        assert_eq!((0..4).map(|_| rate.admit()).collect::<Vec<_>>(), [true, true, true, false]);
    }
}
