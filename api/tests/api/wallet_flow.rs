//! The wallet-signed path on the embedded chain with real keys: ensure-onchain, the wallet's
//! signature, co-sign, submission, a buy signed by the wallet, trade/confirm — and everything
//! co-sign and confirm must refuse.

use std::time::Duration;

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::instruction::{AccountMeta, Instruction};
use anchor_lang::solana_program::system_instruction;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use funding_market::client;
use funding_market::state::{Position, Side};
use serde_json::{Value, json};
use solana_keypair::Keypair;
use solana_message::Message;
use solana_signer::Signer;
use solana_transaction::Transaction;
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::*;
use crate::trading::{Trading, micros, open_market, trading};

const COMPUTE_BUDGET: Pubkey = anchor_lang::pubkey!("ComputeBudget111111111111111111111111111111");

/// A signed-in wallet with test USDC and SOL.
struct Trader {
    keypair: Keypair,
    token: String,
}

async fn trader(t: &Trading, usdc: &str) -> Trader {
    let key = wallet();
    let token = t.app.sign_in(&key).await;
    assert_eq!(t.faucet(&address(&key), usdc).await.0, 200);
    Trader { keypair: Keypair::new_from_array(key.to_bytes()), token }
}

fn replay_headers(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    request.header("X-Request-Nonce", Uuid::new_v4().to_string()).header("X-Request-Timestamp", chrono::Utc::now().timestamp().to_string())
}

