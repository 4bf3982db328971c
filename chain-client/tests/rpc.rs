//! The RPC chain against a local node answering in Solana's JSON-RPC formats.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chain_client::ChainError;
use chain_client::rpc::{RpcChain, SIGNATURE_PAGE};
use serde_json::{Value, json};
use solana_instruction_error::InstructionError;
use solana_transaction_error::TransactionError;

const PROGRAM: &str = "98ey5bZy5fsSRR6XLhB8Yy3kUPpviZSDL9pq9oL14g7J";
const TOKEN: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const PAYER: &str = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";
const LOOKED_UP: &str = "4eFcBMtSMniMT8WLMfHoKPXJdP734CkXzpTt8M8Zj9TK";
const TRANSACTIONS: usize = 2_500;
const _: () = assert!(TRANSACTIONS > 2 * SIGNATURE_PAGE, "the listing case must span pages");

struct Node {
    /// Oldest first: (signature, slot, failed).
    ledger: Vec<(String, u64, bool)>,
    faults: Mutex<VecDeque<(u16, Option<u64>)>>,
    polls: Mutex<HashMap<String, u32>>,
}

fn signature(i: usize) -> String {
    let mut bytes = [7u8; 64];
    bytes[..8].copy_from_slice(&(i as u64).to_le_bytes());
    bs58::encode(bytes).into_string()
}

/// The emit_cpi event payload of transaction `i` (any bytes: the chain layer does not decode).
fn event_bytes(i: usize) -> Vec<u8> {
    let mut data = vec![0xe4, 0x45, 0xa5, 0x2e, 0x51, 0xcb, 0x9a, 0x1d];
    data.extend_from_slice(&(i as u64).to_le_bytes());
    data
}

fn transaction_json(i: usize, failed: bool, slot: u64) -> Value {
    json!({
        "slot": slot,
        "blockTime": 1_800_000_000 + i as i64,
        "version": 0,
        "transaction": {
            "signatures": [signature(i)],
            "message": {
                "accountKeys": [PAYER, PROGRAM, TOKEN],
                "header": {"numRequiredSignatures": 1, "numReadonlySignedAccounts": 0, "numReadonlyUnsignedAccounts": 2},
                "recentBlockhash": "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N",
                "instructions": [{"programIdIndex": 1, "accounts": [0, 2], "data": bs58::encode([1, 2, 3]).into_string(), "stackHeight": null}],
                "addressTableLookups": [{"accountKey": "AddressLookupTab1e1111111111111111111111111", "writableIndexes": [], "readonlyIndexes": [0]}]
            }
        },
        "meta": {
            "err": if failed { json!({"InstructionError": [0, {"Custom": 6007}]}) } else { Value::Null },
            "status": if failed { json!({"Err": {"InstructionError": [0, {"Custom": 6007}]}}) } else { json!({"Ok": null}) },
            "fee": 5000,
            "innerInstructions": if failed { json!([]) } else { json!([{"index": 0, "instructions": [
                {"programIdIndex": 2, "accounts": [0], "data": bs58::encode([3, 0, 0, 0, 0, 0, 0, 0, 1]).into_string(), "stackHeight": 2},
                {"programIdIndex": 3, "accounts": [], "data": bs58::encode(event_bytes(i)).into_string(), "stackHeight": 2}
            ]}]) },
            "loadedAddresses": {"writable": [], "readonly": [LOOKED_UP]},
            "logMessages": [], "preBalances": [], "postBalances": [], "preTokenBalances": [], "postTokenBalances": [], "rewards": []
        }
    })
}

fn account_json(data: &[u8]) -> Value {
    json!({"data": [BASE64.encode(data), "base64"], "executable": false, "lamports": 1_461_600, "owner": TOKEN, "rentEpoch": u64::MAX, "space": data.len()})
}

fn rpc_error(code: i64, message: &str, data: Option<Value>) -> Response {
    Json(json!({"jsonrpc": "2.0", "error": {"code": code, "message": message, "data": data}, "id": 1})).into_response()
}

