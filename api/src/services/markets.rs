//! Reading series and markets, and quoting: a quote is the `lmsr` fill under the terms the
//! program's config sets (`Services::terms`), the same the trade will run on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use chrono::Utc;
use uuid::Uuid;

use super::market_cache::MarketVersion;
use super::notices::Current;
use super::{Page, ServiceError, Services};
use crate::domain::exchange::Exchange;
use crate::domain::market::{MarketStatus, Side};
use crate::domain::money;
use crate::domain::quote::{self, PricedMarket, Quote, QuoteError};
use crate::services::series_cards::SeriesPage;
use crate::store::markets::{self, MarketRow, TradeRow, TradesOf};
use crate::store::series::{self, SeriesRow};

/// Market `id` from the in-memory market cache (no database round trip once it is held; a
/// change shows once its notice arrives, or at once after a trade this process sent).
pub async fn market(s: &Services, id: Uuid) -> Result<Arc<MarketRow>, ServiceError> {
    s.market_cache.market(&s.db, id).await?.ok_or_else(|| ServiceError::NotFound(format!("no market {id}")))
}

/// Market `id` as Postgres has it now: for the WebSocket, whose updates are set off by the
/// projection's stream events and must show the change they announce.
pub async fn market_now(s: &Services, id: Uuid) -> Result<MarketRow, ServiceError> {
    markets::market(&s.db, id).await?.ok_or_else(|| ServiceError::NotFound(format!("no market {id}")))
}

/// Count rows a listing may sum before it has them compacted.
const COUNT_ROWS_BEFORE_COMPACTION: i64 = 64;
/// One compaction at a time in this process.
static COMPACTING: AtomicBool = AtomicBool::new(false);

/// The version a listing of `status` follows, as this replica has been told of the changes: a
/// page read after taking it may be kept until it moves. The markets of any status but open
/// change only with a notice naming the status, so its listing follows those alone
/// (`MarketCache::status_version`) and trading leaves it kept. The unfiltered and open listings
/// follow every market row (`MarketCache::version`), their floor the version after the latest
/// trade this process sent (`MarketCache::own_change_version`).
pub fn listing_version(s: &Services, status: Option<MarketStatus>) -> Current {
    let as_of = Instant::now();
    match status {
        Some(status) if status != MarketStatus::Open => current(s.market_cache.status_version(&s.db, status), as_of),
        _ => Current::new(s.market_cache.version(&s.db), as_of).at_least(s.market_cache.own_change_version()),
    }
}

/// Market `id`'s version as this replica has been told of its changes (see
/// `MarketCache::market_version`): a page of that market alone read after taking it may be kept
/// until it moves, whatever other markets do. Its floor is the version after the latest trade
/// this process sent on it (or after the latest change to every market).
pub fn market_version(s: &Services, id: Uuid) -> Current {
    let as_of = Instant::now();
    current(s.market_cache.market_version(&s.db, id), as_of)
}

/// Series `series`' settled rounds' version (see `MarketCache::rounds_version`): a page of them
/// read after taking it may be kept until a round of the series settles, is voided or changes
/// once settled.
pub fn rounds_version(s: &Services, series: Uuid) -> Current {
    let as_of = Instant::now();
    current(s.market_cache.rounds_version(&s.db, series), as_of)
}

fn current(version: Option<MarketVersion>, as_of: Instant) -> Current {
    match version {
        Some(MarketVersion { version, own_change }) => Current::new(Some(version), as_of).at_least(own_change),
        None => Current::new(None, as_of),
    }
}

pub async fn list(s: &Services, status: Option<MarketStatus>, page: Page) -> Result<(Vec<MarketRow>, i64), ServiceError> {
    let listed = markets::list_markets(&s.db, status, page.limit, page.offset).await?;
    // Status changes between scheduler passes (a settlement wave) append count rows; the
    // listing that finds many folds them, off its own request.
    if listed.count_rows > COUNT_ROWS_BEFORE_COMPACTION && !COMPACTING.swap(true, Ordering::AcqRel) {
        let db = s.db.clone();
        tokio::spawn(async move {
            if let Err(e) = markets::compact_status_counts(&db).await {
                tracing::warn!(error = %e, "compacting market status counts failed");
            }
            COMPACTING.store(false, Ordering::Release);
        });
    }
    Ok((listed.rows, listed.total))
}

pub async fn trades(s: &Services, id: Uuid, page: Page) -> Result<(Vec<TradeRow>, i64), ServiceError> {
    let market = market(s, id).await?;
    Ok(markets::trades(&s.db, TradesOf::Market(market.id), page.limit, page.offset).await?)
}

/// One trade by id (the WebSocket's trade updates).
pub async fn trade(s: &Services, id: Uuid) -> Result<TradeRow, ServiceError> {
    markets::trade(&s.db, id).await?.ok_or_else(|| ServiceError::NotFound(format!("no trade {id}")))
}