async fn post_replay(t: &Trading, path: &str, token: &str, body: Value) -> (u16, Value) {
    let request = t.app.http.post(format!("{}{path}", t.app.base)).bearer_auth(token).json(&body);
    let response = replay_headers(request).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

fn encode(tx: &Transaction) -> String {
    BASE64.encode(bincode::serialize(tx).unwrap())
}

fn decode(b64: &str) -> Transaction {
    bincode::deserialize(&BASE64.decode(b64).unwrap()).unwrap()
}

async fn ensure(t: &Trading, market: Uuid, token: &str) -> Value {
    let (status, body) = t.get(&format!("/v1/markets/{market}/ensure-onchain"), token).await;
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

/// A wallet-signed transaction of `ixs`, paid by the wallet, on a current blockhash.
async fn wallet_tx(t: &Trading, ixs: &[Instruction], payer: &Keypair, signers: &[&Keypair]) -> Vec<u8> {
    let (blockhash, _) = t.chain.latest_blockhash().await.unwrap();
    let mut all = vec![payer];
    all.extend_from_slice(signers);
    bincode::serialize(&Transaction::new_signed_with_payer(ixs, Some(&payer.pubkey()), &all, blockhash.parse().unwrap())).unwrap()
}

async fn position(t: &Trading, market: Uuid, wallet: &Pubkey) -> Position {
    let address = client::position_pda(&client::market_pda(market.as_bytes()), wallet);
    let account = t.chain.account(&address.to_string()).await.unwrap().unwrap();
    client::decode(&account.data).unwrap()
}

fn shares(v: u64) -> String {
    format!("{}.{:06}", v / 1_000_000, v % 1_000_000)
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_wallet_creates_the_market_trades_and_confirms(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let alice = trader(&t, "100").await;
    let market = open_market(&db, "open").await;

    // ensure-onchain: the market's creation, for Alice to pay.
    let needed = ensure(&t, market, &alice.token).await;
    assert_eq!((needed["status"].as_str(), needed["market_id"].as_str()), (Some("needs_cosign"), Some(market.to_string().as_str())));
    let mut tx = decode(needed["transaction"].as_str().unwrap());
    assert_eq!(tx.message.account_keys[0], alice.keypair.pubkey(), "the wallet pays");
    let blockhash = tx.message.recent_blockhash;
    tx.partial_sign(&[&alice.keypair], blockhash);

    let (status, cosigned) = post_replay(&t, &format!("/v1/markets/{market}/co-sign"), &alice.token, json!({"transaction": encode(&tx)})).await;
    assert_eq!(status, 200, "{cosigned}");
    let full = BASE64.decode(cosigned["data"]["transaction"].as_str().unwrap()).unwrap();
    t.chain.send_and_confirm(&full).await.unwrap();
    let ready = ensure(&t, market, &alice.token).await;
    assert_eq!((ready["status"].as_str(), ready["pda"].as_str()), (Some("ready"), Some(client::market_pda(market.as_bytes()).to_string().as_str())));

    // Alice's own buy, then its confirmation.
    let alice_key = alice.keypair.pubkey();
    let buy = client::buy_shares(alice_key, alice_key, market.as_bytes(), Side::No, 20_000_000, 0);
    let signature = t.chain.send_and_confirm(&wallet_tx(&t, &[buy], &alice.keypair, &[]).await).await.unwrap();
    let held = position(&t, market, &alice_key).await.no_shares;
    let confirm = json!({"market_id": market, "tx_sig": signature, "side": "no", "shares": shares(held)});
    let (status, confirmed) = post_replay(&t, "/v1/trade/confirm", &alice.token, confirm.clone()).await;
    assert_eq!(status, 200, "{confirmed}");
    let trade = &confirmed["data"];
    assert_eq!((trade["side"].as_str(), trade["cost_usdc"].as_str(), trade["fee_usdc"].as_str()), (Some("no"), Some("20.000000"), Some("0.200000")));
    assert_eq!(micros(&trade["shares"]) as u64, held);
    let (_, balance) = t.get("/v1/users/me/balance", &alice.token).await;
    assert_eq!(balance["data"], json!({"usdc_balance": "79.800000", "locked_in_positions": "20.200000", "total": "100.000000"}));

    // Idempotent per signature: again (fresh nonce) is the same trade, nothing counted twice.
    let (status, again) = post_replay(&t, "/v1/trade/confirm", &alice.token, confirm.clone()).await;
    assert_eq!((status, &again["data"]["trade_id"]), (200, &trade["trade_id"]));
    let trades: i64 = sqlx::query_scalar("SELECT count(*) FROM trades WHERE signature = $1").bind(&signature).fetch_one(&db).await.unwrap();
    assert_eq!(trades, 1);
    // The same request with the same nonce is a replay.
    let nonce = Uuid::new_v4().to_string();
    let now = chrono::Utc::now().timestamp().to_string();
    for expected in [200, 422] {
        let response = t
            .app
            .http
            .post(format!("{}/v1/trade/confirm", t.app.base))
            .bearer_auth(&alice.token)
            .header("X-Request-Nonce", &nonce)
            .header("X-Request-Timestamp", &now)
            .json(&confirm)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), expected);
    }

    // The refusals.
    let bob = trader(&t, "100").await;
    let other_open = open_market(&db, "open").await;
    let bob_key = bob.keypair.pubkey();
    let failing = client::buy_shares(bob_key, bob_key, market.as_bytes(), Side::Yes, 500_000_000, 0);
    let failed = t.chain.send_skipping_preflight(&wallet_tx(&t, &[failing], &bob.keypair, &[]).await).await.unwrap_err();
    let failed_signature = match failed {
        chain_client::ChainError::TransactionFailed { signature, .. } => signature,
        other => panic!("{other:?}"),
    };
    let unknown = bs58::encode([9u8; 64]).into_string();
    for (who, body, status, code) in [
        (&bob.token, confirm.clone(), 422, "NOT_YOUR_TRANSACTION"),
        (&alice.token, json!({"market_id": market, "tx_sig": signature, "side": "yes", "shares": shares(held)}), 422, "TRADE_MISMATCH"),
        (&alice.token, json!({"market_id": market, "tx_sig": signature, "side": "no", "shares": shares(held - 1)}), 422, "TRADE_MISMATCH"),
        (&alice.token, json!({"market_id": other_open, "tx_sig": signature, "side": "no", "shares": shares(held)}), 422, "PDA_NOT_FOUND"),
        (&alice.token, json!({"market_id": Uuid::new_v4(), "tx_sig": signature, "side": "no", "shares": shares(held)}), 404, "NOT_FOUND"),
        (&alice.token, json!({"market_id": market, "tx_sig": unknown, "side": "no", "shares": shares(held)}), 422, "TRANSACTION_NOT_FOUND"),
        (&bob.token, json!({"market_id": market, "tx_sig": failed_signature, "side": "yes", "shares": "1"}), 422, "TRANSACTION_FAILED"),
        (&alice.token, json!({"market_id": "not-a-uuid", "tx_sig": signature, "side": "no", "shares": "1"}), 400, "INVALID_INPUT"),
        (&alice.token, json!({"market_id": market, "tx_sig": "xyz", "side": "no", "shares": "1"}), 400, "INVALID_INPUT"),
        (&alice.token, json!({"market_id": market, "tx_sig": signature, "side": "maybe", "shares": "1"}), 400, "INVALID_INPUT"),
    ] {
        let (got, answer) = post_replay(&t, "/v1/trade/confirm", who, body.clone()).await;
        assert_eq!((got, answer["error"]["code"].as_str()), (status, Some(code)), "{body} -> {answer}");
    }
    // Without the anti-replay headers, or with an API key: refused before anything else.
    let bare = t.app.http.post(format!("{}/v1/trade/confirm", t.app.base)).bearer_auth(&alice.token).json(&confirm).send().await.unwrap();
    assert_eq!(bare.status().as_u16(), 400);
}

/// Everything co-sign must refuse, each from a wallet that would gain from it; none comes back
/// signed.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn co_sign_refuses_every_variant_but_the_exact_one(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let alice = trader(&t, "10").await;
    let mallory = trader(&t, "10").await;
    let market = open_market(&db, "open").await;
    let other_market = open_market(&db, "open").await;
    let closed = open_market(&db, "closed").await;
    let a = alice.keypair.pubkey();
    let onchain_authority = t.chain.keys().authority.pubkey();

    let template = decode(ensure(&t, market, &alice.token).await["transaction"].as_str().unwrap());
    let blockhash = template.message.recent_blockhash;
    let expected = {
        let m = &template.message;
        let ix = &m.instructions[0];
        Instruction {
            program_id: m.account_keys[ix.program_id_index as usize],
            accounts: ix
                .accounts
                .iter()
                .map(|&i| AccountMeta {
                    pubkey: m.account_keys[i as usize],
                    is_signer: m.is_signer(i as usize),
                    is_writable: m.is_maybe_writable(i as usize, None),
                })
                .collect(),
            data: ix.data.clone(),
        }
    };
    let other_create = decode(ensure(&t, other_market, &alice.token).await["transaction"].as_str().unwrap());
    let signed = |ixs: &[Instruction], payer: &Pubkey, signers: &[&Keypair]| -> String {
        let mut tx = Transaction::new_unsigned(Message::new_with_blockhash(ixs, Some(payer), &blockhash));
        tx.partial_sign(signers, blockhash);
        encode(&tx)
    };
    let with_data = |change: &dyn Fn(&mut Vec<u8>)| {
        let mut ix = expected.clone();
        change(&mut ix.data);
        ix
    };
    // Instruction data: 8-byte discriminator, then market_id (16), series (32), open, close,
    // settlement (i64 each), b (u64), prior_ppm (u32).
    let b_at = 8 + 16 + 32 + 24;
    let transfer_out = Instruction {
        program_id: anchor_lang::pubkey!("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"),
        accounts: vec![
            AccountMeta::new(client::treasury_pda(), false),
            AccountMeta::new(client::vault_pda(&a), false),
            AccountMeta::new_readonly(onchain_authority, true),
        ],
        data: [vec![3], 1_000_000_000u64.to_le_bytes().to_vec()].concat(),
    };
    let compute_limit = Instruction { program_id: COMPUTE_BUDGET, accounts: vec![], data: [vec![2], 300_000u32.to_le_bytes().to_vec()].concat() };
    let compute_with_account =
        Instruction { program_id: COMPUTE_BUDGET, accounts: vec![AccountMeta::new(client::treasury_pda(), false)], data: compute_limit.data.clone() };
    let nonce_account = Keypair::new().pubkey();
    let advance_nonce = system_instruction::advance_nonce_account(&nonce_account, &a);
    let mut readonly_treasury = expected.clone();
    if let Some(meta) = readonly_treasury.accounts.iter_mut().find(|m| m.is_writable && !m.is_signer) {
        meta.is_writable = false;
    }
    let mut swapped_account = expected.clone();
    if let Some(meta) = swapped_account.accounts.iter_mut().find(|m| m.pubkey == client::treasury_pda()) {
        meta.pubkey = client::vault_pda(&a);
    }
    let mut third_signer = expected.clone();
    third_signer.accounts.push(AccountMeta::new_readonly(mallory.keypair.pubkey(), true));
    let unsigned = encode(&Transaction::new_unsigned(Message::new_with_blockhash(std::slice::from_ref(&expected), Some(&a), &blockhash)));
    let wrongly_signed = {
        let mut tx = Transaction::new_unsigned(Message::new_with_blockhash(std::slice::from_ref(&expected), Some(&a), &blockhash));
        tx.signatures[0] = mallory.keypair.sign_message(&tx.message_data());
        encode(&tx)
    };
    let stale = {
        let stale_hash = "4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi".parse().unwrap();
        let mut tx = Transaction::new_unsigned(Message::new_with_blockhash(std::slice::from_ref(&expected), Some(&a), &stale_hash));
        tx.partial_sign(&[&alice.keypair], stale_hash);
        encode(&tx)
    };
    let versioned = {
        let v0 = solana_message::v0::Message::try_compile(&a, std::slice::from_ref(&expected), &[], blockhash).unwrap();
        let tx = solana_transaction::versioned::VersionedTransaction::try_new(solana_message::VersionedMessage::V0(v0), &[&alice.keypair]);
        // One signer short: the authority's slot is left empty by try_new's signer count check.
        tx.map(|tx| BASE64.encode(bincode::serialize(&tx).unwrap())).unwrap_or_else(|_| {
            let v0 = solana_message::v0::Message::try_compile(&a, std::slice::from_ref(&expected), &[], blockhash).unwrap();
            let message = solana_message::VersionedMessage::V0(v0);
            let tx = solana_transaction::versioned::VersionedTransaction { signatures: vec![Default::default(); 2], message };
            BASE64.encode(bincode::serialize(&tx).unwrap())
        })
    };
    let trailing = {
        let mut bytes = BASE64.decode(signed(std::slice::from_ref(&expected), &a, &[&alice.keypair])).unwrap();
        bytes.extend_from_slice(&[0; 8]);
        BASE64.encode(bytes)
    };
    let other_market_data = {
        let mut tx = other_create.clone();
        tx.partial_sign(&[&alice.keypair], other_create.message.recent_blockhash);
        encode(&tx)
    };

    let cases: Vec<(&str, &str, String)> = vec![
        ("extra instruction", &alice.token, signed(&[expected.clone(), system_instruction::transfer(&a, &mallory.keypair.pubkey(), 1)], &a, &[&alice.keypair])),
        (
            "other program instead",
            &alice.token,
            signed(
                &[Instruction {
                    program_id: anchor_lang::pubkey!("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"),
                    accounts: vec![AccountMeta::new_readonly(onchain_authority, true)],
                    data: b"hi".to_vec(),
                }],
                &a,
                &[&alice.keypair],
            ),
        ),
        ("another market's create_market", &alice.token, other_market_data),
        ("changed b (subsidy)", &alice.token, signed(&[with_data(&|d| d[b_at..b_at + 8].copy_from_slice(&u64::MAX.to_le_bytes()))], &a, &[&alice.keypair])),
        ("changed prior", &alice.token, signed(&[with_data(&|d| d[b_at + 8..b_at + 12].copy_from_slice(&980_000u32.to_le_bytes()))], &a, &[&alice.keypair])),
        ("changed close time", &alice.token, signed(&[with_data(&|d| d[8 + 16 + 32 + 8] ^= 1)], &a, &[&alice.keypair])),
        ("transfer from the treasury beside it", &alice.token, signed(&[expected.clone(), transfer_out.clone()], &a, &[&alice.keypair])),
        ("transfer from the treasury alone", &alice.token, signed(&[transfer_out], &a, &[&alice.keypair])),
        ("other fee payer", &alice.token, signed(std::slice::from_ref(&expected), &mallory.keypair.pubkey(), &[&mallory.keypair])),
        (
            "authority as fee payer",
            &alice.token,
            encode(&Transaction::new_unsigned(Message::new_with_blockhash(std::slice::from_ref(&expected), Some(&onchain_authority), &blockhash))),
        ),
        ("durable nonce", &alice.token, signed(&[advance_nonce, expected.clone()], &a, &[&alice.keypair])),
        ("two create_market", &alice.token, signed(&[expected.clone(), expected.clone()], &a, &[&alice.keypair])),
        ("compute budget with an account", &alice.token, signed(&[compute_with_account, expected.clone()], &a, &[&alice.keypair])),
        ("a writable account made read-only", &alice.token, signed(&[readonly_treasury], &a, &[&alice.keypair])),
        ("an account swapped", &alice.token, signed(&[swapped_account], &a, &[&alice.keypair])),
        ("a third signer", &alice.token, signed(&[third_signer], &a, &[&alice.keypair, &mallory.keypair])),
        ("not signed by the payer", &alice.token, unsigned),
        ("signed by someone else", &alice.token, wrongly_signed),
        ("stale blockhash", &alice.token, stale),
        ("versioned message", &alice.token, versioned),
        ("another user's transaction", &mallory.token, signed(std::slice::from_ref(&expected), &a, &[&alice.keypair])),
        ("garbage base64", &alice.token, "***not base64***".into()),
        ("base64 of garbage", &alice.token, BASE64.encode([7u8; 300])),
        ("trailing bytes", &alice.token, trailing),
        ("oversized", &alice.token, BASE64.encode(vec![1u8; 2_000])),
        ("empty", &alice.token, String::new()),
    ];
    assert!(cases.len() >= 20);
    for (name, token, transaction) in &cases {
        let (status, body) = post_replay(&t, &format!("/v1/markets/{market}/co-sign"), token, json!({"transaction": transaction})).await;
        let code = body["error"]["code"].as_str().unwrap_or("");
        assert!(matches!((status, code), (422, "COSIGN_REFUSED") | (400, "INVALID_INPUT")), "{name}: {status} {body}");
        assert!(body["data"].is_null(), "{name}: nothing signed");
    }
    // A closed market is not created at all.
    let (status, body) = t.get(&format!("/v1/markets/{closed}/ensure-onchain"), &alice.token).await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("MARKET_CLOSED")));
    // The exact transaction, with a compute-budget instruction beside it, is signed.
    let (status, body) = post_replay(
        &t,
        &format!("/v1/markets/{market}/co-sign"),
        &alice.token,
        json!({"transaction": signed(&[compute_limit, expected.clone()], &a, &[&alice.keypair])}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // And nothing of the refused ones was ever on chain: the market still needs creating.
    assert_eq!(ensure(&t, market, &alice.token).await["status"], "needs_cosign");
}

/// The embedded chain's JSON-RPC endpoint, driven by the RPC chain client: a wallet's whole
/// path through `/rpc` as through a cluster, and the indexer following the chain over RPC.
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_embedded_chain_speaks_json_rpc(db: PgPool) {
    use chain_client::{ChainSource, RpcChain};
    let t = trading(&db, Duration::from_secs(10)).await;
    let rpc = RpcChain::new(&format!("{}/rpc", t.app.base), Duration::from_secs(10));
    let alice = trader(&t, "50").await;
    let market = open_market(&db, "open").await;

    // Create the market through co-sign, sending over RPC.
    let mut create = decode(ensure(&t, market, &alice.token).await["transaction"].as_str().unwrap());
    assert!(rpc.is_blockhash_valid(&create.message.recent_blockhash.to_string()).await.unwrap());
    let blockhash = create.message.recent_blockhash;
    create.partial_sign(&[&alice.keypair], blockhash);
    let (_, cosigned) = post_replay(&t, &format!("/v1/markets/{market}/co-sign"), &alice.token, json!({"transaction": encode(&create)})).await;
    let wire = BASE64.decode(cosigned["data"]["transaction"].as_str().unwrap()).unwrap();
    rpc.send_and_confirm(&wire, Duration::from_secs(10)).await.unwrap();

    // A buy built on an RPC blockhash, sent over RPC; read back over RPC.
    let (blockhash, _) = rpc.latest_blockhash().await.unwrap();
    let a = alice.keypair.pubkey();
    let buy = Transaction::new_signed_with_payer(
        &[client::buy_shares(a, a, market.as_bytes(), Side::Yes, 5_000_000, 0)],
        Some(&a),
        &[&alice.keypair],
        blockhash.parse().unwrap(),
    );
    let signature = rpc.send_and_confirm(&bincode::serialize(&buy).unwrap(), Duration::from_secs(10)).await.unwrap();
    let tx = rpc.transaction(&signature).await.unwrap().unwrap();
    assert_eq!((tx.err.clone(), tx.signers.clone()), (None, vec![a.to_string()]));
    assert!(tx.inner_instructions.iter().any(|i| indexer::events::decode(&i.instruction.data).is_some()), "the emit_cpi event travels");
    assert!(rpc.is_finalized(&signature).await.unwrap());
    let position = rpc.account(&client::position_pda(&client::market_pda(market.as_bytes()), &a).to_string()).await.unwrap().unwrap();
    assert_eq!(position.owner, funding_market::ID.to_string());
    assert!(rpc.clock().await.unwrap().unix_timestamp > 1_700_000_000);
    // A failing transaction is refused at preflight with the program's error.
    let (blockhash, _) = rpc.latest_blockhash().await.unwrap();
    let too_big = Transaction::new_signed_with_payer(
        &[client::buy_shares(a, a, market.as_bytes(), Side::Yes, 500_000_000, 0)],
        Some(&a),
        &[&alice.keypair],
        blockhash.parse().unwrap(),
    );
    match rpc.send_and_confirm(&bincode::serialize(&too_big).unwrap(), Duration::from_secs(10)).await {
        Err(chain_client::ChainError::Rpc { code: -32002, err: Some(err), .. }) => {
            assert!(matches!(err, solana_transaction_error::TransactionError::InstructionError(..)), "{err:?}")
        }
        other => panic!("{other:?}"),
    }

    // The indexer following over RPC sees the program's history and projects it.
    let listed = rpc.signatures_after(&funding_market::ID.to_string(), None).await.unwrap();
    assert!(listed.iter().any(|s| s.signature == signature));
    assert!(listed.windows(2).all(|w| w[0].slot < w[1].slot), "oldest first");
    let indexer =
        indexer::follow::Indexer::new(rpc.clone(), indexer::projection::Projector::new(db.clone(), &funding_market::ID), &funding_market::ID.to_string());
    indexer.run_once().await.unwrap();
    let projected: i64 = sqlx::query_scalar("SELECT balance FROM vault_balances WHERE wallet = $1").bind(a.to_string()).fetch_one(&db).await.unwrap();
    assert_eq!(projected as u64, t.vault(&a.to_string()).await);
    let q: (i64, i32) = sqlx::query_as("SELECT q_yes, trade_count FROM markets WHERE id = $1").bind(market).fetch_one(&db).await.unwrap();
    assert_eq!(q.1, 1);
    let _ = ChainSource::transaction(&rpc, &signature).await.unwrap();
}

/// One wallet transaction with identical buys on two markets: each confirmation answers the
/// trade of its own market (the trade row is found by market, side, direction and size, not by
/// signature and size alone, which found the same row for both).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn confirm_answers_the_trade_of_its_own_market(db: PgPool) {
    let t = trading(&db, Duration::from_secs(10)).await;
    let alice = trader(&t, "100").await;
    let bob = trader(&t, "100").await;
    let (first, second) = (open_market(&db, "open").await, open_market(&db, "open").await);
    for market in [first, second] {
        // Bob's custodial trade puts the market on chain (both at the same prices after it).
        let (status, body) = t.post(&format!("/v1/markets/{market}/trade"), &bob.token, json!({"side": "yes", "usdc_amount": "1"})).await;
        assert_eq!(status, 200, "{body}");
    }
    let alice_key = alice.keypair.pubkey();
    let buys: Vec<_> = [first, second].iter().map(|m| client::buy_shares(alice_key, alice_key, m.as_bytes(), Side::No, 10_000_000, 0)).collect();
    let signature = t.chain.send_and_confirm(&wallet_tx(&t, &buys, &alice.keypair, &[]).await).await.unwrap();
    let held = position(&t, first, &alice_key).await.no_shares;
    assert_eq!(position(&t, second, &alice_key).await.no_shares, held, "the same trade on both");

    let mut ids = Vec::new();
    for market in [first, second] {
        let confirm = json!({"market_id": market, "tx_sig": signature, "side": "no", "shares": shares(held)});
        let (status, confirmed) = post_replay(&t, "/v1/trade/confirm", &alice.token, confirm).await;
        assert_eq!(status, 200, "{confirmed}");
        let id: Uuid = confirmed["data"]["trade_id"].as_str().unwrap().parse().unwrap();
        let (of_market, is_buy): (Uuid, bool) = sqlx::query_as("SELECT market_id, is_buy FROM trades WHERE id = $1").bind(id).fetch_one(&db).await.unwrap();
        assert_eq!((of_market, is_buy), (market, true));
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1]);
}
