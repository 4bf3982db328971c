//! The caller's profile, positions, trades and results, and the leaderboard.

use chrono::Utc;
use uuid::Uuid;

use super::notices::Current;
use super::{Page, ServiceError, Services};
use crate::domain::caller::Caller;
use crate::domain::display_name;
use crate::domain::portfolio::{OpenPosition, Period, PeriodStart, SortBy, Totals};
use crate::store::markets::{self, TradeRow, TradesOf};
use crate::store::positions::{self, LeaderRow};
use crate::store::users::{self, User};

pub struct Profile {
    pub user: User,
    /// The vault balance, micro-USDC.
    pub usdc_balance: u64,
}

pub async fn profile(s: &Services, user_id: Uuid) -> Result<Profile, ServiceError> {
    let user = users::find(&s.db, user_id).await?.ok_or_else(|| ServiceError::Unauthorized("the token's user does not exist".into()))?;
    let usdc_balance = positions::available_balance(&s.db, &user.wallet_address).await?;
    Ok(Profile { user, usdc_balance })
}

/// Sets (or, with `None`, clears) the caller's display name.
pub async fn set_display_name(s: &Services, user_id: Uuid, name: Option<&str>) -> Result<Profile, ServiceError> {
    let name = match name {
        None => None,
        Some(name) => Some(display_name::parse(name).ok_or_else(|| ServiceError::InvalidInput(display_name::RULE.into()))?),
    };
    users::set_display_name(&s.db, user_id, name).await?;
    profile(s, user_id).await
}

pub async fn positions(s: &Services, caller: &Caller) -> Result<Vec<OpenPosition>, ServiceError> {
    Ok(positions::open_positions(&s.db, &caller.wallet).await?)
}

pub async fn history(s: &Services, caller: &Caller, page: Page) -> Result<(Vec<TradeRow>, i64), ServiceError> {
    Ok(markets::trades(&s.db, TradesOf::Wallet(&caller.wallet), page.limit, page.offset).await?)
}

pub struct Portfolio {
    pub totals: Totals,
    pub open: Vec<OpenPosition>,
}

impl Portfolio {
    pub fn unrealized_pnl(&self) -> i64 {
        self.open.iter().map(OpenPosition::unrealized_pnl).sum()
    }
}

pub async fn portfolio(s: &Services, caller: &Caller) -> Result<Portfolio, ServiceError> {
    let totals = positions::totals(&s.db, &caller.wallet).await?;
    let open = positions::open_positions(&s.db, &caller.wallet).await?;
    Ok(Portfolio { totals, open })
}

/// A ranking and the version of the rankings it is current at (`None`: read while changes
/// could not be heard, so not to be kept).
pub struct Leaderboard {
    pub rows: Vec<LeaderRow>,
    pub version: Option<u64>,
}

/// Where `period` starts now (`None`: all time): `Period::start`.
pub fn leaderboard_start(period: Period) -> Option<PeriodStart> {
    period.start(Utc::now())
}

/// Traders ranked over the period from `since` (`leaderboard_start`; all time when `None`).
pub async fn leaderboard(s: &Services, since: Option<PeriodStart>, sort: SortBy, limit: i64) -> Result<Leaderboard, ServiceError> {
    let (rows, version) = s.leaderboard.top(&s.db, since, sort, limit).await?;
    Ok(Leaderboard { rows, version })
}

/// The rankings' version: a ranking served while it holds reflects every change announced so
/// far (`None` while changes cannot be heard: nothing read may be kept).
pub fn leaderboard_version(s: &Services) -> Current {
    Current::take(|| s.leaderboard.version(&s.db))
}