async fn handle(State(node): State<Arc<Node>>, Json(request): Json<Value>) -> Response {
    if let Some((status, retry_after)) = node.faults.lock().unwrap().pop_front() {
        let mut r = (StatusCode::from_u16(status).unwrap(), "fault").into_response();
        if let Some(after) = retry_after {
            r.headers_mut().insert("retry-after", after.into());
        }
        return r;
    }
    let params = &request["params"];
    let ok = |result: Value| Json(json!({"jsonrpc": "2.0", "result": result, "id": request["id"]})).into_response();
    match request["method"].as_str().unwrap_or("") {
        "getSignaturesForAddress" => {
            if params[0] != PROGRAM {
                return ok(json!([]));
            }
            let options = &params[1];
            let limit = options["limit"].as_u64().unwrap_or(1000).min(1000) as usize;
            let position = |key: &str| options[key].as_str().and_then(|s| node.ledger.iter().position(|(sig, ..)| sig == s));
            let end = position("before").unwrap_or(node.ledger.len()); // exclusive
            let start = position("until").map_or(0, |u| u + 1);
            let rows: Vec<Value> = node.ledger[start.min(end)..end]
                .iter()
                .rev()
                .take(limit)
                .map(|(sig, slot, failed)| json!({"signature": sig, "slot": slot, "err": if *failed { json!({"InstructionError": [0, {"Custom": 6007}]}) } else { Value::Null }, "memo": null, "blockTime": 1_800_000_000, "confirmationStatus": "confirmed"}))
                .collect();
            ok(json!(rows))
        }
        "getTransaction" => {
            let found = node.ledger.iter().position(|(sig, ..)| Some(sig.as_str()) == params[0].as_str());
            ok(found.map_or(Value::Null, |i| transaction_json(i, node.ledger[i].2, node.ledger[i].1)))
        }
        "getAccountInfo" => match params[0].as_str() {
            Some(a) if bs58::decode(a).into_vec().map(|b| b.len()) != Ok(32) => rpc_error(-32602, "Invalid param: Invalid", None),
            Some("SysvarC1ock11111111111111111111111111111111") => {
                let mut clock = Vec::new();
                for v in [361_234_567u64, 1_799_999_000, 836, 837, 1_800_000_123] {
                    clock.extend_from_slice(&v.to_le_bytes());
                }
                ok(json!({"context": {"slot": 361_234_567}, "value": account_json(&clock)}))
            }
            Some(PAYER) => ok(json!({"context": {"slot": 1}, "value": account_json(&[1, 2, 3, 255])})),
            _ => ok(json!({"context": {"slot": 1}, "value": null})),
        },
        "getMultipleAccounts" => {
            let values: Vec<Value> =
                params[0].as_array().unwrap().iter().map(|a| if a == PAYER { account_json(&[1, 2, 3, 255]) } else { Value::Null }).collect();
            ok(json!({"context": {"slot": 1}, "value": values}))
        }
        "isBlockhashValid" => ok(json!({"context": {"slot": 2792}, "value": params[0] == "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N"})),
        "getLatestBlockhash" => {
            ok(json!({"context": {"slot": 2792}, "value": {"blockhash": "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N", "lastValidBlockHeight": 3090}}))
        }
        "sendTransaction" => {
            let tx = BASE64.decode(params[0].as_str().unwrap()).unwrap();
            // Wire format: compact-u16 signature count, then the 64-byte signatures.
            let signature = bs58::encode(&tx[1..65]).into_string();
            if tx[65] == 0xEE {
                let data =
                    json!({"err": {"InstructionError": [0, {"Custom": 6010}]}, "logs": ["Program log: slippage"], "accounts": null, "unitsConsumed": 1200});
                return rpc_error(-32002, "Transaction simulation failed: Error processing Instruction 0: custom program error: 0x177a", Some(data));
            }
            node.polls.lock().unwrap().insert(signature.clone(), 0);
            ok(json!(signature))
        }
        "getSignatureStatuses" if params[1]["searchTransactionHistory"] == true => {
            // History: the newest 32 transactions are confirmed, older ones finalized.
            let found = node.ledger.iter().position(|(sig, ..)| Some(sig.as_str()) == params[0][0].as_str());
            let status = found.map_or(Value::Null, |i| {
                let level = if i + 32 < node.ledger.len() { "finalized" } else { "confirmed" };
                json!({"slot": node.ledger[i].1, "confirmations": null, "err": null, "status": {"Ok": null}, "confirmationStatus": level})
            });
            ok(json!({"context": {"slot": 11}, "value": [status]}))
        }
        "getSignatureStatuses" => {
            let sig = params[0][0].as_str().unwrap().to_owned();
            let mut polls = node.polls.lock().unwrap();
            let n = polls.entry(sig.clone()).or_insert(0);
            *n += 1;
            let fails = bs58::decode(&sig).into_vec().unwrap()[0] == 0xFA;
            let status = match (*n, fails) {
                (1, _) => json!({"slot": 10, "confirmations": 0, "err": null, "status": {"Ok": null}, "confirmationStatus": "processed"}),
                (_, true) => {
                    json!({"slot": 10, "confirmations": 1, "err": {"InstructionError": [0, {"Custom": 6007}]}, "status": {"Err": {"InstructionError": [0, {"Custom": 6007}]}}, "confirmationStatus": "confirmed"})
                }
                _ => json!({"slot": 10, "confirmations": 1, "err": null, "status": {"Ok": null}, "confirmationStatus": "confirmed"}),
            };
            ok(json!({"context": {"slot": 11}, "value": [status]}))
        }
        _ => rpc_error(-32601, "Method not found", None),
    }
}

