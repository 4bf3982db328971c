//! Web push, the rules: what a browser subscription must look like to be kept, and what each
//! outbox event says to the user (the notification payload, documented in docs/api.md).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ipnet::IpNet;
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

/// Where a push endpoint may point: the sender POSTs to it from inside the operator's network,
/// so a subscription must not aim that POST at the network itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointPolicy {
    /// Accept `http://` endpoints (a push service on a private network, tests).
    pub allow_http: bool,
    /// Networks accepted although not public: a push service on the operator's own network, or
    /// the tests' 127.0.0.1. Empty by default: only public addresses.
    pub allowed_networks: Vec<IpNet>,
}

impl EndpointPolicy {
    /// Whether the sender may connect to `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.allowed_networks.iter().any(|n| n.contains(&ip))
    }
}

/// Ranges no push service is in: loopback, private (RFC 1918), link-local (cloud metadata at
/// 169.254.169.254 and fd00:ec2::254 among them), CGNAT, unique-local, the unspecified and
/// reserved ranges, documentation, benchmarking, multicast, and the IPv6 forms that carry an
/// IPv4 address (mapped, compatible, NAT64, 6to4, Teredo), whose IPv4 part is checked instead
/// where one can be read.
const NOT_PUBLIC: [&str; 24] = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "::/96",
    "64:ff9b:1::/48",
    "100::/64",
    "2001::/32",
    "2001:db8::/32",
    "fc00::/7",
    "fe80::/10",
    "fec0::/10",
    "ff00::/8",
    "::ffff:0:0/96",
];

/// Whether `ip` is an address of the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    if let IpAddr::V6(v6) = ip {
        let segments = v6.segments();
        let embedded = match segments {
            [0, 0, 0, 0, 0, 0xffff, ..] => v6.to_ipv4_mapped(),
            [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some(Ipv4Addr::from((u32::from(segments[6]) << 16) | u32::from(segments[7]))),
            [0x2002, high, low, ..] => Some(Ipv4Addr::from((u32::from(high) << 16) | u32::from(low))),
            _ => None,
        };
        if let Some(v4) = embedded {
            return is_public(IpAddr::V4(v4));
        }
    }
    NOT_PUBLIC_NETWORKS.iter().all(|range| !range.contains(&ip))
}

/// [`NOT_PUBLIC`], parsed once.
static NOT_PUBLIC_NETWORKS: LazyLock<Vec<IpNet>> = LazyLock::new(|| NOT_PUBLIC.iter().map(|range| range.parse().expect("the ranges are CIDR")).collect());

/// Checks a subscription: an endpoint `checked_endpoint` accepts, a P-256 point for `p256dh`
/// and 16 bytes for `auth`. Keys are taken padded or not and kept unpadded. The error says
/// what is wrong.
pub fn subscription(endpoint: &str, p256dh: &str, auth: &str, policy: &EndpointPolicy) -> Result<Subscription, String> {
    let endpoint = checked_endpoint(endpoint, policy)?;
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

/// An endpoint URL as kept: trimmed, `https://host…` (or `http://` where allowed), whose host,
/// read as the HTTP client reads it (`https://2130706433/` is 127.0.0.1), is a name other than
/// `localhost` or an address the policy permits. A name's addresses are checked when the
/// sender resolves it, for every request (`services::push`).
pub fn checked_endpoint(endpoint: &str, policy: &EndpointPolicy) -> Result<String, String> {
    let endpoint = endpoint.trim();
    if endpoint.len() > MAX_ENDPOINT_LEN {
        return Err(format!("endpoint must be at most {MAX_ENDPOINT_LEN} characters"));
    }
    let rest = match (endpoint.strip_prefix("https://"), endpoint.strip_prefix("http://")) {
        (Some(rest), _) => rest,
        (None, Some(rest)) if policy.allow_http => rest,
        _ => return Err("endpoint must be an https URL".into()),
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains('@') || endpoint.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("endpoint must be a URL with a host".into());
    }
    match endpoint_host(endpoint) {
        Some(EndpointHost::Address(ip)) if policy.permits(ip) => {}
        Some(EndpointHost::Address(ip)) => return Err(format!("endpoint must be a public address, not {ip}")),
        Some(EndpointHost::Name(name)) if is_local_name(&name) => return Err(format!("endpoint must be a public host, not {name}")),
        Some(EndpointHost::Name(_)) => {}
        None => return Err("endpoint must be a URL with a host".into()),
    }
    Ok(endpoint.to_owned())
}

/// An endpoint as stored, for finding a subscription by it: trimmed, of a length that can be
/// stored.
pub fn stored_form(endpoint: &str) -> Result<String, String> {
    let endpoint = endpoint.trim();
    if endpoint.is_empty() || endpoint.len() > MAX_ENDPOINT_LEN {
        return Err(format!("endpoint must be 1 to {MAX_ENDPOINT_LEN} characters"));
    }
    Ok(endpoint.to_owned())
}

/// An endpoint's host as the HTTP client connects to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndpointHost {
    Name(String),
    Address(IpAddr),
}

