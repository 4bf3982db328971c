//! The program's events, decoded from `emit_cpi!` inner-instruction data (shared by every chain
//! source: the indexer cannot tell which one it follows).

use std::collections::HashMap;

use funding_market::client::decode_event;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use chain_client::ConfirmedTransaction;
use funding_market::events::{DepositSwept, MarketClosed, MarketCreated, MarketFinalized, PositionSettled, TradeExecuted, UserCreated, Withdrawn};

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

/// An event where it sits in its transaction: the outer instruction that emitted it and its
/// place among that instruction's events (the key `chain_events` records it under).
pub struct Located<'a> {
    pub ix_index: i32,
    pub event_index: i32,
    pub event: ProgramEvent,
    /// The inner instruction's data (the event's raw bytes, as recorded).
    pub data: &'a [u8],
}

/// The events of `program_id` in a transaction, in order, each with its place. The projection
/// keys what it records by these places, and the service names the trades it sent by them.
pub fn located<'a>(tx: &'a ConfirmedTransaction, program_id: &'a str) -> impl Iterator<Item = Located<'a>> + 'a {
    let mut per_instruction: HashMap<usize, i32> = HashMap::new();
    tx.inner_instructions.iter().filter(move |i| i.instruction.program_id == program_id).filter_map(move |inner| {
        let event = decode(&inner.instruction.data)?;
        let index = per_instruction.entry(inner.outer_index).or_insert(0);
        let event_index = *index;
        *index += 1;
        Some(Located { ix_index: inner.outer_index as i32, event_index, event, data: &inner.instruction.data })
    })
}

/// The id of the trade row projected from the trade event at (`signature`, `ix_index`,
/// `event_index`): derived from the event's place (a version-8 UUID of its SHA-256), so the
/// projection gives a trade the same id whoever projects it, and the service that sent the
/// trade knows its id without reading it back. Trades projected before ids were derived keep
/// the random ones they were given.
pub fn trade_id(signature: &str, ix_index: i32, event_index: i32) -> Uuid {
    let digest = Sha256::new()
        .chain_update(b"funding-market trade\0")
        .chain_update(signature)
        .chain_update(ix_index.to_le_bytes())
        .chain_update(event_index.to_le_bytes())
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

#[cfg(test)]
mod tests {
    use super::trade_id;

    const SIGNATURE: &str = "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW";

    #[test]
    fn a_trade_id_is_its_events_place_and_never_changes() {
        // Pinned (computed independently: SHA-256 of the domain tag, the signature and the two
        // little-endian indexes, version and variant bits set): every replica and every release
        // must give a trade the id it was answered with.
        assert_eq!(trade_id(SIGNATURE, 1, 2).to_string(), "9c8a68a0-40c4-8677-b473-607dae8313ab");
        assert_eq!(trade_id(SIGNATURE, 1, 2).get_version_num(), 8);
        let ids = [trade_id(SIGNATURE, 1, 2), trade_id(SIGNATURE, 2, 1), trade_id(SIGNATURE, 1, 3), trade_id(&SIGNATURE[1..], 1, 2)];
        for (i, a) in ids.iter().enumerate() {
            for b in &ids[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
