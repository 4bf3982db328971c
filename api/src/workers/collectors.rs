//! The market-data collectors (`services::collector`): one singleton worker per venue. Each pass
//! records the venue's listing (intervals and their changes) every `intervals_period`, and
//! sweeps every listed perp's crowd positioning once `crowd_period` has passed since the last
//! sweep. The venue's client paces every request within its published limits, so a sweep of
//! 500 perps takes minutes on a real venue; it stops between two perps on shutdown.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Worker, WorkerResult};
use crate::exchanges::Exchange;
use crate::services::collector::Collector;

/// "FMCOLL" and the venue's index: the advisory-lock keys of the four collectors.
pub fn collector_lock(exchange: Exchange) -> i64 {
    0x464D_434F_4C4C_0000 + Exchange::ALL.iter().position(|e| *e == exchange).unwrap_or(0) as i64
}

pub struct CollectorWorker {
    pub collector: Collector,
    pub intervals_period: Duration,
    pub crowd_period: Duration,
}

impl Worker for CollectorWorker {
    fn name(&self) -> &'static str {
        match self.collector.venue().exchange() {
            Exchange::Binance => "collector-binance",
            Exchange::Bybit => "collector-bybit",
            Exchange::Okx => "collector-okx",
            Exchange::Hyperliquid => "collector-hyperliquid",
        }
    }

    fn singleton_key(&self) -> Option<i64> {
        Some(collector_lock(self.collector.venue().exchange()))
    }

    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, WorkerResult> {
        async move {
            let mut last_sweep: Option<Instant> = None;
            while !cancel.is_cancelled() {
                match self.collector.collect_intervals(&Utc::now).await {
                    Ok((listing, report)) => {
                        if !report.is_empty() {
                            tracing::info!(
                                worker = self.name(),
                                listed = listing.len(),
                                new = report.new,
                                changes = report.changes.len(),
                                relisted = report.relisted,
                                delisted = report.delisted,
                                "listing recorded"
                            );
                        }
                        if last_sweep.is_none_or(|t| t.elapsed() >= self.crowd_period) {
                            let started = Instant::now();
                            match self.collector.collect_crowd(&listing, &cancel).await {
                                Ok(sweep) => {
                                    last_sweep = Some(started);
                                    tracing::info!(worker = self.name(), ?sweep, secs = started.elapsed().as_secs(), "crowd sweep");
                                }
                                Err(e) => tracing::warn!(worker = self.name(), error = %e, "crowd sweep failed; retrying next pass"),
                            }
                        }
                    }
                    Err(e) => tracing::warn!(worker = self.name(), error = %e, "listing failed; retrying next pass"),
                }
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = tokio::time::sleep(self.intervals_period) => {}
                }
            }
            Ok(())
        }
        .boxed()
    }
}