/// Parses `endpoint` as the HTTP client does (WHATWG URL rules: IPv4 in any of its forms, IPv6
/// in brackets, names lower-cased and IDNA-mapped).
pub fn endpoint_host(endpoint: &str) -> Option<EndpointHost> {
    match url::Url::parse(endpoint).ok()?.host()? {
        url::Host::Domain(name) => Some(EndpointHost::Name(name.to_owned())),
        url::Host::Ipv4(v4) => Some(EndpointHost::Address(IpAddr::V4(v4))),
        url::Host::Ipv6(v6) => Some(EndpointHost::Address(IpAddr::V6(v6))),
    }
}

/// Names that mean this machine (RFC 6761) whatever a resolver says.
fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
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
            Notification {
                kind: event.kind.id(),
                title: "Market settled".into(),
                body,
                market_id: event.market_id,
                withdrawal_id: None,
                amount: None,
                url: market_url,
            }
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
            Notification {
                kind: event.kind.id(),
                title: title.into(),
                body,
                market_id: event.market_id,
                withdrawal_id: None,
                amount: Some(micros(payout)),
                url: market_url,
            }
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
        let s = subscription("https://fcm.googleapis.com/fcm/send/abc", &format!("{P256DH}="), &format!("{AUTH}=="), &EndpointPolicy::default()).unwrap();
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
            let error = subscription(endpoint, key, auth, &EndpointPolicy::default()).unwrap_err();
            assert!(error.contains(why), "{endpoint} {key} {auth}: {error}");
        }
        // 65 bytes starting 0x04 but off the curve.
        let mut off = vec![4u8];
        off.extend([1u8; 64]);
        assert!(subscription("https://p.example/x", &URL_SAFE_NO_PAD.encode(off), AUTH, &EndpointPolicy::default()).unwrap_err().contains("curve"));
        let local = EndpointPolicy { allow_http: true, allowed_networks: vec!["127.0.0.1/32".parse().unwrap()] };
        assert!(subscription("http://127.0.0.1:9/x", P256DH, AUTH, &local).is_ok(), "http and 127.0.0.1 where allowed");
    }

    #[test]
    fn endpoints_on_private_networks_are_refused() {
        let strict = EndpointPolicy::default();
        let refused = [
            "https://127.0.0.1:9443/x",
            "https://127.1/x",
            "https://2130706433/x",
            "https://0x7f000001/x",
            "https://0.0.0.0/x",
            "https://10.0.0.1/x",
            "https://172.16.5.4/x",
            "https://192.168.1.1/x",
            "https://169.254.169.254/latest",
            "https://100.64.0.1/x",
            "https://100.100.100.200/x",
            "https://192.0.0.192/x",
            "https://[::1]/x",
            "https://[::]/x",
            "https://[fd00:ec2::254]/x",
            "https://[fe80::1]/x",
            "https://[::ffff:127.0.0.1]/x",
            "https://[::ffff:a9fe:a9fe]/x",
            "https://[64:ff9b::a00:1]/x",
            "https://[2002:c0a8:101::1]/x",
            "https://[ff02::1]/x",
            "https://localhost/x",
            "https://LOCALHOST./x",
            "https://push.localhost:8443/x",
        ];
        for endpoint in refused {
            let error = checked_endpoint(endpoint, &strict).unwrap_err();
            assert!(error.contains("public"), "{endpoint}: {error}");
        }
        for endpoint in ["https://fcm.googleapis.com/fcm/send/a", "https://8.8.8.8/x", "https://[2606:4700::1111]/x", "https://[64:ff9b::808:808]/x"] {
            assert!(checked_endpoint(endpoint, &strict).is_ok(), "{endpoint}");
        }
        // The allowance is exactly the networks given.
        let loopback = EndpointPolicy { allow_http: false, allowed_networks: vec!["127.0.0.1/32".parse().unwrap()] };
        assert!(checked_endpoint("https://127.0.0.1:9443/x", &loopback).is_ok());
        assert!(checked_endpoint("https://127.0.0.2/x", &loopback).is_err());
        assert!(checked_endpoint("https://10.0.0.1/x", &loopback).is_err());
        assert!(checked_endpoint("https://[::1]/x", &loopback).is_err());
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
        let sent = notification(&event(
            EventKind::WithdrawalConfirmed,
            json!({"amount": 2_000_000, "destination": "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"}),
            Some(id),
        ))
        .unwrap();
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
