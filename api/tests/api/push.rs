//! Web push end to end, against a push service (RFC 8030) run by the test: it checks every
//! message's VAPID token (RFC 8292) against the service's public key and decrypts its payload
//! (RFC 8291 `aes128gcm`) with the subscription's private key, written here from the RFCs
//! (HKDF, ECDH, AES-GCM), independently of the sending crate. The four events come from the
//! real flows (a deposit, a settled round with its payout, a withdrawal); 410 removes a
//! subscription; 429/5xx are retried; a restarted sender sends nothing twice.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Nonce};
use api::services::push::{self, Delivered, PushSender};
use api::services::withdrawals;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Utc;
use hkdf::Hkdf;
use p256::ecdsa::signature::Verifier;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use serde_json::{Value, json};
use sha2::Sha256;
use solana_signer::Signer;
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::*;
use crate::oracle::{pay_out, settle_at, venue};
use crate::settlement::{Trader, buy, services, trader};
use crate::trading::{Trading, open_market, trading_with};

/// A browser: its push keys, and its endpoint at the test push service.
struct Device {
    id: String,
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl Device {
    fn new() -> Device {
        Device {
            id: Uuid::new_v4().simple().to_string(),
            secret: p256::SecretKey::from_slice(&rand::random::<[u8; 32]>()).expect("a random scalar (2^-128 chance of not)"),
            auth: rand::random(),
        }
    }

    fn public(&self) -> Vec<u8> {
        self.secret.public_key().to_encoded_point(false).as_bytes().to_vec()
    }

    /// `PushSubscription.toJSON()` as a browser sends it.
    fn subscription(&self, push: &PushService) -> Value {
        json!({
            "endpoint": format!("{}/push/{}", push.base, self.id),
            "expirationTime": null,
            "keys": {"p256dh": URL_SAFE_NO_PAD.encode(self.public()), "auth": URL_SAFE_NO_PAD.encode(self.auth)},
        })
    }

    /// RFC 8291 §3.4 and RFC 8188: one record, `salt | rs | idlen | keyid (the sender's
    /// public key) | ciphertext`; the plaintext ends with the last-record delimiter 0x02 and
    /// any zero padding.
    fn decrypt(&self, body: &[u8]) -> Vec<u8> {
        let (salt, rest) = body.split_at(16);
        let record_size = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let id_len = rest[4] as usize;
        let (sender_public, ciphertext) = rest[5..].split_at(id_len);
        assert!(ciphertext.len() <= record_size, "one record");
        let sender = p256::PublicKey::from_sec1_bytes(sender_public).expect("keyid is the sender's P-256 key");
        let shared = p256::ecdh::diffie_hellman(self.secret.to_nonzero_scalar(), sender.as_affine());
        let mut info = b"WebPush: info\0".to_vec();
        info.extend(self.public());
        info.extend(sender_public);
        let mut ikm = [0u8; 32];
        Hkdf::<Sha256>::new(Some(&self.auth), shared.raw_secret_bytes()).expand(&info, &mut ikm).unwrap();
        let prk = Hkdf::<Sha256>::new(Some(salt), &ikm);
        let (mut key, mut nonce) = ([0u8; 16], [0u8; 12]);
        prk.expand(b"Content-Encoding: aes128gcm\0", &mut key).unwrap();
        prk.expand(b"Content-Encoding: nonce\0", &mut nonce).unwrap();
        let plain = Aes128Gcm::new_from_slice(&key).unwrap().decrypt(Nonce::from_slice(&nonce), ciphertext).expect("the payload decrypts");
        let end = plain.iter().rposition(|b| *b != 0).expect("a delimiter");
        assert_eq!(plain[end], 2, "the last record's delimiter");
        plain[..end].to_vec()
    }
}

/// A message as the push service received it.
#[derive(Clone, Debug)]
struct Received {
    device: String,
    /// What the push service answered.
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

/// A status to answer, with its `Retry-After` if any.
type Scripted = (u16, Option<&'static str>);

/// The test's push service: records every message and answers each device's scripted
/// statuses in turn (201 when none is left).
#[derive(Clone, Default)]
struct Script {
    received: Arc<Mutex<Vec<Received>>>,
    /// Per endpoint path, the statuses (and `Retry-After`) to answer in turn.
    answers: Arc<Mutex<HashMap<String, VecDeque<Scripted>>>>,
}

struct PushService {
    base: String,
    script: Script,
}

impl PushService {
    async fn start() -> PushService {
        let script = Script::default();
        let app = axum::Router::new().route("/push/{device}", post(receive)).with_state(script.clone());
        PushService { base: serve(app).await.base, script }
    }

    /// The next answers to `device`: a status and a `Retry-After`.
    fn answer(&self, device: &Device, answers: &[(u16, Option<&'static str>)]) {
        self.script.answers.lock().unwrap().entry(device.id.clone()).or_default().extend(answers.iter().copied());
    }

    fn received(&self, device: &Device) -> Vec<Received> {
        self.script.received.lock().unwrap().iter().filter(|r| r.device == device.id).cloned().collect()
    }
}

async fn receive(State(script): State<Script>, Path(device): Path<String>, headers: HeaderMap, body: Bytes) -> (StatusCode, HeaderMap) {
    let (status, retry_after) = script.answers.lock().unwrap().get_mut(&device).and_then(VecDeque::pop_front).unwrap_or((201, None));
    script.received.lock().unwrap().push(Received { device: device.clone(), status, headers, body });
    let mut answer = HeaderMap::new();
    if let Some(seconds) = retry_after {
        answer.insert("retry-after", seconds.parse().unwrap());
    }
    if (300..400).contains(&status) {
        answer.insert("location", format!("/push/{device}-redirected").parse().unwrap());
    }
    (StatusCode::from_u16(status).unwrap(), answer)
}

/// Checks a message's headers and VAPID token (signed by `vapid_public`, for the push
/// service's origin, expiring within 24 h, with a contact), then decrypts it for `device`.
fn open(received: &Received, device: &Device, push: &PushService, vapid_public: &str) -> Value {
    let header = |name: &str| received.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_else(|| panic!("no {name} header")).to_owned();
    assert_eq!(header("content-encoding"), "aes128gcm");
    let ttl: u64 = header("ttl").parse().unwrap();
    assert!(ttl > 0 && ttl <= 86_400, "TTL {ttl}");
    assert!(["normal", "high"].contains(&header("urgency").as_str()));
    assert!(header("topic").starts_with("fm-event-"));
    let authorization = header("authorization");
    let params = authorization.strip_prefix("vapid ").expect("the vapid scheme (RFC 8292 §3)");
    let field =
        |key: &str| params.split(',').map(str::trim).find_map(|p| p.strip_prefix(&format!("{key}="))).unwrap_or_else(|| panic!("no {key}= in {params}"));
    assert_eq!(field("k"), vapid_public, "signed by the service's key");
    let token = field("t");
    let (signed, signature) = token.rsplit_once('.').unwrap();
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(vapid_public).unwrap()).unwrap();
    let signature = p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
    key.verify(signed.as_bytes(), &signature).expect("a valid ES256 signature");
    let (head, claims) = signed.split_once('.').unwrap();
    let head: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(head).unwrap()).unwrap();
    assert_eq!(head["alg"], "ES256");
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
    assert_eq!(claims["aud"], push.base, "the audience is the push service's origin");
    let expires = claims["exp"].as_i64().unwrap() - Utc::now().timestamp();
    assert!(expires > 0 && expires <= 86_400, "exp in {expires} s");
    assert!(claims["sub"].as_str().unwrap().starts_with("mailto:"));
    serde_json::from_slice(&device.decrypt(&received.body)).expect("the payload is JSON")
}

/// Where these tests' push service is: plain HTTP on 127.0.0.1, the one private address the
/// tests allow.
fn loopback_policy() -> api::domain::push::EndpointPolicy {
    api::domain::push::EndpointPolicy { allow_http: true, allowed_networks: vec!["127.0.0.1/32".parse().unwrap()] }
}

/// A sender allowed to reach the test push service.
fn loopback_sender() -> PushSender {
    PushSender::new(Duration::from_secs(5), loopback_policy())
}

/// The trading app with http endpoints allowed (the test's push service speaks plain HTTP).
async fn app(db: &PgPool) -> Trading {
    let mut config = config();
    let policy = loopback_policy();
    (config.push.endpoints.allow_http, config.push.endpoints.allowed_networks) = (policy.allow_http, policy.allowed_networks);
    config.http.request_timeout = Duration::from_secs(10);
    trading_with(db, config).await
}

async fn replayed(t: &Trading, path: &str, token: &str, body: Value) -> (u16, Value) {
    replayed_at(&t.app, path, token, body).await
}

async fn replayed_at(app: &TestApp, path: &str, token: &str, body: Value) -> (u16, Value) {
    let response = app
        .http
        .post(format!("{}{path}", app.base))
        .bearer_auth(token)
        .header("X-Request-Nonce", Uuid::new_v4().simple().to_string())
        .header("X-Request-Timestamp", Utc::now().timestamp().to_string())
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn subscribe(t: &Trading, who: &Trader, device: &Device, push: &PushService) {
    let (status, body) = replayed(t, "/v1/push/subscribe", &who.token, device.subscription(push)).await;
    assert_eq!((status, &body["data"]), (200, &json!({"subscribed": true})), "{body}");
}

async fn vapid_public(t: &Trading) -> String {
    let body: Value = t.app.get("/v1/push/vapid-public-key").await.json().await.unwrap();
    body["data"]["public_key"].as_str().unwrap().to_owned()
}

/// Passes of a sender until a pass does nothing.
async fn deliver_all(s: &api::services::Services, sender: &PushSender) -> Delivered {
    let mut total = Delivered::default();
    loop {
        let pass = push::deliver(s, sender).await.unwrap();
        if !pass.busy() {
            return total;
        }
        total.fanned_out += pass.fanned_out;
        total.sent += pass.sent;
        total.retrying += pass.retrying;
        total.failed += pass.failed;
        total.gone += pass.gone;
        total.skipped += pass.skipped;
    }
}

#[test]
fn the_test_push_service_decrypts_the_rfc_8291_example() {
    let device = Device {
        id: "rfc".into(),
        secret: p256::SecretKey::from_slice(&URL_SAFE_NO_PAD.decode("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94").unwrap()).unwrap(),
        auth: URL_SAFE_NO_PAD.decode("BTBZMqHH6r4Tts7J_aSIgg").unwrap().try_into().unwrap(),
    };
    assert_eq!(URL_SAFE_NO_PAD.encode(device.public()), "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4");
    let body = URL_SAFE_NO_PAD
        .decode("DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
        .unwrap();
    assert_eq!(device.decrypt(&body), b"When I grow up, I want to be a watermelon");
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn the_four_events_reach_a_subscribed_browser_signed_and_encrypted_once(db: PgPool) {
    let t = app(&db).await;
    let s = services(&t).await;
    let push = PushService::start().await;
    let (alice, bob) = (trader(&t, "50").await, trader(&t, "50").await);
    let (phone, laptop, old) = (Device::new(), Device::new(), Device::new());
    subscribe(&t, &alice, &phone, &push).await;
    subscribe(&t, &alice, &laptop, &push).await;
    subscribe(&t, &bob, &old, &push).await;
    let key = vapid_public(&t).await;
    assert_eq!(URL_SAFE_NO_PAD.decode(&key).unwrap().len(), 65, "an uncompressed P-256 point");
    // The deposits before subscribing are not announced (they happened before the device was there).
    let sender = loopback_sender();
    assert_eq!(deliver_all(&s, &sender).await.sent, 0);

    // A deposit.
    assert_eq!(t.faucet(&alice.wallet, "5").await.0, 200);
    // A round: Alice on YES, Bob on NO; settled by the oracle and paid by the crank.
    let market = open_market(&db, "open").await;
    // Alice holds both sides, so she is paid whichever way it settles.
    let alice_yes = buy(&t, &alice, market, "yes", "10").await;
    let alice_no = buy(&t, &alice, market, "no", "10").await;
    buy(&t, &bob, market, "no", "10").await;
    let v = venue().await;
    let at = v.settlements(Utc::now() + chrono::Duration::hours(1), 1)[0];
    settle_at(&t, market, at).await;
    assert_eq!(v.pass(&s, at + chrono::Duration::seconds(5)).await.settled, 1);
    pay_out(&s, market).await;
    // A withdrawal.
    let (status, body) = t.post("/v1/withdraw", &alice.token, json!({"amount": "2", "destination": solana_keypair::Keypair::new().pubkey().to_string()})).await;
    assert_eq!(status, 200, "{body}");
    let withdrawal = body["data"]["id"].as_str().unwrap().to_owned();
    while withdrawals::process(&s).await.unwrap() > 0 {}

    // Bob's device is gone (410): removed, and nothing more is sent to it.
    push.answer(&old, &[(410, None), (410, None)]);
    // The laptop's push service is overloaded at first: a 503, then a 429 asking for 1 s.
    push.answer(&laptop, &[(503, None), (429, Some("1"))]);
    let first = deliver_all(&s, &sender).await;
    assert!(first.sent >= 6 && first.gone >= 1 && first.retrying >= 1, "phone 4, laptop 2 of 4 at first: {first:?}");
    let to_old = push.received(&old).len();
    let gone: i64 = sqlx::query_scalar("SELECT count(*) FROM push_subscriptions WHERE endpoint LIKE '%' || $1").bind(&old.id).fetch_one(&db).await.unwrap();
    assert_eq!(gone, 0, "a 410 removes the subscription");
    // The retries come due (the first after 5 s, the second after the 1 s asked for).
    for _ in 0..2 {
        sqlx::query("UPDATE push_deliveries SET next_attempt_at = now() WHERE status = 'pending'").execute(&db).await.unwrap();
        deliver_all(&s, &sender).await;
    }

    let expected = |kind: &str| match kind {
        "deposit_confirmed" => json!({"title": "Deposit confirmed", "amount": "5.000000", "url": "/portfolio"}),
        "market_settled" => json!({"title": "Market settled", "market_id": market.to_string(), "url": format!("/markets/{market}")}),
        "settlement_payout" => json!({"title": "Settlement payout", "market_id": market.to_string(), "url": format!("/markets/{market}")}),
        "withdrawal_confirmed" => {
            json!({"title": "Withdrawal confirmed", "amount": "2.000000", "withdrawal_id": withdrawal, "url": format!("/withdrawals/{withdrawal}")})
        }
        other => panic!("unexpected event {other}"),
    };
    for device in [&phone, &laptop] {
        // Every attempt is a whole, signed, decryptable message.
        let attempts: Vec<(u16, Value)> = push.received(device).iter().map(|r| (r.status, open(r, device, &push, &key))).collect();
        let messages: Vec<Value> = attempts.iter().filter(|(status, _)| *status == 201).map(|(_, m)| m.clone()).collect();
        let mut kinds: Vec<&str> = messages.iter().map(|m| m["type"].as_str().unwrap()).collect();
        kinds.sort();
        assert_eq!(kinds, ["deposit_confirmed", "market_settled", "settlement_payout", "withdrawal_confirmed"], "each event once: {messages:?}");
        for message in &messages {
            let want = expected(message["type"].as_str().unwrap());
            for (field, value) in want.as_object().unwrap() {
                assert_eq!(&message[field], value, "{field} of {message}");
            }
            assert!(message["body"].as_str().is_some_and(|b| !b.is_empty()), "{message}");
        }
        let payout = messages.iter().find(|m| m["type"] == "settlement_payout").unwrap();
        let settled = messages.iter().find(|m| m["type"] == "market_settled").unwrap();
        let won = settled["body"].as_str().unwrap().contains("settled YES");
        assert_eq!(crate::trading::micros(&payout["amount"]), if won { alice_yes } else { alice_no }, "{payout} {settled}");
        assert!(settled["body"].as_str().unwrap().contains("BTCUSDT on Binance"), "{settled}");
    }
    // The laptop's two refusals were retried with the same event (its topic).
    let laptop: Vec<(u16, String)> = push.received(&laptop).iter().map(|r| (r.status, r.headers["topic"].to_str().unwrap().to_owned())).collect();
    assert_eq!(laptop.len(), 6, "4 events + 2 refused attempts: {laptop:?}");
    for (_, refused) in laptop.iter().filter(|(status, _)| *status != 201) {
        assert!(laptop.iter().any(|(status, topic)| *status == 201 && topic == refused), "{refused} retried: {laptop:?}");
    }
    // Bob's one device was gone at its first message: nothing more was sent to it.
    assert_eq!(push.received(&old).len(), to_old);

    // A restarted sender (new process state, same database) sends nothing again.
    let before = push.script.received.lock().unwrap().len();
    let restarted = services(&t).await;
    assert_eq!(deliver_all(&restarted, &loopback_sender()).await, Delivered::default());
    assert_eq!(push.script.received.lock().unwrap().len(), before);
    let undelivered: i64 = sqlx::query_scalar("SELECT count(*) FROM push_deliveries WHERE status NOT IN ('sent', 'skipped')").fetch_one(&db).await.unwrap();
    assert_eq!(undelivered, 0);
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn subscriptions_are_validated_owned_and_removable(db: PgPool) {
    let t = app(&db).await;
    let push = PushService::start().await;
    let alice = trader(&t, "1").await;
    let device = Device::new();
    let good = device.subscription(&push);

    // Refusals, each with the contract's code.
    let mut no_auth = good.clone();
    no_auth["keys"].as_object_mut().unwrap().remove("auth");
    let mut short_key = good.clone();
    short_key["keys"]["p256dh"] = json!(URL_SAFE_NO_PAD.encode([4u8; 33]));
    let mut short_auth = good.clone();
    short_auth["keys"]["auth"] = json!(URL_SAFE_NO_PAD.encode([1u8; 8]));
    let mut not_a_url = good.clone();
    not_a_url["endpoint"] = json!("push-me");
    for (body, why) in [(no_auth, "auth"), (short_key, "65 bytes"), (short_auth, "16 bytes"), (not_a_url, "https"), (json!({"endpoint": 5}), "endpoint")] {
        let (status, answer) = replayed(&t, "/v1/push/subscribe", &alice.token, body.clone()).await;
        assert_eq!((status, answer["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{body}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(why), "{why}: {answer}");
    }
    // JWT and anti-replay are required.
    let response = t.app.http.post(format!("{}/v1/push/subscribe", t.app.base)).bearer_auth(&alice.token).json(&good).send().await.unwrap();
    assert_eq!(response.status(), 400, "no replay headers");
    let response = t.app.http.post(format!("{}/v1/push/subscribe", t.app.base)).json(&good).send().await.unwrap();
    assert_eq!(response.status(), 401);

    // Subscribing twice keeps one; unsubscribing is idempotent.
    subscribe(&t, &alice, &device, &push).await;
    subscribe(&t, &alice, &device, &push).await;
    let count = || sqlx::query_scalar::<_, i64>("SELECT count(*) FROM push_subscriptions").fetch_one(&db);
    assert_eq!(count().await.unwrap(), 1);
    // Another user cannot remove it, nor take it over with other keys; the same browser
    // subscription (its keys), signed in as them, moves the device to them.
    let bob = trader(&t, "1").await;
    let mut other_keys = Device::new().subscription(&push);
    other_keys["endpoint"] = good["endpoint"].clone();
    let (status, body) = replayed(&t, "/v1/push/subscribe", &bob.token, other_keys).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{body}");
    let owner = || sqlx::query_scalar::<_, Uuid>("SELECT user_id FROM push_subscriptions").fetch_one(&db);
    let alices = owner().await.unwrap();
    let (status, _) = replayed(&t, "/v1/push/subscribe", &bob.token, good.clone()).await;
    assert_eq!(status, 200);
    assert_ne!(owner().await.unwrap(), alices, "the same browser moved to Bob");
    subscribe(&t, &alice, &device, &push).await;
    assert_eq!(owner().await.unwrap(), alices);
    let (status, body) = replayed(&t, "/v1/push/unsubscribe", &bob.token, json!({"endpoint": good["endpoint"]})).await;
    assert_eq!((status, &body["data"]), (200, &json!({"unsubscribed": true})));
    assert_eq!(count().await.unwrap(), 1, "Bob's unsubscribe does not touch Alice's device");
    for _ in 0..2 {
        let (status, body) = replayed(&t, "/v1/push/unsubscribe", &alice.token, json!({"endpoint": good["endpoint"]})).await;
        assert_eq!((status, &body["data"]), (200, &json!({"unsubscribed": true})));
    }
    assert_eq!(count().await.unwrap(), 0);

    // An unsubscribed device is told nothing.
    let s = services(&t).await;
    assert_eq!(t.faucet(&alice.wallet, "3").await.0, 200);
    deliver_all(&s, &loopback_sender()).await;
    assert!(push.received(&device).is_empty());

    // http endpoints are refused by default.
    let strict = spawn(state(db.clone(), &redis_url())).await;
    let token = strict.sign_in(&wallet()).await;
    let (status, body) = replayed_at(&strict, "/v1/push/subscribe", &token, good).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{body}");
}

/// The sender POSTs from inside the operator's network: endpoints must not point back into it.
/// Refusals are asserted without connecting anywhere but 127.0.0.1 (the test's push service).
#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn push_endpoints_cannot_reach_private_networks(db: PgPool) {
    // Without an allowance: every private, loopback, link-local, CGNAT and metadata address is
    // refused at subscribe, in whatever form the URL writes it.
    let strict = spawn(state(db.clone(), &redis_url())).await;
    let token = strict.sign_in(&wallet()).await;
    let keys = Device::new().subscription(&PushService { base: "https://unused".into(), script: Script::default() })["keys"].clone();
    for endpoint in [
        "https://127.0.0.1:9443/x",
        "https://169.254.169.254/latest",
        "https://10.0.0.1/x",
        "https://[::1]/x",
        "https://2130706433/x",
        "https://100.64.0.1/x",
        "https://[fd00:ec2::254]/x",
        "https://[::ffff:192.168.0.1]/x",
        "https://localhost/x",
    ] {
        let (status, body) = replayed_at(&strict, "/v1/push/subscribe", &token, json!({"endpoint": endpoint, "keys": keys})).await;
        assert_eq!((status, body["error"]["code"].as_str()), (400, Some("INVALID_INPUT")), "{endpoint}: {body}");
    }

    // With 127.0.0.1 allowed, a device there is subscribed and served.
    let t = app(&db).await;
    let s = services(&t).await;
    let push = PushService::start().await;
    let alice = trader(&t, "1").await;
    let device = Device::new();
    subscribe(&t, &alice, &device, &push).await;
    let allowed = loopback_sender();
    let refusing = PushSender::new(Duration::from_secs(5), api::domain::push::EndpointPolicy { allow_http: true, allowed_networks: vec![] });

    // A sender without the allowance refuses the kept subscription's address before sending.
    assert_eq!(t.faucet(&alice.wallet, "3").await.0, 200);
    let pass = deliver_all(&s, &refusing).await;
    assert_eq!((pass.sent, pass.failed), (0, 1), "{pass:?}");
    assert!(push.received(&device).is_empty());

    // A name is checked as it resolves, for the connection itself: `localhost` stored directly
    // (subscribe refuses the name) resolves to loopback only, so the refusing sender has no
    // address to connect to, while the allowing one delivers.
    let port = push.base.rsplit(':').next().unwrap();
    sqlx::query("UPDATE push_subscriptions SET endpoint = $1").bind(format!("http://localhost:{port}/push/{}", device.id)).execute(&db).await.unwrap();
    assert_eq!(t.faucet(&alice.wallet, "3").await.0, 200);
    let pass = deliver_all(&s, &refusing).await;
    assert_eq!((pass.sent, pass.retrying), (0, 1), "{pass:?}");
    assert!(push.received(&device).is_empty());
    sqlx::query("UPDATE push_deliveries SET next_attempt_at = now() WHERE status = 'pending'").execute(&db).await.unwrap();
    assert_eq!(deliver_all(&s, &allowed).await.sent, 1);
    assert_eq!(push.received(&device).len(), 1);

    // A redirect is not followed: the push service's 307 is the answer (a refusal).
    push.answer(&device, &[(307, None)]);
    assert_eq!(t.faucet(&alice.wallet, "3").await.0, 200);
    let pass = deliver_all(&s, &allowed).await;
    assert_eq!((pass.sent, pass.failed), (0, 1), "{pass:?}");
    assert!(push.script.received.lock().unwrap().iter().all(|r| !r.device.ends_with("-redirected")), "the Location was not visited");
}
