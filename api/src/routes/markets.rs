//! `/v1/markets…` and `/v1/quote`: markets, their trades and price history, and quotes computed
//! by the same `lmsr` functions the program executes.

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::page::PageQuery;
use super::series::rate_exact;
use crate::envelope::Data;
use crate::exchanges::{Exchange, FundingRate};
use crate::extract::{ApiPath, ApiQuery};
use crate::markets::queries::{self, MarketRow, TradeRow};
use crate::money::{self, micros, ppm};
use crate::{ApiError, AppState};

pub const MAX_LIMIT: i64 = 100;
const STATUSES: [&str; 6] = ["pending", "open", "closed", "resolving", "settled", "voided"];
/// Minimum trade (and quote): 1.00 USDC.
const MIN_AMOUNT: u64 = 1_000_000;

#[derive(Serialize)]
pub struct Market {
    id: Uuid,
    symbol: String,
    exchange: String,
    question: String,
    settlement_ts: DateTime<Utc>,
    open_ts: DateTime<Utc>,
    close_ts: DateTime<Utc>,
    status: String,
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
    match Exchange::parse(exchange) {
        Some(Exchange::Binance) => "Binance",
        Some(Exchange::Bybit) => "Bybit",
        Some(Exchange::Okx) => "OKX",
        Some(Exchange::Hyperliquid) => "Hyperliquid",
        None => "the exchange",
    }
}

