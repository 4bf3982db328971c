//! The committed IDL (`idl/funding_market.json`, from `anchor idl build`) matches the program:
//! same address, and every instruction, account and event with the discriminator the program
//! uses and nothing else. Regenerate it when this fails (docs/architecture.md, "The program").

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
            ("settle_positions", instruction::SettlePositions::DISCRIMINATOR),
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

/// `anchor idl type`'s conversion: every identifier-like string value of the IDL (not an
/// address) in lowerCamelCase, the whole as a TypeScript type named after the program.
fn typescript(idl: &Value) -> String {
    fn camel(word: &str) -> String {
        let mut words: Vec<String> = Vec::new();
        for part in word.split('_').filter(|p| !p.is_empty()) {
            let mut current = String::new();
            let mut previous_lower = false;
            for c in part.chars() {
                if c.is_uppercase() && previous_lower && !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                previous_lower = c.is_lowercase() || c.is_ascii_digit();
                current.push(c);
            }
            words.push(current);
        }
        words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let lower = w.to_lowercase();
                let mut chars = lower.chars();
                match (i, chars.next()) {
                    (0, Some(first)) => first.to_string() + chars.as_str(),
                    (_, Some(first)) => first.to_uppercase().collect::<String>() + chars.as_str(),
                    (_, None) => String::new(),
                }
            })
            .collect()
    }
    fn is_address(s: &str) -> bool {
        (32..=44).contains(&s.len()) && s.parse::<anchor_lang::prelude::Pubkey>().is_ok()
    }
    fn convert(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for v in map.values_mut() {
                    match v {
                        Value::String(s) if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !is_address(s) => *s = camel(s),
                        other => convert(other),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().filter(|v| !v.is_string()).for_each(convert),
            _ => {}
        }
    }
    let name = idl["metadata"]["name"].as_str().unwrap().to_owned();
    let mut camel_idl = idl.clone();
    convert(&mut camel_idl);
    let type_name: String = camel(&name).chars().enumerate().map(|(i, c)| if i == 0 { c.to_ascii_uppercase() } else { c }).collect();
    format!(
        "/**\n * Program IDL in camelCase format in order to be used in JS/TS.\n *\n * Note that this is only a type helper and is not the actual IDL. The original\n * IDL can be found at `idl/{name}.json`.\n */\nexport type {type_name} = {};\n",
        serde_json::to_string_pretty(&camel_idl).unwrap()
    )
}

/// The TypeScript types front ends import (`idl/funding_market.ts`) are the committed IDL's.
/// `UPDATE_IDL_TS=1 cargo test -p funding-market --test idl` rewrites them.
#[test]
fn the_typescript_types_are_the_idls() {
    let expected = typescript(&idl());
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../idl/funding_market.ts");
    if std::env::var_os("UPDATE_IDL_TS").is_some() {
        std::fs::write(path, &expected).unwrap();
    }
    let committed = std::fs::read_to_string(path).expect("idl/funding_market.ts is committed");
    assert!(committed == expected, "idl/funding_market.ts differs from the IDL: run UPDATE_IDL_TS=1 cargo test -p funding-market --test idl");
    assert!(
        expected.contains("\"name\": \"buyShares\"")
            && expected.contains("\"name\": \"userAccount\"")
            && expected.contains("\"address\": \"98ey5bZy5fsSRR6XLhB8Yy3kUPpviZSDL9pq9oL14g7J\"")
    );
}
