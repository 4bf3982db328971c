//! Program events as the chain delivers them, for the indexer's tests.
#![allow(dead_code)]

use anchor_lang::prelude::Pubkey;
use anchor_lang::{Event, event::EVENT_IX_TAG_LE};
use chain_client::{ConfirmedTransaction, InnerInstruction, Instruction};
use funding_market::events::{MarketCreated, TradeExecuted};
use funding_market::state::Side;
use sqlx::PgPool;
use uuid::Uuid;

pub const T: i64 = 1_800_000_000;

/// What `emit_cpi!` puts in the inner instruction: the event-instruction tag, then the event's
/// discriminator and Borsh bytes.
pub fn event_data(event: &impl Event) -> Vec<u8> {
    [EVENT_IX_TAG_LE, &event.data()].concat()
}

pub fn tx(signature: &str, slot: u64, events: Vec<Vec<u8>>) -> ConfirmedTransaction {
    let program = funding_market::ID.to_string();
    let mut inner: Vec<InnerInstruction> = vec![
        // A token transfer and a non-event call of our program sit beside the events.
        InnerInstruction {
            outer_index: 0,
            instruction: Instruction { program_id: anchor_spl_token(), accounts: vec![], data: vec![3, 1, 0, 0, 0, 0, 0, 0, 0] },
        },
        InnerInstruction { outer_index: 0, instruction: Instruction { program_id: program.clone(), accounts: vec![], data: vec![9; 12] } },
    ];
    inner.extend(
        events.into_iter().map(|data| InnerInstruction { outer_index: 0, instruction: Instruction { program_id: program.clone(), accounts: vec![], data } }),
    );
    ConfirmedTransaction {
        signature: signature.into(),
        slot,
        transaction_index: None,
        block_time: Some(T),
        err: None,
        signers: vec![],
        instructions: vec![],
        inner_instructions: inner,
    }
}

fn anchor_spl_token() -> String {
    "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA".into()
}

pub async fn seed_market(db: &PgPool) -> Uuid {
    let series = Uuid::new_v4();
    sqlx::query("INSERT INTO series (id, exchange, symbol, slug, display_name, tier, liquidity_b, interval_hours) VALUES ($1, 'binance', 'BTCUSDT', 'binance-btcusdt', 'BTC/USDT', 1, 200000000, 8)")
        .bind(series).execute(db).await.unwrap();
    let market = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO markets (id, series_id, round_number, open_ts, close_ts, settlement_ts, status, liquidity_b, q_yes, q_no, yes_price_ppm, ou_prior_ppm, ou_confidence_ppm)
         VALUES ($1, $2, 1, now(), now() + interval '55 minutes', now() + interval '1 hour', 'open', 200000000, 0, 0, 500000, 500000, 0)",
    )
    .bind(market).bind(series).execute(db).await.unwrap();
    market
}

/// The `MarketCreated` of `market_id` at `market` (b = 200 USDC, even prior, opening at `T`).
pub fn market_created(market: Pubkey, market_id: Uuid) -> MarketCreated {
    MarketCreated {
        market,
        market_id: *market_id.as_bytes(),
        series: [0; 32],
        open_ts: T,
        close_ts: T + 3300,
        settlement_ts: T + 3600,
        b: 200_000_000,
        q_yes: 0,
        q_no: 0,
        subsidy: 138_629_437,
        yes_price: 500_000,
        no_price: 500_000,
        ts: T,
    }
}

pub fn trade(market: Pubkey, wallet: Pubkey, count: u64, yes_after: u64, q_yes: u64, user_vault: u64) -> TradeExecuted {
    TradeExecuted {
        market,
        wallet,
        side: Side::Yes,
        is_buy: true,
        shares: 10_000_000,
        amount: 5_000_000,
        fee: 50_000,
        q_yes,
        q_no: 0,
        yes_price: 510_000 + count,
        no_price: 490_000 - count,
        volume: 5_000_000 * count,
        trade_count: count,
        position_yes: yes_after,
        position_no: 0,
        vault_balance: 100_000_000,
        user_vault_balance: user_vault,
        ts: T + count as i64,
    }
}
