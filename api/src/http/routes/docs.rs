//! The API's description: `GET /v1/openapi.json` (the OpenAPI 3.1 document `http::openapi`
//! builds with the router) and `GET /docs`, which renders it with Swagger UI. The renderer's
//! files are vendored from its npm package (`api/assets/swagger-ui`, refreshed by
//! `scripts/vendor-docs.sh`) and compiled into the binary: nothing is loaded from elsewhere.

use std::sync::{Arc, OnceLock};

use axum::Extension;
use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

use crate::http::error::ApiError;
use crate::http::extract::ApiPath;

/// The document, serialized once at start-up (cloning it shares the bytes). Set once the router
/// it describes is built, which its own route is part of.
#[derive(Clone, Default)]
pub struct Document(pub Arc<OnceLock<Bytes>>);

/// The OpenAPI 3.1 document of this API (plain JSON, not an envelope: tools read it as is).
#[utoipa::path(
    get,
    path = "/v1/openapi.json",
    tag = "health",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object),
    )
)]
pub async fn openapi_json(Extension(Document(json)): Extension<Document>) -> Response {
    let json = json.get().cloned().expect("the document is set when the router is built");
    ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], json).into_response()
}

const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Funding-rate prediction markets API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
"#;

/// Starts the renderer on the document; no validator (it would call validator.swagger.io).
const INIT: &str = r##"window.ui = SwaggerUIBundle({ url: "/v1/openapi.json", dom_id: "#swagger-ui", deepLinking: true, validatorUrl: null, tryItOutEnabled: false });
"##;

const BUNDLE: &[u8] = include_bytes!("../../../assets/swagger-ui/swagger-ui-bundle.js");
const CSS: &[u8] = include_bytes!("../../../assets/swagger-ui/swagger-ui.css");

/// `GET /docs`: the rendered documentation.
pub async fn page() -> Html<&'static str> {
    Html(PAGE)
}

/// `GET /docs/{asset}`: the renderer's files (cached for a day: they change only with a release).
pub async fn asset(ApiPath(name): ApiPath<String>) -> Result<Response, ApiError> {
    let (content_type, body): (&str, &'static [u8]) = match name.as_str() {
        "swagger-ui-bundle.js" => ("text/javascript; charset=utf-8", BUNDLE),
        "swagger-ui.css" => ("text/css; charset=utf-8", CSS),
        "init.js" => ("text/javascript; charset=utf-8", INIT.as_bytes()),
        _ => return Err(ApiError::NotFound(format!("no documentation asset {name:?}"))),
    };
    Ok(([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "public, max-age=86400")], body).into_response())
}
