//! Kept pages are answered gzip-compressed to a client whose `Accept-Encoding` takes gzip, as
//! they are otherwise, and say `Vary: Accept-Encoding` either way; answers rendered per request
//! (errors, health) are never compressed.

use std::io::Read;

use api::app::config::default_series;
use api::store::series;
use serde_json::Value;
use sqlx::PgPool;

use crate::helpers::*;

/// Status, `Content-Encoding`, whether `Vary` names `Accept-Encoding`, and the body as sent.
async fn fetch(client: &reqwest::Client, url: &str, accept: Option<&str>) -> (u16, Option<String>, bool, Vec<u8>) {
    let mut request = client.get(url);
    if let Some(accept) = accept {
        request = request.header("Accept-Encoding", accept);
    }
    let response = request.send().await.unwrap();
    let encoding = response.headers().get("content-encoding").map(|v| v.to_str().unwrap().to_owned());
    let varies = response.headers().get_all("vary").iter().any(|v| v.to_str().unwrap().to_lowercase().contains("accept-encoding"));
    let length: Option<usize> = response.headers().get("content-length").map(|v| v.to_str().unwrap().parse().unwrap());
    let status = response.status().as_u16();
    let body = response.bytes().await.unwrap().to_vec();
    assert_eq!(length, Some(body.len()), "{url} ({accept:?}): Content-Length is the length sent");
    (status, encoding, varies, body)
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn kept_pages_are_gzip_compressed_for_clients_that_take_it(db: PgPool) {
    series::ensure(&db, &default_series()).await.unwrap();
    let app = spawn(state(db, &redis_url())).await;
    // A client that sends only what it is told and reads the bytes as they come.
    let raw = reqwest::Client::builder().no_gzip().no_brotli().no_deflate().build().unwrap();
    let url = format!("{}/v1/series?limit=50", app.base);

    let (status, encoding, varies, plain) = fetch(&raw, &url, None).await;
    assert_eq!((status, encoding, varies), (200, None, true), "no Accept-Encoding: as rendered");
    let page: Value = serde_json::from_slice(&plain).unwrap();
    assert!(!page["data"].as_array().unwrap().is_empty());

    for accept in ["gzip", "br;q=1.0, gzip;q=0.8", "*"] {
        let (status, encoding, varies, sent) = fetch(&raw, &url, Some(accept)).await;
        assert_eq!((status, encoding.as_deref(), varies), (200, Some("gzip"), true), "{accept}");
        let mut inflated = Vec::new();
        flate2::read::GzDecoder::new(&sent[..]).read_to_end(&mut inflated).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&inflated).unwrap(), page, "{accept}: inflates to the page");
        assert!(sent.len() < plain.len(), "{accept}: {} bytes compressed to {}", plain.len(), sent.len());
    }
    for accept in ["gzip;q=0", "identity", "br, deflate"] {
        let (status, encoding, varies, sent) = fetch(&raw, &url, Some(accept)).await;
        assert_eq!((status, encoding, varies), (200, None, true), "{accept}");
        assert_eq!(serde_json::from_slice::<Value>(&sent).unwrap(), page, "{accept}");
    }
    // An error and the health check are rendered per request: never compressed.
    for path in ["/v1/markets/not-a-uuid", "/v1/series/no-such-series", "/health"] {
        let (status, encoding, varies, _) = fetch(&raw, &format!("{}{path}", app.base), Some("gzip")).await;
        assert_eq!((encoding, varies), (None, false), "{path} ({status})");
    }
    // The suite's own client takes gzip and inflates it, as browsers do.
    let page_again: Value = app.http.get(&url).send().await.unwrap().json().await.unwrap();
    assert_eq!(page_again, page);
}