impl From<MarketRow> for Market {
    fn from(m: MarketRow) -> Market {
        let settled = m.status == "settled";
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
#[derive(Serialize)]
pub struct SettledRound {
    id: Uuid,
    round_number: i32,
    status: String,
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

async fn find(state: &AppState, raw_id: &str) -> Result<MarketRow, ApiError> {
    let id = market_id(raw_id)?;
    queries::market(&state.db, id).await?.ok_or_else(|| ApiError::NotFound(format!("no market {id}")))
}

#[derive(Deserialize)]
pub struct ListQuery {
    status: Option<String>,
    #[serde(flatten)]
    page: PageQuery,
}

pub async fn list(State(state): State<AppState>, ApiQuery(q): ApiQuery<ListQuery>) -> Result<Data<Vec<Market>>, ApiError> {
    let page = q.page.resolve(MAX_LIMIT)?;
    if let Some(s) = q.status.as_deref().filter(|s| !STATUSES.contains(s)) {
        return Err(ApiError::InvalidInput(format!("status must be one of {}, got {s:?}", STATUSES.join(", "))));
    }
    let (rows, total) = queries::list_markets(&state.db, q.status.as_deref(), page.limit, page.offset).await?;
    Ok(Data::paged(rows.into_iter().map(Market::from).collect(), page.meta(total)))
}

pub async fn get(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<Data<Market>, ApiError> {
    Ok(Data::new(find(&state, &id).await?.into()))
}

#[derive(Serialize)]
pub struct TradeItem {
    trade_id: Uuid,
    side: String,
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
        let price = money::per_share(t.amount, t.shares);
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

pub async fn trades(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> Result<Data<Vec<TradeItem>>, ApiError> {
    let page = q.resolve(MAX_LIMIT)?;
    let market = find(&state, &id).await?;
    let (rows, total) = queries::trades(&state.db, queries::TradesOf::Market(market.id), page.limit, page.offset).await?;
    Ok(Data::paged(rows.into_iter().map(TradeItem::from).collect(), page.meta(total)))
}

#[derive(Serialize)]
pub struct PricePoint {
    timestamp: DateTime<Utc>,
    yes_price: String,
    no_price: String,
}

/// Beyond the contract: the market's price after creation and after each trade, oldest first.
pub async fn prices(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<Data<Vec<PricePoint>>, ApiError> {
    let market = find(&state, &id).await?;
    let points = queries::price_history(&state.db, market.id, 10_000).await?;
    let items = points
        .into_iter()
        .map(|(at, yes)| PricePoint { timestamp: at, yes_price: micros(yes as i64), no_price: micros(1_000_000 - yes as i64) })
        .collect();
    Ok(Data::new(items))
}

#[derive(Deserialize)]
pub struct QuoteQuery {
    side: Option<String>,
    amount: Option<String>,
}

#[derive(Serialize)]
pub struct Quote {
    market_id: Uuid,
    side: &'static str,
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

fn parse_side(side: Option<&str>) -> Result<lmsr::Side, ApiError> {
    match side {
        Some("yes") => Ok(lmsr::Side::Yes),
        Some("no") => Ok(lmsr::Side::No),
        Some(other) => Err(ApiError::InvalidInput(format!("side must be yes or no, got {other:?}"))),
        None => Err(ApiError::InvalidInput("side is required (yes or no)".into())),
    }
}

fn parse_amount(amount: Option<&str>) -> Result<u64, ApiError> {
    let raw = amount.ok_or_else(|| ApiError::InvalidInput("amount is required (USDC, e.g. 10.50)".into()))?;
    let value = money::parse_micros(raw).map_err(|e| ApiError::InvalidInput(format!("amount {e}, got {raw:?}")))?;
    if value < MIN_AMOUNT {
        return Err(ApiError::InvalidInput(format!("amount must be at least 1.00, got {raw:?}")));
    }
    Ok(value)
}

/// The quote for buying `side` with `amount` micro-USDC in `market`, as the program would fill it.
fn quote_for(market: &MarketRow, side: lmsr::Side, amount: u64, now: DateTime<Utc>) -> Result<Quote, ApiError> {
    if market.status != "open" || now < market.open_ts || now >= market.close_ts {
        return Err(ApiError::MarketClosed(format!("market {} is {}, not open for trading", market.id, market.status)));
    }
    let state = lmsr::Lmsr::new(market.liquidity_b as u64, market.q_yes as u64, market.q_no as u64)
        .map_err(|e| ApiError::internal(format!("market {} state outside the LMSR domain: {e}", market.id)))?;
    let fill = state.buy(side, amount).map_err(|e| ApiError::InvalidInput(format!("amount: {e}")))?;
    if fill.amount_out == 0 {
        return Err(ApiError::InvalidInput("amount buys no shares".into()));
    }
    let fee = lmsr::fee(amount, lmsr::FEE_BPS).map_err(ApiError::internal)?;
    let (yes, no) = state.prices_micro();
    let (new_yes, new_no) = fill.after.prices_micro();
    let (before, after) = match side {
        lmsr::Side::Yes => (yes, new_yes),
        lmsr::Side::No => (no, new_no),
    };
    let shares = fill.amount_out;
    Ok(Quote {
        market_id: market.id,
        side: if side == lmsr::Side::Yes { "yes" } else { "no" },
        amount: micros(amount as i64),
        shares: micros(shares as i64),
        avg_price: micros(((amount as u128 * 1_000_000 + shares as u128 / 2) / shares as u128) as i64),
        price_impact: micros(after as i64 - before as i64),
        fee_usdc: micros(fee as i64),
        total_cost: micros((amount + fee) as i64),
        yes_price: micros(yes as i64),
        no_price: micros(no as i64),
        new_yes_price: micros(new_yes as i64),
        new_no_price: micros(new_no as i64),
        max_payout: micros(shares as i64),
    })
}

pub async fn quote(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<QuoteQuery>,
) -> Result<Data<Quote>, ApiError> {
    let market = find(&state, &id).await?;
    let (side, amount) = (parse_side(q.side.as_deref())?, parse_amount(q.amount.as_deref())?);
    Ok(Data::new(quote_for(&market, side, amount, Utc::now())?))
}

#[derive(Deserialize)]
pub struct SeriesQuoteQuery {
    series_id: Option<String>,
    #[serde(flatten)]
    quote: QuoteQuery,
}

/// The alternate quote: the series (by id or slug) and its open round.
pub async fn series_quote(State(state): State<AppState>, ApiQuery(q): ApiQuery<SeriesQuoteQuery>) -> Result<Data<Quote>, ApiError> {
    let raw = q.series_id.ok_or_else(|| ApiError::InvalidInput("series_id is required (a series id or slug)".into()))?;
    let (side, amount) = (parse_side(q.quote.side.as_deref())?, parse_amount(q.quote.amount.as_deref())?);
    let series = match Uuid::try_parse(&raw) {
        Ok(id) => queries::series_by_id(&state.db, id).await?,
        Err(_) => queries::series_by_slug(&state.db, &raw).await?,
    }
    .ok_or_else(|| ApiError::NotFound(format!("no series {raw:?}")))?;
    let market = queries::open_round(&state.db, series.id)
        .await?
        .ok_or_else(|| ApiError::MarketClosed(format!("series {} has no open round", series.slug)))?;
    Ok(Data::new(quote_for(&market, side, amount, Utc::now())?))
}
