//! The program's events, decoded from `emit_cpi!` inner-instruction data (shared by every chain
//! source: the indexer cannot tell which one it follows).

use funding_market::client::decode_event;
use funding_market::events::{
    DepositSwept, MarketClosed, MarketCreated, MarketFinalized, PositionSettled, TradeExecuted, UserCreated, Withdrawn,
};

pub enum ProgramEvent {
    UserCreated(UserCreated),
    DepositSwept(DepositSwept),
    MarketCreated(MarketCreated),
    TradeExecuted(TradeExecuted),
    MarketFinalized(MarketFinalized),
    PositionSettled(PositionSettled),
    Withdrawn(Withdrawn),
    MarketClosed(MarketClosed),
}

impl ProgramEvent {
    pub fn kind(&self) -> &'static str {
        match self {
            ProgramEvent::UserCreated(_) => "UserCreated",
            ProgramEvent::DepositSwept(_) => "DepositSwept",
            ProgramEvent::MarketCreated(_) => "MarketCreated",
            ProgramEvent::TradeExecuted(_) => "TradeExecuted",
            ProgramEvent::MarketFinalized(_) => "MarketFinalized",
            ProgramEvent::PositionSettled(_) => "PositionSettled",
            ProgramEvent::Withdrawn(_) => "Withdrawn",
            ProgramEvent::MarketClosed(_) => "MarketClosed",
        }
    }
}

/// The event in an inner instruction's data, or `None` for anything else (another instruction
/// of the program, an unknown event, garbage).
pub fn decode(data: &[u8]) -> Option<ProgramEvent> {
    None.or_else(|| decode_event(data).map(ProgramEvent::TradeExecuted))
        .or_else(|| decode_event(data).map(ProgramEvent::MarketCreated))
        .or_else(|| decode_event(data).map(ProgramEvent::MarketFinalized))
        .or_else(|| decode_event(data).map(ProgramEvent::PositionSettled))
        .or_else(|| decode_event(data).map(ProgramEvent::DepositSwept))
        .or_else(|| decode_event(data).map(ProgramEvent::Withdrawn))
        .or_else(|| decode_event(data).map(ProgramEvent::UserCreated))
        .or_else(|| decode_event(data).map(ProgramEvent::MarketClosed))
}
