//! One retry policy for every HTTP call the service makes to someone else — the exchanges'
//! public APIs and Solana RPC nodes — so their brief trouble is absorbed in one place and the
//! same way: transport errors, 5xx and 429 are retried with exponential backoff (`backon`);
//! a 429's `Retry-After` replaces the backoff when it is short, and ends the call at once
//! when it is longer than the caller is willing to hold a request open. Anything else that
//! is not a success (400, 404…) is final: asking again would get the same answer.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};

/// How hard to try. `attempts` counts the first try.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub attempts: usize,
    /// The wait before the second attempt; it doubles before each later one.
    pub first_backoff: Duration,
    /// The longest `Retry-After` waited inside one call; beyond it the call fails
    /// `RateLimited` and the caller's own schedule decides when to come back.
    pub max_retry_after: Duration,
}

/// Why a call failed after the policy gave up.
#[derive(Debug)]
pub enum Failure {
    /// No HTTP answer: connect, timeout, or a broken body.
    Transport(reqwest::Error),
    /// HTTP 429 on the last attempt, or with a `Retry-After` past the policy's limit.
    RateLimited,
    /// Any other status that is not a success (5xx on the last attempt, or a final 4xx).
    Status { status: u16, body: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Transport(e) => write!(f, "transport error: {e}"),
            Failure::RateLimited => f.write_str("rate limited"),
            Failure::Status { status, body } => write!(f, "HTTP {status}: {body}"),
        }
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Failure::Transport(e) => Some(e),
            _ => None,
        }
    }
}

/// One attempt's failure, with whether (and after how long) to try again.
struct Attempt {
    failure: Failure,
    retry: bool,
    retry_after: Option<Duration>,
}

impl Policy {
    /// Sends the request `build` makes (once per attempt) until it succeeds with a 2xx or the
    /// policy gives up.
    pub async fn send(&self, build: impl Fn() -> reqwest::RequestBuilder) -> Result<reqwest::Response, Failure> {
        let backoff = ExponentialBuilder::default().with_min_delay(self.first_backoff).with_factor(2.0).with_max_times(self.attempts.saturating_sub(1));
        let attempt = || async { self.attempt(build()).await };
        attempt
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(|a: &Attempt| a.retry)
            .adjust(|a: &Attempt, backoff: Option<Duration>| backoff.map(|b| a.retry_after.unwrap_or(b)))
            .notify(|a: &Attempt, wait: Duration| tracing::debug!(failure = %a.failure, ?wait, "HTTP call failed, retrying"))
            .await
            .map_err(|a| a.failure)
    }

    async fn attempt(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, Attempt> {
        let response = request.send().await.map_err(|e| Attempt { failure: Failure::Transport(e), retry: true, retry_after: None })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        if status.as_u16() == 429 {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let retry = retry_after.is_none_or(|after| after <= self.max_retry_after);
            return Err(Attempt { failure: Failure::RateLimited, retry, retry_after });
        }
        let body = response.text().await.unwrap_or_default();
        Err(Attempt { failure: Failure::Status { status: status.as_u16(), body }, retry: status.is_server_error(), retry_after: None })
    }
}
