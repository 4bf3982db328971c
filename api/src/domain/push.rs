//! Web push, the rules: what a browser subscription must look like to be kept, and what each
//! outbox event says to the user (the notification payload, documented in the README).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use uuid::Uuid;

use super::money::micros;
use super::rate::{FundingRate, rate_exact};

/// The longest endpoint accepted (push services' URLs are a few hundred characters).
pub const MAX_ENDPOINT_LEN: usize = 2048;
/// Devices a user may have subscribed at once; a new one beyond this replaces the oldest.
pub const MAX_SUBSCRIPTIONS_PER_USER: i64 = 20;

/// A subscription as the browser's `PushSubscription.toJSON()` gives it, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    pub endpoint: String,
    /// The user agent's P-256 public key, uncompressed (65 bytes), base64url without padding.
    pub p256dh: String,
    /// The 16-byte authentication secret, base64url without padding.
    pub auth: String,
}

/// Checks a subscription: an `https` URL with a host (or `http` where `allow_http`, for a push
/// service on a private network or in tests), a P-256 point for `p256dh` and 16 bytes for
/// `auth`. Keys are taken padded or not and kept unpadded. The error says what is wrong.
pub fn subscription(endpoint: &str, p256dh: &str, auth: &str, allow_http: bool) -> Result<Subscription, String> {
    let endpoint = checked_endpoint(endpoint, allow_http)?;
    let key = decode("keys.p256dh", p256dh)?;
    if key.len() != 65 || key[0] != 4 {
        return Err(format!("keys.p256dh must be an uncompressed P-256 public key (65 bytes starting 0x04), got {} bytes", key.len()));
    }
    if p256::PublicKey::from_sec1_bytes(&key).is_err() {
        return Err("keys.p256dh is not a point on the P-256 curve".into());
    }
    let secret = decode("keys.auth", auth)?;
    if secret.len() != 16 {
        return Err(format!("keys.auth must be 16 bytes, got {}", secret.len()));
    }
    Ok(Subscription { endpoint, p256dh: URL_SAFE_NO_PAD.encode(key), auth: URL_SAFE_NO_PAD.encode(secret) })
}

/// An endpoint URL as kept: trimmed, `https://host…` (or `http://` where allowed).
pub fn checked_endpoint(endpoint: &str, allow_http: bool) -> Result<String, String> {
    let endpoint = endpoint.trim();
    if endpoint.len() > MAX_ENDPOINT_LEN {
        return Err(format!("endpoint must be at most {MAX_ENDPOINT_LEN} characters"));
    }
    let rest = match (endpoint.strip_prefix("https://"), endpoint.strip_prefix("http://")) {
        (Some(rest), _) => rest,
        (None, Some(rest)) if allow_http => rest,
        _ => return Err("endpoint must be an https URL".into()),
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains('@') || endpoint.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("endpoint must be a URL with a host".into());
    }
    Ok(endpoint.to_owned())
}

/// The origin of an endpoint (`scheme://host[:port]`): the VAPID token's audience (RFC 8292
/// §2). Set explicitly because the `web-push` crate's default leaves out the port.
pub fn audience(endpoint: &str) -> String {
    let scheme_end = endpoint.find("://").map_or(0, |i| i + 3);
    let host_end = endpoint[scheme_end..].find(['/', '?', '#']).map_or(endpoint.len(), |i| scheme_end + i);
    endpoint[..host_end].to_owned()
}

fn decode(field: &str, value: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD.decode(value.trim().trim_end_matches('=')).map_err(|_| format!("{field} must be base64url"))
}

/// The kinds of event the outbox carries (its `kind` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    MarketSettled,
    SettlementPayout,
    DepositConfirmed,
    WithdrawalConfirmed,
}

impl EventKind {
    pub fn parse(kind: &str) -> Option<EventKind> {
        Some(match kind {
            "market_settled" => EventKind::MarketSettled,
            "settlement_payout" => EventKind::SettlementPayout,
            "deposit_confirmed" => EventKind::DepositConfirmed,
            "withdrawal_confirmed" => EventKind::WithdrawalConfirmed,
            _ => return None,
        })
    }

    pub fn id(self) -> &'static str {
        match self {
            EventKind::MarketSettled => "market_settled",
            EventKind::SettlementPayout => "settlement_payout",
            EventKind::DepositConfirmed => "deposit_confirmed",
            EventKind::WithdrawalConfirmed => "withdrawal_confirmed",
        }
    }

    /// Sent with RFC 8030 urgency `high` rather than `normal`: money that moved (the user may act
    /// on it at once), not a market's outcome.
    pub fn is_urgent(self) -> bool {
        self != EventKind::MarketSettled
    }
}

