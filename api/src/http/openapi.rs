//! The OpenAPI 3.1 description of the API, built with the router (`routes::router`): every
//! handler carries its `#[utoipa::path]`, and `utoipa_axum` adds the path to the document as it
//! adds the route, so a route cannot exist undocumented. Served at `GET /v1/openapi.json`;
//! `GET /docs` renders it (`routes::docs`).
//!
//! What every operation shares is added here once, by [`Shared`]: the error envelope for 400,
//! 429 and 500 (any request can be malformed, over a limit, or meet a fault of ours) and the
//! `X-RateLimit-*` / `X-Request-Id` headers on every response, and the credential headers as
//! parameters (`credential_headers`).

use serde_json::Value;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{OpenApi, Ref, RefOr, Required, Response, ResponseBuilder};
use utoipa::{IntoParams, Modify, PartialSchema, ToSchema};

use super::envelope::{ErrorBody, Meta};
use crate::domain::market::{MarketStatus, Side};

/// Security scheme names, as operations' `security(...)` refer to them.
pub const BEARER: &str = "bearer";
pub const API_KEY: &str = "api_key";
pub const NONCE: &str = "request_nonce";
pub const TIMESTAMP: &str = "request_timestamp";

/// The document's frame: title, version, tags, the security schemes and the shared responses.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Funding-rate prediction markets API",
        version = "1.0.0",
        description = "Bet YES/NO on whether a perpetual-futures funding rate will be positive at the next settlement. \
Every body is the envelope `{data, meta, error}`; amounts are strings with six decimals (USDC) and rates strings \
with eight or more. Public endpoints need nothing; `bearer` is the wallet sign-in token, `api_key` a key created \
with it; endpoints marked with the two anti-replay schemes need a fresh `X-Request-Nonce` and `X-Request-Timestamp` \
too. Errors: INVALID_INPUT 400, UNAUTHORIZED 401, NOT_FOUND 404, IDEMPOTENCY_KEY_REUSED / IDEMPOTENCY_KEY_IN_USE 409, \
MARKET_CLOSED / INSUFFICIENT_BALANCE / INSUFFICIENT_SHARES / SLIPPAGE_EXCEEDED / REPLAY_DETECTED / PDA_NOT_FOUND and \
the wallet-flow refusals 422, RATE_LIMITED 429 (with Retry-After), INTERNAL_ERROR 500."
    ),
    tags(
        (name = "health", description = "Liveness and readiness"),
        (name = "auth", description = "Wallet sign-in and API keys"),
        (name = "markets", description = "Series, rounds, quotes and trades (public)"),
        (name = "trading", description = "Custodial trading and balances"),
        (name = "wallet", description = "The wallet-signed trading path"),
        (name = "money", description = "Deposits and withdrawals"),
        (name = "users", description = "The caller's profile, positions and results"),
        (name = "leaderboard", description = "Traders ranked"),
        (name = "intervals", description = "Funding-interval changes of every listed perp"),
        (name = "crowd", description = "Long/short positioning of every perp"),
        (name = "push", description = "Web push notifications"),
        (name = "stream", description = "Real-time updates over a WebSocket"),
        (name = "chain", description = "The embedded chain's Solana JSON-RPC (local runs only)"),
    ),
    components(schemas(ErrorEnvelope, ErrorBody, Meta))
)]
pub struct ApiDoc;

/// The success envelope: `data` set, `error` null (what `Data<T>` serializes).
#[derive(ToSchema)]
pub struct Envelope<T: ToSchema> {
    pub data: T,
    pub meta: Meta,
    #[schema(schema_with = null)]
    pub error: (),
}

/// Every error response: `data` null, `error` set.
#[derive(ToSchema)]
pub struct ErrorEnvelope {
    #[schema(schema_with = null)]
    pub data: (),
    pub meta: Meta,
    pub error: ErrorBody,
}

fn null() -> Schema {
    ObjectBuilder::new().schema_type(SchemaType::Type(Type::Null)).into()
}

/// An error answer: the error envelope with `description`.
pub fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content("application/json", utoipa::openapi::ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorEnvelope"))).build())
        .build()
}

/// A market's status, as strings.
impl PartialSchema for MarketStatus {
    fn schema() -> RefOr<Schema> {
        let names: Vec<&str> = MarketStatus::ALL.iter().map(|s| s.as_str()).collect();
        ObjectBuilder::new().schema_type(Type::String).enum_values(Some(names)).into()
    }
}
impl ToSchema for MarketStatus {}

/// `yes` or `no`.
impl PartialSchema for Side {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["yes", "no"])).into()
    }
}
impl ToSchema for Side {}

/// The `exchange` and `search` filters of the market-data listings.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PerpParams {
    /// One venue: `binance`, `bybit`, `okx` or `hyperliquid`.
    #[param(pattern = "^(binance|bybit|okx|hyperliquid)$")]
    exchange: Option<String>,
    /// Symbols containing this text (case-insensitive), at most 32 characters.
    #[param(max_length = 32)]
    search: Option<String>,
}

/// Adds what every operation shares (see the module's comment) and the security schemes; run
/// over the whole document once the router has added the paths.
pub struct Shared;

