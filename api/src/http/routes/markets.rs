//! `/v1/markets…` and `/v1/quote`: markets, their trades and price history, and quotes computed
//! by the same `lmsr` functions the program executes.

use std::sync::Arc;

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::exchange::Exchange;
use crate::domain::market::{MarketStatus, Side, per_share};
use crate::domain::money::{self, micros, ppm};
use crate::domain::quote::Quote as Filled;
use crate::domain::rate::{FundingRate, rate_exact};
use crate::http::AppState;
use crate::http::envelope::{Data, Rendered};
use crate::http::error::ApiError;
use crate::http::extract::{ApiPath, ApiQuery, one_of, side};
use crate::http::openapi::{Envelope, ErrorEnvelope};
use crate::http::page::PageQuery;
use crate::services::notices::Current;
use crate::services::{Services, markets, oracle};
use crate::store::markets::{MarketRow, TradeRow};

pub const MAX_LIMIT: i64 = 100;

#[derive(Serialize, utoipa::ToSchema)]
pub struct Market {
    id: Uuid,
    symbol: String,
    exchange: String,
    question: String,
    settlement_ts: DateTime<Utc>,
    open_ts: DateTime<Utc>,
    close_ts: DateTime<Utc>,
    status: MarketStatus,
    tier: i16,
    round_number: i32,
    yes_price: String,
    no_price: String,
    total_volume: String,
    trade_count: i32,
    ou_prior: String,
    ou_confidence: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    actual_rate: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    settled_at: Option<DateTime<Utc>>,
}

fn venue_name(exchange: &str) -> &'static str {
    Exchange::parse(exchange).map_or("the exchange", Exchange::name)
}

impl From<MarketRow> for Market {
    fn from(m: MarketRow) -> Market {
        let settled = m.status == MarketStatus::Settled;
        let yes = m.yes_price_ppm as i64;
        Market {
            question: format!(
                "Will the {} perpetual funding rate on {} be positive at the {} UTC settlement?",
                m.symbol,
                venue_name(&m.exchange),
                m.settlement_ts.format("%Y-%m-%d %H:%M")
            ),
            id: m.id,
            symbol: m.symbol,
            exchange: m.exchange,
            settlement_ts: m.settlement_ts,
            open_ts: m.open_ts,
            close_ts: m.close_ts,
            status: m.status,
            tier: m.tier,
            round_number: m.round_number,
            yes_price: micros(yes),
            no_price: micros(1_000_000 - yes),
            total_volume: micros(m.total_volume),
            trade_count: m.trade_count,
            ou_prior: ppm(m.ou_prior_ppm as i64, 4),
            ou_confidence: ppm(m.ou_confidence_ppm as i64, 4),
            outcome: if settled { m.outcome } else { None },
            actual_rate: if settled { m.actual_rate.map(|r| rate_exact(FundingRate(r))) } else { None },
            settled_at: if settled { m.settled_at } else { None },
        }
    }
}

/// An item of a series' settlement history.
#[derive(Serialize, utoipa::ToSchema)]
pub struct SettledRound {
    id: Uuid,
    round_number: i32,
    status: MarketStatus,
    settlement_ts: DateTime<Utc>,
    outcome: Option<String>,
    actual_rate: Option<String>,
    yes_price: String,
    no_price: String,
    total_volume: String,
    trade_count: i32,
    settled_at: Option<DateTime<Utc>>,
}

impl From<MarketRow> for SettledRound {
    fn from(m: MarketRow) -> SettledRound {
        let yes = m.yes_price_ppm as i64;
        SettledRound {
            id: m.id,
            round_number: m.round_number,
            status: m.status,
            settlement_ts: m.settlement_ts,
            outcome: m.outcome,
            actual_rate: m.actual_rate.map(|r| rate_exact(FundingRate(r))),
            yes_price: micros(yes),
            no_price: micros(1_000_000 - yes),
            total_volume: micros(m.total_volume),
            trade_count: m.trade_count,
            settled_at: m.settled_at,
        }
    }
}

/// A market id from the path, with a message naming the parameter.
fn market_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::try_parse(raw).map_err(|_| ApiError::InvalidInput(format!("id must be a UUID, got {raw:?}")))
}

#[derive(Deserialize)]
pub struct ListQuery {
    status: Option<String>,
    #[serde(flatten)]
    page: PageQuery,
}