/// An outbox event with what the notification needs to name it.
#[derive(Clone, Debug)]
pub struct Event {
    pub kind: EventKind,
    pub market_id: Option<Uuid>,
    /// A deposit's `signature:address`, a withdrawal's id.
    pub reference: Option<String>,
    pub payload: serde_json::Value,
    /// The market's venue and symbol (market events).
    pub exchange: Option<String>,
    pub symbol: Option<String>,
}

/// What the service worker receives (JSON, encrypted): every field but the ids always present.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Notification {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub title: String,
    pub body: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub market_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawal_id: Option<String>,
    /// USDC with six decimals (payouts, deposits, withdrawals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
    /// The front end's path to open on click, resolved against its origin.
    pub url: String,
}

/// The notification for `event`; `None` for a settlement that paid nothing (a losing position:
/// the "market settled" notification already told its holder).
pub fn notification(event: &Event) -> Option<Notification> {
    let number = |key: &str| event.payload.get(key).and_then(serde_json::Value::as_i64);
    let market = match (&event.symbol, &event.exchange) {
        (Some(symbol), Some(exchange)) => format!("{symbol} on {}", venue_name(exchange)),
        _ => "your market".to_owned(),
    };
    let market_url = event.market_id.map_or_else(|| "/portfolio".to_owned(), |id| format!("/markets/{id}"));
    Some(match event.kind {
        EventKind::MarketSettled => {
            let voided = event.payload.get("status").and_then(|s| s.as_str()) == Some("voided");
            let body = match (voided, event.payload.get("outcome").and_then(|o| o.as_str()), number("actual_rate")) {
                (true, _, _) => format!("{market} was voided: every position is refunded"),
                (false, Some(outcome), Some(rate)) => {
                    format!("{market} settled {}: the funding rate was {}", outcome.to_uppercase(), rate_exact(FundingRate(rate)))
                }
                (false, Some(outcome), None) => format!("{market} settled {}", outcome.to_uppercase()),
                (false, None, _) => format!("{market} settled"),
            };
            Notification { kind: event.kind.id(), title: "Market settled".into(), body, market_id: event.market_id, withdrawal_id: None, amount: None, url: market_url }
        }
        EventKind::SettlementPayout => {
            let payout = number("payout").unwrap_or(0);
            let voided = event.payload.get("voided").and_then(|v| v.as_bool()).unwrap_or(false);
            if payout == 0 {
                return None;
            }
            let (title, body) = match voided {
                true => ("Refund credited", format!("{} USDC refunded from {market}", micros(payout))),
                false => ("Settlement payout", format!("{} USDC credited from {market}", micros(payout))),
            };
            Notification { kind: event.kind.id(), title: title.into(), body, market_id: event.market_id, withdrawal_id: None, amount: Some(micros(payout)), url: market_url }
        }
        EventKind::DepositConfirmed => {
            let amount = micros(number("amount").unwrap_or(0));
            Notification {
                kind: event.kind.id(),
                title: "Deposit confirmed".into(),
                body: format!("{amount} USDC is in your balance"),
                market_id: None,
                withdrawal_id: None,
                amount: Some(amount),
                url: "/portfolio".into(),
            }
        }
        EventKind::WithdrawalConfirmed => {
            let amount = micros(number("amount").unwrap_or(0));
            let destination = event.payload.get("destination").and_then(|d| d.as_str()).unwrap_or_default();
            let short = match destination.len() {
                n if n > 8 => format!("{}…{}", &destination[..4], &destination[n - 4..]),
                _ => destination.to_owned(),
            };
            Notification {
                kind: event.kind.id(),
                title: "Withdrawal confirmed".into(),
                body: format!("{amount} USDC sent to {short}"),
                market_id: None,
                withdrawal_id: event.reference.clone(),
                amount: Some(amount),
                url: event.reference.as_ref().map_or_else(|| "/withdrawals".to_owned(), |id| format!("/withdrawals/{id}")),
            }
        }
    })
}

fn venue_name(exchange: &str) -> &str {
    match exchange {
        "binance" => "Binance",
        "bybit" => "Bybit",
        "okx" => "OKX",
        "hyperliquid" => "Hyperliquid",
        other => other,
    }
}

/// The `Topic` header of an event's message (RFC 8030 §5.4: at most 32 base64url characters): a
/// message sent twice (a crash between the push service's answer and its record) replaces the
/// first while it is still queued instead of showing twice.
pub fn topic(outbox_id: i64) -> String {
    format!("fm-event-{outbox_id}")
}

