//! `/v1/series`, `/v1/series/{slug}`, `/v1/series/{slug}/rounds`.

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::markets::{MarketBody, SettledRound, kept_by_markets};
use crate::domain::exchange::Exchange;
use crate::domain::market::MarketStatus;
use crate::domain::money::{micros, places, ppm};
use crate::domain::rate::{FundingRate, rate_8};
use crate::http::AppState;
use crate::http::envelope::{Data, Rendered};
use crate::http::error::ApiError;
use crate::http::extract::{ApiPath, ApiQuery, one_of};
use crate::http::openapi::{Envelope, ErrorEnvelope};
use crate::http::page::PageQuery;
use crate::services::markets;
use crate::store::series::SeriesRow;

pub const MAX_LIMIT: i64 = 200;

#[derive(Serialize, utoipa::ToSchema)]
pub struct SeriesCard {
    id: Uuid,
    symbol: String,
    exchange: String,
    slug: String,
    display_name: String,
    tier: i16,
    total_rounds: i32,
    total_volume: String,
    /// Percentage of settled rounds that were YES, two decimals.
    yes_rate: String,
    /// Mean settled funding rate, eight decimals.
    avg_funding_rate: String,
    longest_yes_streak: i32,
    longest_no_streak: i32,
    last_outcome: Option<String>,
    last_settled_at: Option<DateTime<Utc>>,
    current_round: Option<CurrentRound>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct CurrentRound {
    id: Uuid,
    round_number: i32,
    status: MarketStatus,
    settlement_ts: DateTime<Utc>,
    open_ts: DateTime<Utc>,
    close_ts: DateTime<Utc>,
    yes_price: String,
    no_price: String,
    total_volume: String,
    trade_count: i32,
    ou_prior: String,
    ou_confidence: String,
}

impl From<SeriesRow> for SeriesCard {
    fn from(s: SeriesRow) -> SeriesCard {
        let c = s.current;
        let current_round = match (c.round_id, c.round_number, c.round_status, c.round_open_ts, c.round_close_ts, c.round_settlement_ts) {
            (Some(id), Some(round_number), Some(status), Some(open_ts), Some(close_ts), Some(settlement_ts)) => {
                let yes = c.round_yes_price_ppm.unwrap_or(500_000) as i64;
                Some(CurrentRound {
                    id,
                    round_number,
                    status,
                    settlement_ts,
                    open_ts,
                    close_ts,
                    yes_price: micros(yes),
                    no_price: micros(1_000_000 - yes),
                    total_volume: micros(c.round_total_volume.unwrap_or(0)),
                    trade_count: c.round_trade_count.unwrap_or(0),
                    ou_prior: ppm(c.round_ou_prior_ppm.unwrap_or(500_000) as i64, 4),
                    ou_confidence: ppm(c.round_ou_confidence_ppm.unwrap_or(0) as i64, 4),
                })
            }
            _ => None,
        };
        // Basis points of YES rounds, rounded half up, shown as a percentage with two decimals.
        let yes_bp = if s.total_rounds > 0 { (s.yes_rounds as i64 * 20_000 + s.total_rounds as i64) / (2 * s.total_rounds as i64) } else { 0 };
        SeriesCard {
            id: s.id,
            symbol: s.symbol,
            exchange: s.exchange,
            slug: s.slug,
            display_name: s.display_name,
            tier: s.tier,
            total_rounds: s.total_rounds,
            total_volume: micros(s.total_volume),
            yes_rate: places(yes_bp as i128, 2, 2),
            avg_funding_rate: rate_8(FundingRate(s.avg_rate.unwrap_or(0))),
            longest_yes_streak: s.longest_yes_streak,
            longest_no_streak: s.longest_no_streak,
            last_outcome: s.last_outcome,
            last_settled_at: s.last_settled_at,
            current_round,
        }
    }
}

#[derive(Deserialize)]
pub struct ListQuery {
    exchange: Option<String>,
    #[serde(flatten)]
    page: PageQuery,
}

#[utoipa::path(
    get,
    path = "/v1/series",
    tag = "markets",
    params(
        ("exchange" = Option<String>, Query, description = "binance, bybit, okx or hyperliquid", pattern = "^(binance|bybit|okx|hyperliquid)$"),
        PageQuery,
    ),
    responses((status = 200, description = "Series cards", body = Envelope<Vec<SeriesCard>>))
)]
pub async fn list(State(state): State<AppState>, ApiQuery(q): ApiQuery<ListQuery>) -> Result<Rendered, ApiError> {
    let page = q.page.resolve(MAX_LIMIT)?;
    let exchange = q.exchange.as_deref().map(|e| one_of("exchange", e, &Exchange::ALL, Exchange::id)).transpose()?;
    let current = markets::series_cards_version(&state.services).await?;
    let body = state
        .series_pages
        .get_or_render(SeriesBody::Page(exchange, page.limit, page.offset), current, async {
            let listed = markets::series_list(&state.services, exchange, page).await?;
            Ok::<_, ApiError>((Data::paged(listed.rows.into_iter().map(SeriesCard::from).collect::<Vec<_>>(), page.meta(listed.total)).body(), listed.version))
        })
        .await?;
    Ok(Rendered(body))
}

/// A body rendered from the series cards, kept by their version (`AppParts::series_pages`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SeriesBody {
    /// A listing page: exchange, limit, offset.
    Page(Option<Exchange>, i64, i64),
    /// A series' card, by the slug asked for.
    Card(String),
}

#[utoipa::path(
    get,
    path = "/v1/series/{slug}",
    tag = "markets",
    params(("slug" = String, Path, description = "The series slug, e.g. btcusdt-binance")),
    responses(
        (status = 200, description = "The series card", body = Envelope<SeriesCard>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn get(State(state): State<AppState>, ApiPath(slug): ApiPath<String>) -> Result<Rendered, ApiError> {
    let current = markets::series_cards_version(&state.services).await?;
    let body = state
        .series_pages
        .get_or_render(SeriesBody::Card(slug.clone()), current, async {
            let (card, version) = markets::series_card(&state.services, &slug).await?;
            Ok::<_, ApiError>((Data::new(SeriesCard::from(card)).body(), version))
        })
        .await?;
    Ok(Rendered(body))
}

#[utoipa::path(
    get,
    path = "/v1/series/{slug}/rounds",
    tag = "markets",
    params(("slug" = String, Path, description = "The series slug"), PageQuery),
    responses(
        (status = 200, description = "Settled rounds, newest first", body = Envelope<Vec<SettledRound>>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn rounds(State(state): State<AppState>, ApiPath(slug): ApiPath<String>, ApiQuery(q): ApiQuery<PageQuery>) -> Result<Rendered, ApiError> {
    let page = q.resolve(MAX_LIMIT)?;
    // The slug is looked up each time, in the series cards as they are (a slug never changes
    // series), and the page is kept by that series.
    let series = markets::series_id_by_slug(&state.services, &slug).await?;
    kept_by_markets(&state, MarketBody::Rounds(series, page.limit, page.offset), async {
        let (rows, total) = markets::rounds(&state.services, series, page).await?;
        Ok(Data::paged(rows.into_iter().map(SettledRound::from).collect::<Vec<_>>(), page.meta(total)).body())
    })
    .await
}
