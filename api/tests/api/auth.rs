//! Sign-In With Solana, access tokens and API keys, with real ed25519 keys against real Redis
//! and Postgres; every refusal with its code.

use std::time::Duration;

use chrono::Utc;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::helpers::*;

fn bearer(token: &str) -> (&'static str, String) {
    ("authorization", format!("Bearer {token}"))
}

async fn me(app: &TestApp, header: (&str, &str)) -> reqwest::Response {
    app.get_with("/v1/users/me", header).await
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn sign_in_creates_the_user_once_and_the_token_says_who_it_is(db: PgPool) {
    let app = spawn(state(db.clone(), &redis_url())).await;
    let key = wallet();
    let (nonce, message) = app.challenge(&key).await;
    assert_eq!(nonce.len(), 32);
    assert!(message.starts_with("localhost:8080 wants you to sign in with your Solana account:\n"));
    assert!(message.contains(&format!("\n{}\n", address(&key))));
    assert!(message.contains(&format!("Nonce: {nonce}\n")));
    assert!(message.contains("Chain ID: localnet\n") && message.contains("Expiration Time: "));

    let body = json!({"wallet_address": address(&key), "signature": sign(&key, &message), "nonce": nonce});
    let verified: Value = app.post_json("/v1/auth/verify", body).await.json().await.unwrap();
    let token = verified["data"]["token"].as_str().unwrap();
    let expires = chrono::DateTime::parse_from_rfc3339(verified["data"]["expires_at"].as_str().unwrap()).unwrap();
    let hours = (expires.to_utc() - Utc::now()).num_minutes() as f64 / 60.0;
    assert!((23.9..=24.0).contains(&hours), "token lives {hours} h");

    let profile: Value = me(&app, (bearer(token).0, &bearer(token).1)).await.json().await.unwrap();
    assert_eq!(profile["data"]["wallet_address"], address(&key));
    assert_eq!(profile["data"]["display_name"], Value::Null);

    let again = app.sign_in(&key).await;
    let second: Value = me(&app, (bearer(&again).0, &bearer(&again).1)).await.json().await.unwrap();
    assert_eq!(second["data"]["id"], profile["data"]["id"]);
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users").fetch_one(&db).await.unwrap();
    assert_eq!(users, 1);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn challenge_refuses_malformed_addresses(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let off_curve = loop {
        let bytes: [u8; 32] = rand::random();
        if ed25519_dalek::VerifyingKey::from_bytes(&bytes).is_err() {
            break bs58::encode(bytes).into_string();
        }
    };
    let valid = address(&wallet());
    for bad in [
        json!(""),
        json!("not-base58-0OIl"),
        json!(bs58::encode([7u8; 31]).into_string()),
        json!(bs58::encode([7u8; 33]).into_string()),
        json!(off_curve),
        json!(format!("1{valid}")),
        json!(12345),
    ] {
        let (status, code) = code_of(app.post_json("/v1/auth/challenge", json!({"wallet_address": bad})).await).await;
        assert_eq!((status, code.as_str()), (400, "INVALID_INPUT"), "{bad}");
    }
    let (status, _) = code_of(app.post_json("/v1/auth/challenge", json!({})).await).await;
    assert_eq!(status, 400);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn verify_refuses_every_bad_signature_and_nonce(db: PgPool) {
    let mut config = config();
    config.auth.sign_in.challenge_ttl = Duration::from_secs(1);
    let app = spawn(state_with(config, db, &redis_url())).await;
    let key = wallet();
    let other = wallet();
    let verify = |addr: String, signature: String, nonce: String| {
        app.post_json("/v1/auth/verify", json!({"wallet_address": addr, "signature": signature, "nonce": nonce}))
    };

    let (nonce, message) = app.challenge(&key).await;
    let cases = [
        ("signature of another message", sign(&key, &message.replace("Version: 1", "Version: 2")), address(&key), 401, "UNAUTHORIZED"),
        ("signature of another key", sign(&other, &message), address(&key), 401, "UNAUTHORIZED"),
        ("not base58", "0OIl+/".to_owned(), address(&key), 400, "INVALID_INPUT"),
        ("not 64 bytes", bs58::encode([1u8; 63]).into_string(), address(&key), 400, "INVALID_INPUT"),
        ("nonce issued to another address", sign(&other, &message), address(&other), 401, "UNAUTHORIZED"),
        ("malformed address", sign(&key, &message), "xyz".to_owned(), 400, "INVALID_INPUT"),
    ];
    for (what, signature, addr, status, code) in cases {
        let got = code_of(verify(addr, signature, nonce.clone()).await).await;
        assert_eq!(got, (status, code.to_owned()), "{what}");
    }
    // None of the failures burned the nonce: the right signature still redeems it, once.
    let good = sign(&key, &message);
    assert_eq!(verify(address(&key), good.clone(), nonce.clone()).await.status(), 200);
    assert_eq!(code_of(verify(address(&key), good, nonce).await).await, (401, "UNAUTHORIZED".into()), "reused nonce");
    // Unknown nonce.
    let unknown = hex::encode(rand::random::<[u8; 16]>());
    assert_eq!(code_of(verify(address(&key), sign(&key, &message), unknown).await).await.0, 401);
    // Expired nonce (1 s lifetime here).
    let (nonce, message) = app.challenge(&key).await;
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert_eq!(code_of(verify(address(&key), sign(&key, &message), nonce).await).await, (401, "UNAUTHORIZED".into()));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn concurrent_redemptions_of_one_nonce_issue_one_token(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let key = wallet();
    let (nonce, message) = app.challenge(&key).await;
    let body = json!({"wallet_address": address(&key), "signature": sign(&key, &message), "nonce": nonce});
    let statuses = concurrently(8, |http| http.post(format!("{}/v1/auth/verify", app.base)).json(&body).send()).await;
    let statuses: Vec<u16> = statuses.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 200 || *s == 401));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn bad_tokens_are_unauthorized(db: PgPool) {
    let config = config();
    let secret = config.auth.jwt_secret.clone();
    let app = spawn(state_with(config, db, &redis_url())).await;
    let token = app.sign_in(&wallet()).await;
    let claims: Value = {
        let payload = token.split('.').nth(1).unwrap();
        serde_json::from_slice(&base64url_decode(payload)).unwrap()
    };
    let now = Utc::now().timestamp();
    let mut expired = claims.clone();
    expired["iat"] = json!(now - 90_000);
    expired["exp"] = json!(now - 10);
    let mut tampered = token.split('.').map(str::to_owned).collect::<Vec<_>>();
    let mut other_wallet = claims.clone();
    other_wallet["sub"] = json!(uuid::Uuid::new_v4());
    tampered[1] = base64url_encode(other_wallet.to_string().as_bytes());
    let none_alg = format!("{}.{}.", base64url_encode(br#"{"alg":"none","typ":"JWT"}"#), base64url_encode(claims.to_string().as_bytes()));
    let forged = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(&[9u8; 32])).unwrap();
    let expired = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &expired, &EncodingKey::from_secret(&secret)).unwrap();
    let hs512 = jsonwebtoken::encode(&Header::new(Algorithm::HS512), &claims, &EncodingKey::from_secret(&secret)).unwrap();

    for (what, header) in [
        ("forged", format!("Bearer {forged}")),
        ("expired", format!("Bearer {expired}")),
        ("wrong algorithm", format!("Bearer {hs512}")),
        ("alg none", format!("Bearer {none_alg}")),
        ("tampered", format!("Bearer {}", tampered.join("."))),
        ("garbage", "Bearer garbage".to_owned()),
        ("empty bearer", "Bearer ".to_owned()),
        ("basic", "Basic dXNlcjpwYXNz".to_owned()),
        ("no scheme", token.clone()),
    ] {
        assert_eq!(code_of(me(&app, ("authorization", &header)).await).await, (401, "UNAUTHORIZED".into()), "{what}");
    }
    assert_eq!(code_of(app.get("/v1/users/me").await).await, (401, "UNAUTHORIZED".into()), "missing");
    assert_eq!(me(&app, ("authorization", &format!("Bearer {token}"))).await.status(), 200);
}

fn base64url_encode(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn base64url_decode(s: &str) -> Vec<u8> {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let values: Vec<u32> = s.bytes().map(|c| ABC.iter().position(|a| *a == c).unwrap() as u32).collect();
    let mut out = Vec::new();
    for chunk in values.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, v)| n | v << (18 - 6 * i));
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn api_keys_are_created_listed_used_and_revoked(db: PgPool) {
    let app = spawn(state(db.clone(), &redis_url())).await;
    let token = app.sign_in(&wallet()).await;
    let auth = format!("Bearer {token}");
    let post = |body: Option<Value>| {
        let mut r = app.http.post(format!("{}/v1/api-keys", app.base)).header("authorization", &auth);
        if let Some(b) = body {
            r = r.json(&b);
        }
        r.send()
    };

    let created = post(None).await.unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let key = created["data"]["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("fmk_") && key.len() == 52 && key[4..].bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(created["data"]["key_prefix"], key[..12]);
    assert_eq!(created["data"]["label"], "");
    let labelled: Value = post(Some(json!({"label": "market maker bot"}))).await.unwrap().json().await.unwrap();
    assert_eq!(labelled["data"]["label"], "market maker bot");

    // Only the hash is stored.
    let stored: Vec<Vec<u8>> = sqlx::query_scalar("SELECT key_hash FROM api_keys").fetch_all(&db).await.unwrap();
    assert!(stored.iter().all(|h| h.len() == 32 && !String::from_utf8_lossy(h).contains(&key[4..])));

    let listed: Value = app.get_with("/v1/api-keys", ("authorization", &auth)).await.json().await.unwrap();
    let listed = listed["data"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|k| k.get("key").is_none() && k["key_prefix"].as_str().unwrap().len() == 12));

    let profile: Value = me(&app, ("x-api-key", &key)).await.json().await.unwrap();
    assert!(profile["data"]["wallet_address"].is_string());

    // JWT-only endpoints refuse keys.
    assert_eq!(code_of(app.get_with("/v1/api-keys", ("x-api-key", &key)).await).await, (401, "UNAUTHORIZED".into()));

    // Someone else cannot revoke it; its owner can, and it stops working at once.
    let stranger = format!("Bearer {}", app.sign_in(&wallet()).await);
    let id = created["data"]["id"].as_str().unwrap();
    let delete = |who: &str| app.http.delete(format!("{}/v1/api-keys/{id}", app.base)).header("authorization", who.to_owned()).send();
    assert_eq!(code_of(delete(&stranger).await.unwrap()).await, (404, "NOT_FOUND".into()));
    assert_eq!(me(&app, ("x-api-key", &key)).await.status(), 200);
    assert_eq!(delete(&auth).await.unwrap().status(), 200);
    assert_eq!(code_of(me(&app, ("x-api-key", &key)).await).await, (401, "UNAUTHORIZED".into()));
    assert_eq!(code_of(delete(&auth).await.unwrap()).await, (404, "NOT_FOUND".into()), "already revoked");
    let listed: Value = app.get_with("/v1/api-keys", ("authorization", &auth)).await.json().await.unwrap();
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);

    // Unknown, malformed keys; bad bodies and ids.
    let unknown = format!("fmk_{}", hex::encode(rand::random::<[u8; 24]>()));
    for bad in [unknown.as_str(), "fmk_123", "sk_live_abc", ""] {
        assert_eq!(code_of(me(&app, ("x-api-key", bad)).await).await, (401, "UNAUTHORIZED".into()), "{bad}");
    }
    assert_eq!(code_of(post(Some(json!({"label": "x".repeat(65)}))).await.unwrap()).await.0, 400);
    assert_eq!(code_of(post(Some(json!({"lable": "typo"}))).await.unwrap()).await.0, 400);
    let bad_id = app.http.delete(format!("{}/v1/api-keys/not-a-uuid", app.base)).header("authorization", &auth).send().await.unwrap();
    assert_eq!(code_of(bad_id).await, (400, "INVALID_INPUT".into()));
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn a_user_holds_at_most_25_active_keys(db: PgPool) {
    let app = spawn(state(db, &redis_url())).await;
    let auth = format!("Bearer {}", app.sign_in(&wallet()).await);
    let create = || app.http.post(format!("{}/v1/api-keys", app.base)).header("authorization", &auth).send();
    for _ in 0..25 {
        assert_eq!(create().await.unwrap().status(), 201);
    }
    assert_eq!(code_of(create().await.unwrap()).await, (400, "INVALID_INPUT".into()));
}