/// When to try a delivery again after its `attempts`-th failure: the push service's
/// `Retry-After` when it gave one (at most an hour), else 5 s doubling to an hour.
pub fn retry_delay_secs(attempts: i32, retry_after: Option<u64>) -> u64 {
    retry_after.unwrap_or_else(|| 5u64.saturating_mul(1 << attempts.clamp(0, 20))).clamp(1, 3600)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // A real browser subscription's keys (RFC 8291 appendix A's user agent).
    const P256DH: &str = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
    const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";

    #[test]
    fn a_browser_subscription_is_kept_unpadded() {
        let s = subscription("https://fcm.googleapis.com/fcm/send/abc", &format!("{P256DH}="), &format!("{AUTH}=="), false).unwrap();
        assert_eq!((s.p256dh.as_str(), s.auth.as_str()), (P256DH, AUTH));
    }

    #[test]
    fn bad_subscriptions_say_why() {
        let refused = [
            ("http://push.example/x", P256DH, AUTH, "https"),
            ("https:///x", P256DH, AUTH, "host"),
            ("ftp://push.example/x", P256DH, AUTH, "https"),
            ("https://push.example/x", "not base64!", AUTH, "base64url"),
            ("https://push.example/x", AUTH, AUTH, "65 bytes"),
            ("https://push.example/x", P256DH, P256DH, "16 bytes"),
        ];
        for (endpoint, key, auth, why) in refused {
            let error = subscription(endpoint, key, auth, false).unwrap_err();
            assert!(error.contains(why), "{endpoint} {key} {auth}: {error}");
        }
        // 65 bytes starting 0x04 but off the curve.
        let mut off = vec![4u8];
        off.extend([1u8; 64]);
        assert!(subscription("https://p.example/x", &URL_SAFE_NO_PAD.encode(off), AUTH, false).unwrap_err().contains("curve"));
        assert!(subscription("http://127.0.0.1:9/x", P256DH, AUTH, true).is_ok(), "http where allowed");
    }

    #[test]
    fn each_event_says_what_happened() {
        let market = Uuid::nil();
        let event = |kind, payload, reference: Option<&str>| Event {
            kind,
            market_id: matches!(kind, EventKind::MarketSettled | EventKind::SettlementPayout).then_some(market),
            reference: reference.map(str::to_owned),
            payload,
            exchange: Some("binance".into()),
            symbol: Some("BTCUSDT".into()),
        };
        let settled = notification(&event(EventKind::MarketSettled, json!({"status": "settled", "outcome": "yes", "actual_rate": 100_000_000}), None)).unwrap();
        assert_eq!(settled.body, "BTCUSDT on Binance settled YES: the funding rate was 0.00010000");
        assert_eq!(settled.url, format!("/markets/{market}"));
        let voided = notification(&event(EventKind::MarketSettled, json!({"status": "voided", "outcome": null, "actual_rate": null}), None)).unwrap();
        assert!(voided.body.contains("voided"), "{voided:?}");
        let paid = notification(&event(EventKind::SettlementPayout, json!({"payout": 12_500_000, "voided": false}), None)).unwrap();
        assert_eq!(notification(&event(EventKind::SettlementPayout, json!({"payout": 0, "voided": false}), None)), None, "a loss pays nothing");
        assert_eq!((paid.amount.as_deref(), paid.body.as_str()), (Some("12.500000"), "12.500000 USDC credited from BTCUSDT on Binance"));
        let deposit = notification(&event(EventKind::DepositConfirmed, json!({"amount": 5_000_000, "signature": "x"}), Some("x:y"))).unwrap();
        assert_eq!((deposit.title.as_str(), deposit.amount.as_deref(), deposit.market_id), ("Deposit confirmed", Some("5.000000"), None));
        let id = "0b3d5c38-4f1e-4f57-9d5e-3f1c2c0f2a11";
        let sent = notification(&event(EventKind::WithdrawalConfirmed, json!({"amount": 2_000_000, "destination": "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"}), Some(id))).unwrap();
        assert_eq!(sent.body, "2.000000 USDC sent to 9xQe…VFin");
        assert_eq!((sent.withdrawal_id.as_deref(), sent.url.clone()), (Some(id), format!("/withdrawals/{id}")));
        let shown = serde_json::to_value(&sent).unwrap();
        assert_eq!(shown["type"], "withdrawal_confirmed");
        assert!(shown.get("market_id").is_none());
    }

    #[test]
    fn the_audience_is_the_endpoints_origin() {
        assert_eq!(audience("https://fcm.googleapis.com/fcm/send/abc?x=1"), "https://fcm.googleapis.com");
        assert_eq!(audience("http://127.0.0.1:4000/push/7"), "http://127.0.0.1:4000");
        assert_eq!(audience("https://push.example"), "https://push.example");
    }

    #[test]
    fn topics_fit_the_protocol_and_retries_back_off() {
        let topic = topic(i64::MAX);
        assert!(topic.len() <= 32 && topic.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{topic}");
        assert_eq!([0, 1, 2, 10].map(|a| retry_delay_secs(a, None)), [5, 10, 20, 3600]);
        assert_eq!(retry_delay_secs(3, Some(7)), 7);
        assert_eq!(retry_delay_secs(3, Some(100_000)), 3600);
    }
}
