//! What the WebSocket sends, in the REST API's own views (the same fields and decimal strings
//! as the matching endpoint): a channel's snapshot on subscribe, and each stream event rendered
//! from the current state of what it names.

use serde_json::{Value, json};
use uuid::Uuid;

use super::super::markets::{Market, TradeItem};
use super::super::money::{Deposit, Withdrawal};
use super::super::series::SeriesCard;
use super::super::trading::Balance;
use super::super::users::Position;
use crate::domain::caller::Caller;
use crate::domain::market::MarketStatus;
use crate::services::stream::Published;
use crate::services::{Page, ServiceError, Services, deposits, markets, trading, users, withdrawals};

/// Trades in a market's snapshot.
const SNAPSHOT_TRADES: i64 = 20;
/// Open markets in the `markets` snapshot.
const SNAPSHOT_MARKETS: i64 = 1000;

/// A channel a client may subscribe to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientChannel {
    /// `market:<id>`: the market's price, volume and status, and its trades.
    Market(Uuid),
    /// `series:<slug>`: its rounds' status (created, opened, closed, settled, voided).
    Series(String),
    /// `markets`: every market's status changes.
    Markets,
    /// `account`, after `auth`: the caller's balance, positions, trades, deposits, withdrawals.
    Account,
}

impl ClientChannel {
    pub fn parse(name: &str) -> Result<ClientChannel, String> {
        let unknown = || format!("unknown channel {name:?}: expected markets, account, market:<id> or series:<slug>");
        Ok(match name.split_once(':') {
            None if name == "markets" => ClientChannel::Markets,
            None if name == "account" => ClientChannel::Account,
            Some(("market", id)) => ClientChannel::Market(id.parse().map_err(|_| format!("{id:?} is not a market id (a UUID)"))?),
            Some(("series", slug)) if !slug.is_empty() && slug.len() <= 64 => ClientChannel::Series(slug.to_owned()),
            _ => return Err(unknown()),
        })
    }

    /// The name clients use.
    pub fn name(&self) -> String {
        match self {
            ClientChannel::Market(id) => format!("market:{id}"),
            ClientChannel::Series(slug) => format!("series:{slug}"),
            ClientChannel::Markets => "markets".into(),
            ClientChannel::Account => "account".into(),
        }
    }

    /// The stream's name for it (an account is the caller's wallet).
    pub fn stream_name(&self, caller: Option<&Caller>) -> String {
        match (self, caller) {
            (ClientChannel::Account, Some(caller)) => format!("account:{}", caller.wallet),
            _ => self.name(),
        }
    }
}

/// The client's name of a stream channel (`account:<wallet>` is `account`).
pub fn client_channel(stream: &str) -> &str {
    if stream.starts_with("account:") { "account" } else { stream }
}

fn to_json(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("a view serializes")
}

/// The channel's current state.
pub async fn snapshot(s: &Services, channel: &ClientChannel, caller: Option<&Caller>) -> Result<Value, ServiceError> {
    let first = |limit| Page { limit, offset: 0 };
    Ok(match channel {
        ClientChannel::Market(id) => {
            let market = markets::market_now(s, *id).await?;
            let (trades, _) = markets::trades(s, *id, first(SNAPSHOT_TRADES)).await?;
            json!({"market": Market::from(market), "trades": trades.into_iter().map(TradeItem::from).collect::<Vec<_>>()})
        }
        ClientChannel::Series(slug) => to_json(SeriesCard::from(markets::series_now(s, slug).await?)),
        ClientChannel::Markets => {
            let (open, _) = markets::list(s, Some(MarketStatus::Open), first(SNAPSHOT_MARKETS)).await?;
            json!({"open": open.into_iter().map(Market::from).collect::<Vec<_>>()})
        }
        ClientChannel::Account => {
            let caller = caller.ok_or_else(|| ServiceError::Unauthorized("send an auth message before subscribing to account".into()))?;
            account_state(s, caller).await?
        }
    })
}

async fn account_state(s: &Services, caller: &Caller) -> Result<Value, ServiceError> {
    let balance = Balance::from(trading::balance(s, caller).await?);
    let positions: Vec<Position> = users::positions(s, caller).await?.into_iter().map(Position::from).collect();
    Ok(json!({"balance": balance, "positions": positions}))
}

/// An event as its subscribers see it (`None`: nothing to show, e.g. it no longer exists).
pub async fn update(s: &Services, event: &Published, caller: Option<&Caller>) -> Result<Option<Value>, ServiceError> {
    let id = |key: &str| event.reference.get(key).and_then(Value::as_str).and_then(|v| v.parse::<Uuid>().ok());
    let account = event.channel.starts_with("account:");
    Ok(Some(match (event.kind.as_str(), caller) {
        ("trade", _) => {
            let Some(trade) = id("trade_id") else { return Ok(None) };
            let trade = markets::trade(s, trade).await?;
            let market = trade.market_id;
            match account {
                true => json!({"market_id": market, "trade": TradeItem::from(trade)}),
                false => to_json(TradeItem::from(trade)),
            }
        }
        ("market" | "round", _) => {
            let Some(market) = id("market_id") else { return Ok(None) };
            to_json(Market::from(markets::market_now(s, market).await?))
        }
        ("balance", Some(caller)) => to_json(Balance::from(trading::balance(s, caller).await?)),
        ("positions", Some(caller)) => to_json(users::positions(s, caller).await?.into_iter().map(Position::from).collect::<Vec<_>>()),
        ("deposit", Some(caller)) => {
            let text = |key: &str| event.reference.get(key).and_then(Value::as_str);
            let (Some(signature), Some(address)) = (text("signature"), text("address")) else { return Ok(None) };
            to_json(Deposit::from(deposits::get(s, caller, signature, address).await?))
        }
        ("withdrawal", Some(caller)) => {
            let Some(withdrawal) = id("id") else { return Ok(None) };
            to_json(Withdrawal::from(withdrawals::get(s, caller, withdrawal).await?))
        }
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_parse_with_clear_refusals() {
        let id = Uuid::new_v4();
        assert_eq!(ClientChannel::parse(&format!("market:{id}")), Ok(ClientChannel::Market(id)));
        assert_eq!(ClientChannel::parse("series:binance-btcusdt"), Ok(ClientChannel::Series("binance-btcusdt".into())));
        assert_eq!(ClientChannel::parse("markets"), Ok(ClientChannel::Markets));
        assert_eq!(ClientChannel::parse("account"), Ok(ClientChannel::Account));
        assert!(ClientChannel::parse("market:7").unwrap_err().contains("not a market id"));
        assert!(ClientChannel::parse("prices").unwrap_err().contains("unknown channel"));
        assert!(ClientChannel::parse("series:").unwrap_err().contains("unknown channel"));
        assert_eq!(client_channel("account:9xQe"), "account");
        assert_eq!(client_channel("markets"), "markets");
    }
}
