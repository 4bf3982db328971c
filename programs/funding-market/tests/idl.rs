//! The committed IDL (`idl/funding_market.json`, from `anchor idl build`) matches the program:
//! same address, and every instruction, account and event with the discriminator the program
//! uses and nothing else. Regenerate it when this fails (README, "The program").

use anchor_lang::Discriminator;
use funding_market::{events, instruction, state};
use serde_json::Value;

fn idl() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../idl/funding_market.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("idl/funding_market.json is committed")).unwrap()
}

fn discriminators(idl: &Value, section: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = idl[section]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let bytes = item["discriminator"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap() as u8).collect();
            (item["name"].as_str().unwrap().to_owned(), bytes)
        })
        .collect();
    out.sort();
    out
}

fn expected(pairs: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = pairs.iter().map(|(n, d)| (n.to_string(), d.to_vec())).collect();
    out.sort();
    out
}

#[test]
fn the_committed_idl_matches_the_program() {
    let idl = idl();
    assert_eq!(idl["address"], funding_market::ID.to_string());
    assert_eq!(
        discriminators(&idl, "instructions"),
        expected(&[
            ("initialize", instruction::Initialize::DISCRIMINATOR),
            ("create_user", instruction::CreateUser::DISCRIMINATOR),
            ("sweep_deposit", instruction::SweepDeposit::DISCRIMINATOR),
            ("create_market", instruction::CreateMarket::DISCRIMINATOR),
            ("buy_shares", instruction::BuyShares::DISCRIMINATOR),
            ("sell_shares", instruction::SellShares::DISCRIMINATOR),
            ("resolve_market", instruction::ResolveMarket::DISCRIMINATOR),
            ("void_market", instruction::VoidMarket::DISCRIMINATOR),
            ("settle_position", instruction::SettlePosition::DISCRIMINATOR),
            ("withdraw", instruction::Withdraw::DISCRIMINATOR),
            ("close_market", instruction::CloseMarket::DISCRIMINATOR),
        ])
    );
    assert_eq!(
        discriminators(&idl, "accounts"),
        expected(&[
            ("Config", state::Config::DISCRIMINATOR),
            ("Market", state::Market::DISCRIMINATOR),
            ("Position", state::Position::DISCRIMINATOR),
            ("UserAccount", state::UserAccount::DISCRIMINATOR),
        ])
    );
    assert_eq!(
        discriminators(&idl, "events"),
        expected(&[
            ("UserCreated", events::UserCreated::DISCRIMINATOR),
            ("DepositSwept", events::DepositSwept::DISCRIMINATOR),
            ("MarketCreated", events::MarketCreated::DISCRIMINATOR),
            ("TradeExecuted", events::TradeExecuted::DISCRIMINATOR),
            ("MarketFinalized", events::MarketFinalized::DISCRIMINATOR),
            ("PositionSettled", events::PositionSettled::DISCRIMINATOR),
            ("Withdrawn", events::Withdrawn::DISCRIMINATOR),
            ("MarketClosed", events::MarketClosed::DISCRIMINATOR),
        ])
    );
    let errors: Vec<(u64, String)> =
        idl["errors"].as_array().unwrap().iter().map(|e| (e["code"].as_u64().unwrap(), e["name"].as_str().unwrap().to_owned())).collect();
    assert_eq!(errors.first(), Some(&(6000, "FeeTooHigh".to_owned())));
    assert_eq!(errors.last().map(|e| e.0), Some(u32::from(funding_market::error::FundingMarketError::NotUpgradeAuthority) as u64));
}