async fn node() -> (String, Arc<Node>) {
    let ledger = (0..TRANSACTIONS).map(|i| (signature(i), 100 + i as u64, i % 97 == 5)).collect();
    let node = Arc::new(Node { ledger, faults: Mutex::new(VecDeque::new()), polls: Mutex::new(HashMap::new()) });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().route("/", post(handle)).with_state(node.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, node)
}

fn chain(url: &str) -> RpcChain {
    RpcChain::new(url, Duration::from_secs(5))
}

#[tokio::test]
async fn signatures_since_a_cursor_come_oldest_first_across_pages() {
    let (url, node) = node().await;
    let all = chain(&url).signatures_after(PROGRAM, None).await.unwrap();
    let expected: Vec<&str> = node.ledger.iter().map(|(s, ..)| s.as_str()).collect();
    assert_eq!(all.iter().map(|s| s.signature.as_str()).collect::<Vec<_>>(), expected, "every signature once, in order");
    assert_eq!(all.iter().filter(|s| s.failed).count(), node.ledger.iter().filter(|t| t.2).count());
    let cursor = &node.ledger[1_199].0;
    let after = chain(&url).signatures_after(PROGRAM, Some(cursor)).await.unwrap();
    assert_eq!(after.len(), TRANSACTIONS - 1_200);
    assert_eq!(after[0].signature, node.ledger[1_200].0);
    assert_eq!(after[0].slot, 1_300);
    assert!(chain(&url).signatures_after(PROGRAM, Some(&node.ledger[TRANSACTIONS - 1].0)).await.unwrap().is_empty());
}

#[tokio::test]
async fn transactions_resolve_programs_and_inner_instructions() {
    let (url, node) = node().await;
    let tx = chain(&url).transaction(&node.ledger[42].0).await.unwrap().unwrap();
    assert_eq!((tx.slot, tx.err.clone()), (142, None));
    assert_eq!(tx.signers, vec![PAYER.to_owned()], "numRequiredSignatures of the account keys");
    assert_eq!(tx.instructions.len(), 1);
    assert_eq!((tx.instructions[0].program_id.as_str(), tx.instructions[0].data.as_slice()), (PROGRAM, &[1u8, 2, 3][..]));
    assert_eq!(tx.inner_instructions.len(), 2);
    assert_eq!(tx.inner_instructions[0].instruction.program_id, TOKEN);
    // Index 3 is past the static keys: the address loaded from the lookup table.
    assert_eq!(tx.inner_instructions[1].instruction.program_id, LOOKED_UP);
    assert_eq!(tx.inner_instructions[1].instruction.data, event_bytes(42));
    assert_eq!(tx.inner_instructions[1].outer_index, 0);
    let failed = chain(&url).transaction(&node.ledger[5].0).await.unwrap().unwrap();
    assert!(failed.err.is_some() && failed.inner_instructions.is_empty());
    assert_eq!(chain(&url).transaction(&signature(999_999)).await.unwrap(), None);
}