/// The price after creation and after each trade, oldest first (at most 10,000 points).
pub async fn prices(s: &Services, id: Uuid) -> Result<Vec<(chrono::DateTime<Utc>, i32)>, ServiceError> {
    let market = market(s, id).await?;
    Ok(markets::price_history(&s.db, market.id, 10_000).await?)
}

/// Buying in market `id` (in state `priced`) now, under the terms trades run on; the market's
/// id with the fill.
fn fill(s: &Services, id: Uuid, priced: &PricedMarket, side: Side, amount: u64) -> Result<(Uuid, Quote), ServiceError> {
    quote::buy(priced, &s.terms(), side, amount, Utc::now()).map(|q| (id, q)).map_err(|e| quote_error(id, priced.status, e))
}

fn quote_error(id: Uuid, status: MarketStatus, e: QuoteError) -> ServiceError {
    match e {
        QuoteError::NotOpen(status) => ServiceError::MarketClosed(format!("market {id} is {status}, not open for trading")),
        QuoteError::BelowMinimum { min } => ServiceError::InvalidInput(format!("amount must be at least {}", money::places(min as i128, 6, 2))),
        QuoteError::NoShares | QuoteError::Amount(_) => ServiceError::InvalidInput(e.to_string()),
        QuoteError::State(_) => ServiceError::internal(format_args!("market {id} ({status}): {e}")),
    }
}

/// Whether market `id` takes a buy of `amount` micro-USDC now (`quote::admits`), with the
/// error `quote` would answer when it does not.
pub async fn check_quote(s: &Services, id: Uuid, amount: u64) -> Result<(), ServiceError> {
    let market = market(s, id).await?;
    quote::admits(&market.priced(), &s.terms(), amount, Utc::now()).map_err(|e| quote_error(id, market.status, e))
}

/// Buying `side` with `amount` micro-USDC in market `id`, as the program would fill it now.
/// Priced from the in-memory market cache (no database round trip once the market is held).
pub async fn quote(s: &Services, id: Uuid, side: Side, amount: u64) -> Result<(Uuid, Quote), ServiceError> {
    fill(s, id, &market(s, id).await?.priced(), side, amount)
}

/// The same for a series' open round; the series by id or slug.
pub async fn series_quote(s: &Services, series: &str, side: Side, amount: u64) -> Result<(Uuid, Quote), ServiceError> {
    let found = match Uuid::try_parse(series) {
        Ok(id) => series::series_by_id(&s.db, id).await?,
        Err(_) => series::series_by_slug(&s.db, series).await?,
    }
    .ok_or_else(|| ServiceError::NotFound(format!("no series {series:?}")))?;
    let market = markets::open_round(&s.db, found.id).await?.ok_or_else(|| ServiceError::MarketClosed(format!("series {} has no open round", found.slug)))?;
    fill(s, market.id, &market.priced(), side, amount)
}

/// A page of the series listing (from the in-memory cards once they are loaded).
pub async fn series_list(s: &Services, exchange: Option<Exchange>, page: Page) -> Result<SeriesPage, ServiceError> {
    Ok(s.series_cards.page(&s.db, exchange.map(Exchange::id), page.limit, page.offset).await?)
}

/// The version of the in-memory series cards, brought up to date, and the moment it is as of
/// (`SeriesCards::current_as_of`); `None` while listings read Postgres. A page read at a
/// version is the same page while the version holds.
pub async fn series_cards_version(s: &Services) -> Result<Current, ServiceError> {
    Ok(s.series_cards.current_as_of(&s.db).await?)
}

/// The id of series `slug`, from the in-memory series cards as they are
/// (`SeriesCards::id_by_slug`).
pub async fn series_id_by_slug(s: &Services, slug: &str) -> Result<Uuid, ServiceError> {
    s.series_cards.id_by_slug(&s.db, slug).await?.ok_or_else(|| ServiceError::NotFound(format!("no series {slug:?}")))
}

/// Series `slug` with its card, from the in-memory series cards while they are current (every
/// change whose notice has arrived; see `series_cards`), and the cards' version it was read at
/// (`None`: read from Postgres, the card not held), which a body rendered from it may be kept by.
pub async fn series_card(s: &Services, slug: &str) -> Result<(SeriesRow, Option<u64>), ServiceError> {
    s.series_cards.by_slug(&s.db, slug).await?.ok_or_else(|| ServiceError::NotFound(format!("no series {slug:?}")))
}

/// Series `slug` as Postgres has it now (the WebSocket's snapshot, which its updates follow).
pub async fn series_now(s: &Services, slug: &str) -> Result<SeriesRow, ServiceError> {
    series::series_by_slug(&s.db, slug).await?.ok_or_else(|| ServiceError::NotFound(format!("no series {slug:?}")))
}

/// A series' settled and voided rounds, latest first.
pub async fn rounds(s: &Services, series: Uuid, page: Page) -> Result<(Vec<MarketRow>, i64), ServiceError> {
    Ok(markets::settled_rounds(&s.db, series, page.limit, page.offset).await?)
}
