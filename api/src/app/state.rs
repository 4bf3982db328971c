//! Building the state every handler reaches (`http::AppState`) from the configuration.

use std::sync::Arc;

use sqlx::PgPool;

use super::config::Config;
pub use crate::http::{AppParts, AppState};
use crate::services::Services;
use crate::services::push::PushSettings;
use crate::services::tokens::TokenIssuer;
use crate::store::cache::Redis;

impl AppState {
    /// The state for `config` over `db` and `redis`, without a chain (`with_onchain` adds it).
    pub fn new(config: &Config, db: PgPool, redis: Redis) -> AppState {
        let services = Services {
            trade_plans: Arc::new(crate::services::trade_plans::TradePlans::new(db.clone())),
            db,
            redis,
            tokens: Arc::new(TokenIssuer::new(&config.auth.jwt_secret, config.auth.token_ttl)),
            sign_in: Arc::new(config.auth.sign_in.clone()),
            onchain: None,
            answer_within: answer_within(config.http.request_timeout),
            new_users_per_day: config.operator.new_users_per_day,
            token_accounts_per_day: config.operator.token_accounts_per_day,
            push: Arc::new(PushSettings::new(
                config.push.vapid_private_key.clone(),
                config.push.vapid_subject.clone(),
                config.push.endpoints.clone(),
                config.push.ttl_secs,
            )),
            market_cache: Arc::new(crate::services::market_cache::MarketCache::new()),
            series_cards: Arc::new(crate::services::series_cards::SeriesCards::new()),
            leaderboard: Arc::new(crate::services::leaderboard_cache::LeaderboardCache::new()),
            market_data_version: Arc::new(crate::services::notices::Version::new(crate::services::market_data::NOTICE_CHANNEL)),
        };
        let http = Arc::new(config.http.clone());
        let limits = Arc::new(crate::services::rate_counts::WindowCounts::new(http.rate_sync_every));
        AppState::from(AppParts {
            services,
            http,
            ws: Arc::new(crate::http::routes::ws::hub::Hub::new()),
            market_pages: Default::default(),
            market_bodies: Default::default(),
            series_pages: Default::default(),
            leaderboard_pages: Default::default(),
            market_data_responses: Arc::new(crate::http::kept_responses::kept_responses()),
            limits,
        })
    }

    pub fn with_onchain(self, onchain: crate::chain::OnChain) -> AppState {
        let mut parts = self.into_parts();
        parts.services.onchain = Some(onchain);
        AppState::from(parts)
    }
}

/// What a use case may spend waiting on the chain: the request deadline less 2 s for the rest of
/// the request (at least half a second).
fn answer_within(request_timeout: std::time::Duration) -> std::time::Duration {
    request_timeout.saturating_sub(std::time::Duration::from_secs(2)).max(std::time::Duration::from_millis(500))
}
