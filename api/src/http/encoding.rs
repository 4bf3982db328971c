//! Content coding of kept bodies (`rendered::KeptBody`): a client whose `Accept-Encoding`
//! takes gzip gets the body compressed, made once per kept body and version rather than per
//! request; any other gets it as is. Every answer from a kept body says `Vary: Accept-Encoding`,
//! so a shared cache keeps the two apart. Bodies rendered per request (a caller's own data,
//! errors) are answered as is.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;

use super::rendered::KeptBody;

/// Marks a response whose body is a kept body, which the edge may answer gzip-compressed.
#[derive(Clone)]
pub struct Compressible(pub KeptBody);

/// Whether `headers`' `Accept-Encoding` takes gzip (RFC 9110 §12.5.3): `gzip` (or `x-gzip`)
/// listed with a weight above zero, or, when it is not listed, `*` so listed. Without the
/// header no coding is asked for.
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let (mut gzip, mut any) = (None::<f32>, None::<f32>);
    for member in headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|value| value.to_str().ok()).flat_map(|value| value.split(',')) {
        let mut parts = member.split(';');
        let coding = parts.next().unwrap_or("").trim();
        let q = parts.find_map(weight).unwrap_or(1.0);
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(gzip.map_or(q, |before| before.max(q)));
        } else if coding == "*" {
            any = Some(q);
        }
    }
    gzip.or(any).is_some_and(|q| q > 0.0)
}

/// The weight a `q=` parameter gives (`None` for another parameter); a malformed weight counts
/// as zero, refusing the coding rather than guessing.
fn weight(param: &str) -> Option<f32> {
    let (name, value) = param.split_once('=')?;
    name.trim().eq_ignore_ascii_case("q").then(|| value.trim().parse::<f32>().ok().filter(|q| (0.0..=1.0).contains(q)).unwrap_or(0.0))
}

/// `response` as the client asked for it: a kept body compressed when `gzip` (the request took
/// it), as is otherwise; either way marked `Vary: Accept-Encoding`.
pub fn negotiate(mut response: Response, gzip: bool) -> Response {
    let Some(Compressible(kept)) = response.extensions_mut().remove::<Compressible>() else { return response };
    response.headers_mut().append(header::VARY, HeaderValue::from_static("accept-encoding"));
    if gzip {
        let compressed = kept.gzip();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(compressed.len()));
        *response.body_mut() = Body::from(compressed);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(values: &[&str]) -> bool {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        accepts_gzip(&headers)
    }

    #[test]
    fn gzip_is_taken_when_listed_with_a_weight_above_zero() {
        assert!(asking(&["gzip"]));
        assert!(asking(&["gzip, deflate, br"]));
        assert!(asking(&["br;q=1.0, GZIP;q=0.5"]));
        assert!(asking(&["x-gzip"]));
        assert!(asking(&["*"]));
        assert!(asking(&["identity", "gzip"]), "in a second header");
        assert!(!asking(&[]), "no header asks for no coding");
        assert!(!asking(&["identity"]));
        assert!(!asking(&["br, deflate"]));
        assert!(!asking(&["gzip;q=0"]));
        assert!(!asking(&["gzip;q=0.000"]));
        assert!(!asking(&["gzip;q=banana"]), "a malformed weight refuses");
        assert!(!asking(&["gzip;q=2"]), "a weight over 1 refuses");
        assert!(!asking(&["gzipped"]));
        assert!(!asking(&["gzip;q=0, *"]), "gzip refused by name, whatever `*` says");
        assert!(asking(&["identity;q=1, *;q=0.1"]));
        assert!(!asking(&["*;q=0"]));
    }
}