#[utoipa::path(
    get,
    path = "/v1/markets",
    tag = "markets",
    params(
        ("status" = Option<MarketStatus>, Query, description = "Only markets in this status"),
        PageQuery,
    ),
    responses((status = 200, description = "Markets", body = Envelope<Vec<Market>>))
)]
pub async fn list(State(state): State<AppState>, ApiQuery(q): ApiQuery<ListQuery>) -> Result<Rendered, ApiError> {
    let page = q.page.resolve(MAX_LIMIT)?;
    let status = q.status.as_deref().map(|s| one_of("status", s, &MarketStatus::ALL, MarketStatus::as_str)).transpose()?;
    // Taken before the read: a change the read misses moves it, so the page is never served.
    let current = markets::listing_version(&state.services, status);
    let body = state
        .market_pages
        .get_or_render((status, page.limit, page.offset), current, async {
            let (rows, total) = markets::list(&state.services, status, page).await?;
            Ok::<_, ApiError>((Data::paged(rows.into_iter().map(Market::from).collect::<Vec<_>>(), page.meta(total)).body(), current.version))
        })
        .await?;
    Ok(Rendered(body))
}

/// A listing page: status, limit, offset.
pub type PageKey = (Option<MarketStatus>, i64, i64);

#[utoipa::path(
    get,
    path = "/v1/markets/{id}",
    tag = "markets",
    params(("id" = String, Path, description = "The market id (a UUID)")),
    responses(
        (status = 200, description = "The market", body = Envelope<Market>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn get(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<Rendered, ApiError> {
    let id = market_id(&id)?;
    kept_by_markets(&state, MarketBody::Market(id), async {
        Ok(Data::new(Market::from(Arc::unwrap_or_clone(markets::market(&state.services, id).await?))).body())
    })
    .await
}

/// `GET /v1/markets/{id}/resolution` (beyond the contract): how the oracle decided the round —
/// every reading of every source, the consensus, and the transactions that ended and paid it —
/// so anyone can audit an outcome.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Resolution {
    market_id: Uuid,
    status: MarketStatus,
    settlement_ts: DateTime<Utc>,
    outcome: Option<String>,
    /// The settled rate, exact.
    actual_rate: Option<String>,
    /// `interval_change` or `no_consensus` for a voided (or to-be-voided) round.
    void_reason: Option<String>,
    /// The sources that agreed on the settled rate.
    consensus: Option<ConsensusView>,
    /// Oracle attempts that reached no verdict.
    attempts: i32,
    observations: Vec<ObservationView>,
    transactions: Transactions,
    /// When the last payout was made (every position paid, the market closed).
    paid_out_at: Option<DateTime<Utc>>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ConsensusView {
    rate: String,
    sources: Vec<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ObservationView {
    source: String,
    rate: Option<String>,
    error: Option<String>,
    fetched_at: DateTime<Utc>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ResolutionTransactions)]
pub struct Transactions {
    /// `resolve_market` or `void_market` (none for a round no one traded, settled off chain).
    finalize: Option<String>,
    payouts: Vec<PayoutView>,
    /// `close_market`, which returned the rest to the treasury.
    close: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PayoutView {
    wallet: String,
    amount: String,
    voided: bool,
    signature: Option<String>,
    at: DateTime<Utc>,
}

#[utoipa::path(
    get,
    path = "/v1/markets/{id}/resolution",
    tag = "markets",
    params(("id" = String, Path, description = "The market id (a UUID)")),
    responses(
        (status = 200, description = "How the oracle decided the round", body = Envelope<Resolution>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn resolution(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<Data<Resolution>, ApiError> {
    let r = oracle::resolution(&state.services, market_id(&id)?).await?;
    let settled = r.market.status == MarketStatus::Settled;
    let rate = if settled { r.market.actual_rate.map(|a| rate_exact(FundingRate(a))) } else { None };
    Ok(Data::new(Resolution {
        market_id: r.market.id,
        status: r.market.status,
        settlement_ts: r.market.settlement_ts,
        outcome: if settled { r.market.outcome } else { None },
        consensus: rate.clone().map(|rate| ConsensusView { rate, sources: r.consensus_sources }),
        actual_rate: rate,
        void_reason: r.state.void_reason,
        attempts: r.state.oracle_attempts,
        observations: r
            .observations
            .into_iter()
            .map(|o| ObservationView { source: o.source, rate: o.rate.map(|v| rate_exact(FundingRate(v))), error: o.error, fetched_at: o.fetched_at })
            .collect(),
        transactions: Transactions {
            finalize: r.state.finalize_signature,
            payouts: r
                .payouts
                .into_iter()
                .map(|p| PayoutView { wallet: p.wallet, amount: micros(p.payout), voided: p.voided, signature: p.signature, at: p.at })
                .collect(),
            close: r.state.close_signature,
        },
        paid_out_at: r.state.paid_out_at,
    }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct TradeItem {
    trade_id: Uuid,
    side: Side,
    /// `buy` or `sell` (beyond the contract: sells exist).
    kind: &'static str,
    shares: String,
    /// Average price per share of the trade, USDC.
    price_usdc: String,
    fee_usdc: String,
    created_at: DateTime<Utc>,
}

impl From<TradeRow> for TradeItem {
    fn from(t: TradeRow) -> TradeItem {
        let price = per_share(t.amount, t.shares);
        TradeItem {
            trade_id: t.id,
            side: t.side,
            kind: if t.is_buy { "buy" } else { "sell" },
            shares: micros(t.shares),
            price_usdc: micros(price),
            fee_usdc: micros(t.fee),
            created_at: t.created_at,
        }
    }
}

#[utoipa::path(
    get,
    path = "/v1/markets/{id}/trades",
    tag = "markets",
    params(("id" = String, Path, description = "The market id (a UUID)"), PageQuery),
    responses(
        (status = 200, description = "The market's trades, newest first", body = Envelope<Vec<TradeItem>>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn trades(State(state): State<AppState>, ApiPath(id): ApiPath<String>, ApiQuery(q): ApiQuery<PageQuery>) -> Result<Rendered, ApiError> {
    let page = q.resolve(MAX_LIMIT)?;
    let id = market_id(&id)?;
    kept_by_markets(&state, MarketBody::Trades(id, page.limit, page.offset), async {
        let (rows, total) = markets::trades(&state.services, id, page).await?;
        Ok(Data::paged(rows.into_iter().map(TradeItem::from).collect::<Vec<_>>(), page.meta(total)).body())
    })
    .await
}

/// The body kept for `key` at its version (`MarketBody::version`), else the one `render` reads.
/// The version is taken before the read: a change the read misses moves it, so that body is
/// never served.
pub(crate) async fn kept_by_markets(
    state: &AppState,
    key: MarketBody,
    render: impl Future<Output = Result<axum::body::Bytes, ApiError>>,
) -> Result<Rendered, ApiError> {
    let current = key.version(&state.services);
    let body = state.market_bodies.get_or_render(key, current, async { Ok::<_, ApiError>((render.await?, current.version)) }).await?;
    Ok(Rendered(body))
}

/// A body read from one market or series, kept rendered by the market rows' notices
/// (`AppParts::market_bodies`): every change to a market's row notifies its id, and so does
/// every trade and price point (a trade projected behind its market's row leaves the row
/// unchanged); a change to a settled or voided round also notifies its series (`series:<id>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MarketBody {
    /// A market.
    Market(Uuid),
    /// A quote: the market, the side bought, micro-USDC spent.
    Quote(Uuid, Side, u64),
    /// A market's trades: the market, limit, offset.
    Trades(Uuid, i64, i64),
    /// A market's price history.
    Prices(Uuid),
    /// A series' settled rounds: the series, limit, offset.
    Rounds(Uuid, i64, i64),
}

impl MarketBody {
    /// The version the body is kept by: its market's own (`markets::market_version`), a series'
    /// rounds their series' (`markets::rounds_version`), so trades elsewhere leave it kept.
    fn version(&self, s: &Services) -> Current {
        match *self {
            MarketBody::Market(id) | MarketBody::Quote(id, ..) | MarketBody::Trades(id, ..) | MarketBody::Prices(id) => markets::market_version(s, id),
            MarketBody::Rounds(series, ..) => markets::rounds_version(s, series),
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PricePoint {
    timestamp: DateTime<Utc>,
    yes_price: String,
    no_price: String,
}

/// Beyond the contract: the market's price after creation and after each trade, oldest first.
#[utoipa::path(
    get,
    path = "/v1/markets/{id}/prices",
    tag = "markets",
    params(("id" = String, Path, description = "The market id (a UUID)")),
    responses(
        (status = 200, description = "Price history, oldest first", body = Envelope<Vec<PricePoint>>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
    )
)]
pub async fn prices(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<Rendered, ApiError> {
    let id = market_id(&id)?;
    kept_by_markets(&state, MarketBody::Prices(id), async {
        let points = markets::prices(&state.services, id).await?;
        let items: Vec<PricePoint> =
            points.into_iter().map(|(at, yes)| PricePoint { timestamp: at, yes_price: micros(yes as i64), no_price: micros(1_000_000 - yes as i64) }).collect();
        Ok(Data::new(items).body())
    })
    .await
}

#[derive(Deserialize)]
pub struct QuoteQuery {
    side: Option<String>,
    amount: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Quote {
    market_id: Uuid,
    side: Side,
    /// USDC spent on shares (the fee is charged on top).
    amount: String,
    shares: String,
    avg_price: String,
    /// How far the bought side's price moves, USDC per share.
    price_impact: String,
    fee_usdc: String,
    /// amount + fee: what the balance is debited.
    total_cost: String,
    yes_price: String,
    no_price: String,
    new_yes_price: String,
    new_no_price: String,
    /// What the shares pay if the side wins (1 USDC each).
    max_payout: String,
}

impl Quote {
    fn new(market_id: Uuid, q: Filled) -> Quote {
        Quote {
            market_id,
            side: q.side,
            amount: micros(q.amount as i64),
            shares: micros(q.shares as i64),
            avg_price: micros(q.avg_price),
            price_impact: micros(q.price_impact),
            fee_usdc: micros(q.fee as i64),
            total_cost: micros(q.total_cost as i64),
            yes_price: micros(q.yes_price as i64),
            no_price: micros(q.no_price as i64),
            new_yes_price: micros(q.new_yes_price as i64),
            new_no_price: micros(q.new_no_price as i64),
            max_payout: micros(q.shares as i64),
        }
    }
}

/// `side` and `amount` of a quote request, each required.
fn order(q: &QuoteQuery) -> Result<(Side, u64), ApiError> {
    let side = side(q.side.as_deref().ok_or_else(|| ApiError::InvalidInput("side is required (yes or no)".into()))?)?;
    let raw = q.amount.as_deref().ok_or_else(|| ApiError::InvalidInput("amount is required (USDC, e.g. 10.50)".into()))?;
    let amount = money::parse_micros(raw).map_err(|e| ApiError::InvalidInput(format!("amount {e}, got {raw:?}")))?;
    Ok((side, amount))
}

#[utoipa::path(
    get,
    path = "/v1/markets/{id}/quote",
    tag = "markets",
    params(
        ("id" = String, Path, description = "The market id (a UUID)"),
        ("side" = String, Query, description = "yes or no", pattern = "^(yes|no)$"),
        ("amount" = String, Query, description = "USDC to spend, up to six decimals", pattern = "^[0-9]{1,12}(\\.[0-9]{1,6})?$"),
    ),
    responses(
        (status = 200, description = "What buying would give, at the current price", body = Envelope<Quote>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 422, description = "MARKET_CLOSED", body = ErrorEnvelope),
    )
)]
pub async fn quote(State(state): State<AppState>, ApiPath(id): ApiPath<String>, ApiQuery(q): ApiQuery<QuoteQuery>) -> Result<Rendered, ApiError> {
    let id = market_id(&id)?;
    let (side, amount) = order(&q)?;
    // Whether the market takes the order now is asked on every request: the trading window
    // moves with the clock, not only with the market's row.
    markets::check_quote(&state.services, id, amount).await?;
    kept_by_markets(&state, MarketBody::Quote(id, side, amount), async {
        let (market_id, filled) = markets::quote(&state.services, id, side, amount).await?;
        Ok(Data::new(Quote::new(market_id, filled)).body())
    })
    .await
}

#[derive(Deserialize)]
pub struct SeriesQuoteQuery {
    series_id: Option<String>,
    #[serde(flatten)]
    quote: QuoteQuery,
}

/// The alternate quote: the series (by id or slug) and its open round.
#[utoipa::path(
    get,
    path = "/v1/quote",
    tag = "markets",
    params(
        ("series_id" = String, Query, description = "A series id or slug"),
        ("side" = String, Query, description = "yes or no", pattern = "^(yes|no)$"),
        ("amount" = String, Query, description = "USDC to spend, up to six decimals", pattern = "^[0-9]{1,12}(\\.[0-9]{1,6})?$"),
    ),
    responses(
        (status = 200, description = "A quote on the series' open round", body = Envelope<Quote>),
        (status = 404, description = "NOT_FOUND", body = ErrorEnvelope),
        (status = 422, description = "MARKET_CLOSED", body = ErrorEnvelope),
    )
)]
pub async fn series_quote(State(state): State<AppState>, ApiQuery(q): ApiQuery<SeriesQuoteQuery>) -> Result<Data<Quote>, ApiError> {
    let series = q.series_id.as_deref().ok_or_else(|| ApiError::InvalidInput("series_id is required (a series id or slug)".into()))?;
    let (side, amount) = order(&q.quote)?;
    let (market_id, filled) = markets::series_quote(&state.services, series, side, amount).await?;
    Ok(Data::new(Quote::new(market_id, filled)))
}