impl Modify for Shared {
    fn modify(&self, doc: &mut OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            BEARER,
            SecurityScheme::Http(
                HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").description(Some("The token POST /v1/auth/verify returns.")).build(),
            ),
        );
        components
            .add_security_scheme(API_KEY, SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description("X-API-Key", "A key from POST /v1/api-keys."))));
        components.add_security_scheme(
            NONCE,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Request-Nonce",
                "Anti-replay: a fresh random nonce per request, 32–64 hexadecimal characters or a UUID.",
            ))),
        );
        components.add_security_scheme(
            TIMESTAMP,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Request-Timestamp",
                "Anti-replay: the current Unix time in seconds, within ±300 s of the server's.",
            ))),
        );
        components.add_security_scheme(
            "webhook_secret",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Authorization",
                "The deposit webhook's shared secret, exactly as configured (FM_DEPOSIT_WEBHOOK_AUTH).",
            ))),
        );
        for (path, item) in doc.paths.paths.iter_mut() {
            let operations =
                [("get", &mut item.get), ("post", &mut item.post), ("patch", &mut item.patch), ("delete", &mut item.delete), ("put", &mut item.put)];
            for (method, operation) in operations {
                if let Some(operation) = operation {
                    operation.operation_id = Some(operation_id(method, path));
                    shared_responses(operation);
                    credential_headers(operation);
                }
            }
        }
    }
}

/// A unique id from the method and path, as client generators name functions:
/// `GET /v1/markets/{id}/trades` is `getMarketsByIdTrades`.
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_owned();
    for segment in path.trim_start_matches("/v1").split(['/', '-', '.', '_']).filter(|s| !s.is_empty()) {
        let (prefix, word) = match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(param) => ("By", param),
            None => ("", segment),
        };
        id.push_str(prefix);
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            id.extend(first.to_uppercase());
            id.push_str(chars.as_str());
        }
    }
    id
}

/// The headers behind an operation's header security schemes, as optional parameters with
/// their full range, so a client generator (and the contract fuzzing) sends them with every
/// value they may carry — the extremes included — and not only as credentials: `X-API-Key`
/// where a key is accepted, `X-Request-Nonce` and `X-Request-Timestamp` (any 64-bit integer
/// parses; the server refuses those outside its window) where anti-replay is.
fn credential_headers(operation: &mut Operation) {
    // utoipa keeps a requirement's scheme names private; its JSON form shows them.
    let security = serde_json::to_value(&operation.security).unwrap_or_default();
    let requirements = security.as_array().map(Vec::as_slice).unwrap_or_default();
    let schemes: Vec<&String> = requirements.iter().filter_map(Value::as_object).flat_map(|names| names.keys()).collect();
    let mut headers = Vec::new();
    if schemes.iter().any(|s| *s == API_KEY) {
        let key = ObjectBuilder::new().schema_type(Type::String).max_length(Some(256));
        headers.push(("X-API-Key", "An API key (`fmk_` and 48 hexadecimal characters), instead of the bearer token.", Schema::from(key)));
    }
    if schemes.iter().any(|s| *s == NONCE) {
        let nonce = ObjectBuilder::new().schema_type(Type::String).pattern(Some("^[0-9a-f]{32}$"));
        headers.push(("X-Request-Nonce", "Anti-replay: a fresh random nonce per request (32–64 hexadecimal characters or a UUID).", Schema::from(nonce)));
        let timestamp = ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::Int64)))
            .minimum(Some(i64::MIN))
            .maximum(Some(i64::MAX));
        headers.push(("X-Request-Timestamp", "Anti-replay: the current Unix time in seconds, within ±300 s of the server's.", Schema::from(timestamp)));
    }
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    for (name, description, schema) in headers {
        if parameters.iter().any(|p| p.name.eq_ignore_ascii_case(name)) {
            continue;
        }
        parameters.push(
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(description))
                .schema(Some(schema))
                .build(),
        );
    }
}

fn shared_responses(operation: &mut Operation) {
    let responses = &mut operation.responses.responses;
    for (status, description) in [
        ("400", "INVALID_INPUT: a parameter, header or body is malformed (the message says which)"),
        ("429", "RATE_LIMITED: over a limit; retry after `Retry-After` seconds"),
        ("500", "INTERNAL_ERROR: a fault of ours (logged; the message is generic)"),
    ] {
        responses.entry(status.to_owned()).or_insert_with(|| RefOr::T(error_response(description)));
    }
    for response in responses.values_mut() {
        if let RefOr::T(response) = response {
            for (name, description, kind) in [
                ("X-RateLimit-Limit", "Requests allowed in the current window", Type::Integer),
                ("X-RateLimit-Remaining", "Requests left in the current window", Type::Integer),
                ("X-RateLimit-Reset", "When the window ends, Unix seconds", Type::Integer),
                ("X-Request-Id", "The request's id (the client's, or a new UUID)", Type::String),
            ] {
                let header = HeaderBuilder::new().schema(ObjectBuilder::new().schema_type(kind)).description(Some(description)).build();
                response.headers.entry(name.to_owned()).or_insert(header);
            }
        }
    }
}