#[tokio::test]
async fn accounts_blockhash_and_clock() {
    let (url, _) = node().await;
    let c = chain(&url);
    let payer = c.account(PAYER).await.unwrap().unwrap();
    assert_eq!((payer.data, payer.lamports, payer.owner.as_str()), (vec![1, 2, 3, 255], 1_461_600, TOKEN));
    assert_eq!(c.account(PROGRAM).await.unwrap(), None);
    let many = c.accounts(&[PROGRAM, PAYER]).await.unwrap();
    assert!(many[0].is_none() && many[1].as_ref().unwrap().data == [1, 2, 3, 255]);
    assert_eq!(c.latest_blockhash().await.unwrap(), ("EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N".to_owned(), 3090));
    let clock = c.clock().await.unwrap();
    assert_eq!((clock.slot, clock.unix_timestamp), (361_234_567, 1_800_000_123));
    let bad = c.account("not-base58!").await;
    assert!(matches!(bad, Err(ChainError::Rpc { code: -32602, .. })), "{bad:?}");
}

fn wire_transaction(first_signature_byte: u8, marker: u8) -> Vec<u8> {
    let mut tx = vec![1u8];
    let mut sig = [9u8; 64];
    sig[0] = first_signature_byte;
    tx.extend_from_slice(&sig);
    tx.push(marker);
    tx.extend_from_slice(&[0u8; 40]);
    tx
}

#[tokio::test]
async fn sending_waits_for_confirmation_and_reports_failures() {
    let (url, _) = node().await;
    let c = chain(&url);
    let tx = wire_transaction(0x11, 0);
    let signature = c.send_and_confirm(&tx, Duration::from_secs(5)).await.unwrap();
    assert_eq!(signature, bs58::encode(&tx[1..65]).into_string());
    let preflight = c.send_and_confirm(&wire_transaction(0x12, 0xEE), Duration::from_secs(5)).await;
    match preflight {
        Err(ChainError::Rpc { code: -32002, err: Some(err), .. }) => assert_eq!(err, TransactionError::InstructionError(0, InstructionError::Custom(6010))),
        other => panic!("{other:?}"),
    }
    let on_chain = c.send_and_confirm(&wire_transaction(0xFA, 0), Duration::from_secs(5)).await;
    assert!(
        matches!(on_chain, Err(ChainError::TransactionFailed { err: TransactionError::InstructionError(0, InstructionError::Custom(6007)), .. })),
        "{on_chain:?}"
    );
}

#[tokio::test]
async fn finality_is_read_from_the_signature_history() {
    let (url, _) = node().await;
    let c = chain(&url);
    assert!(c.is_finalized(&signature(0)).await.unwrap());
    assert!(!c.is_finalized(&signature(TRANSACTIONS - 1)).await.unwrap(), "confirmed, not yet finalized");
    assert!(!c.is_finalized(&signature(TRANSACTIONS + 5)).await.unwrap(), "unknown");
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried() {
    let (url, node) = node().await;
    node.faults.lock().unwrap().extend([(429, Some(1)), (429, Some(1)), (503, None)]);
    let started = Instant::now();
    assert_eq!(chain(&url).latest_blockhash().await.unwrap().1, 3090);
    assert!(chain(&url).is_blockhash_valid("EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N").await.unwrap());
    assert!(!chain(&url).is_blockhash_valid("4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi").await.unwrap());
    assert!(started.elapsed() >= Duration::from_secs(2), "Retry-After honoured");
    node.faults.lock().unwrap().push_back((429, Some(3600)));
    assert!(matches!(chain(&url).latest_blockhash().await, Err(ChainError::RateLimited)));
    node.faults.lock().unwrap().extend([(503, None); 5]);
    assert!(matches!(chain(&url).clock().await, Err(ChainError::Http(503))));
    assert!(matches!(RpcChain::new("http://127.0.0.1:9", Duration::from_millis(200)).clock().await, Err(ChainError::Transport(_))));
}
