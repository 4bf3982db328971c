//! A quote: what buying a side of a market would fill, computed by the same `lmsr` functions
//! the program executes, with the fee and minimum the program's config sets (`TradeTerms`), so
//! a quote and the trade that follows it agree to the micro-USDC.

use chrono::{DateTime, Utc};

use super::market::{MarketStatus, Side, per_share};

/// The program config's terms of trade: what a trade is charged and the least it may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TradeTerms {
    /// Fee on the amount, basis points, charged on top.
    pub fee_bps: u16,
    /// Minimum trade amount, micro-USDC.
    pub min_trade: u64,
    /// Minimum deposit sweep, micro-USDC.
    pub min_deposit: u64,
}

impl TradeTerms {
    /// The fee on `amount` micro-USDC (rounded up, in the market maker's favour).
    pub fn fee(&self, amount: u64) -> Option<u64> {
        lmsr::fee(amount, self.fee_bps).ok()
    }
}

/// A market's state as far as pricing goes.
#[derive(Clone, Copy, Debug)]
pub struct PricedMarket {
    pub status: MarketStatus,
    pub open_ts: DateTime<Utc>,
    pub close_ts: DateTime<Utc>,
    /// LMSR liquidity and quantities, micro-USDC and micro-shares.
    pub liquidity_b: u64,
    pub q_yes: u64,
    pub q_no: u64,
}

/// A filled quote, in integers (micro-USDC, micro-shares, micro-USDC per share).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quote {
    pub side: Side,
    pub amount: u64,
    pub shares: u64,
    pub avg_price: i64,
    /// How far the bought side's price moves.
    pub price_impact: i64,
    pub fee: u64,
    /// amount + fee: what the balance is debited.
    pub total_cost: u64,
    pub yes_price: u64,
    pub no_price: u64,
    pub new_yes_price: u64,
    pub new_no_price: u64,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuoteError {
    #[error("the market is {0}, not open for trading")]
    NotOpen(MarketStatus),
    #[error("amount must be at least {min} micro-USDC")]
    BelowMinimum { min: u64 },
    #[error("amount buys no shares")]
    NoShares,
    #[error("amount: {0}")]
    Amount(String),
    /// The stored state is outside the LMSR domain: a fault of ours, not the caller's.
    #[error("market state outside the LMSR domain: {0}")]
    State(String),
}

/// Whether trading is open at `now` (the program's own rule: open status, `open_ts ≤ now <
/// close_ts`).
pub fn is_tradable(market: &PricedMarket, now: DateTime<Utc>) -> bool {
    market.status == MarketStatus::Open && now >= market.open_ts && now < market.close_ts
}

/// Whether `market` takes a buy of `amount` micro-USDC at `now`: the checks `buy` makes before
/// it fills, in its order.
pub fn admits(market: &PricedMarket, terms: &TradeTerms, amount: u64, now: DateTime<Utc>) -> Result<(), QuoteError> {
    if amount < terms.min_trade {
        return Err(QuoteError::BelowMinimum { min: terms.min_trade });
    }
    if !is_tradable(market, now) {
        return Err(QuoteError::NotOpen(market.status));
    }
    Ok(())
}

/// Buying `side` with `amount` micro-USDC in `market` at `now`, as the program would fill it.
pub fn buy(market: &PricedMarket, terms: &TradeTerms, side: Side, amount: u64, now: DateTime<Utc>) -> Result<Quote, QuoteError> {
    admits(market, terms, amount, now)?;
    let state = lmsr::Lmsr::new(market.liquidity_b, market.q_yes, market.q_no).map_err(|e| QuoteError::State(e.to_string()))?;
    let fill = state.buy(side.into(), amount).map_err(|e| QuoteError::Amount(e.to_string()))?;
    if fill.amount_out == 0 {
        return Err(QuoteError::NoShares);
    }
    let fee = terms.fee(amount).ok_or_else(|| QuoteError::Amount("the fee overflows".into()))?;
    let total_cost = amount.checked_add(fee).ok_or_else(|| QuoteError::Amount("amount plus fee overflows".into()))?;
    let (yes, no) = state.prices_micro();
    let (new_yes, new_no) = fill.after.prices_micro();
    let (before, after) = match side {
        Side::Yes => (yes, new_yes),
        Side::No => (no, new_no),
    };
    let shares = fill.amount_out;
    Ok(Quote {
        side,
        amount,
        shares,
        avg_price: per_share(amount as i64, shares as i64),
        price_impact: after as i64 - before as i64,
        fee,
        total_cost,
        yes_price: yes,
        no_price: no,
        new_yes_price: new_yes,
        new_no_price: new_no,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_market() -> PricedMarket {
        let now = Utc::now();
        let opening = lmsr::Lmsr::opening(100_000_000, 500_000).unwrap();
        PricedMarket {
            status: MarketStatus::Open,
            open_ts: now - chrono::Duration::hours(1),
            close_ts: now + chrono::Duration::hours(1),
            liquidity_b: 100_000_000,
            q_yes: opening.q(lmsr::Side::Yes),
            q_no: opening.q(lmsr::Side::No),
        }
    }

    #[test]
    fn the_fee_and_minimum_are_the_terms_given() {
        let market = open_market();
        let cheap = TradeTerms { fee_bps: 0, min_trade: 10, min_deposit: 10 };
        let q = buy(&market, &cheap, Side::Yes, 500_000, Utc::now()).unwrap();
        assert_eq!((q.fee, q.total_cost), (0, 500_000));
        let dear = TradeTerms { fee_bps: 250, min_trade: 2_000_000, min_deposit: 1 };
        assert_eq!(buy(&market, &dear, Side::Yes, 1_500_000, Utc::now()), Err(QuoteError::BelowMinimum { min: 2_000_000 }));
        let q = buy(&market, &dear, Side::No, 4_000_000, Utc::now()).unwrap();
        assert_eq!((q.fee, q.total_cost), (100_000, 4_100_000));
        assert!(q.new_no_price > q.no_price && q.price_impact > 0);
    }

    #[test]
    fn closed_markets_do_not_quote() {
        let mut market = open_market();
        market.status = MarketStatus::Closed;
        let terms = TradeTerms { fee_bps: 100, min_trade: 1_000_000, min_deposit: 1_000_000 };
        assert_eq!(buy(&market, &terms, Side::Yes, 5_000_000, Utc::now()), Err(QuoteError::NotOpen(MarketStatus::Closed)));
        let market = open_market();
        assert!(buy(&market, &terms, Side::Yes, 5_000_000, market.close_ts).is_err(), "closes at close_ts");
    }
}
