//! The layering rules of the API crate (docs/architecture.md, "Layout"), checked by reading its sources:
//! dependencies point one way — http and workers → services → {store, chain, exchanges,
//! domain} — and the domain knows no framework.

use std::path::{Path, PathBuf};

fn sources(layer: &str) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(layer), &mut out);
    assert!(!out.is_empty(), "no sources in src/{layer}");
    out
}

/// Every `(file, line)` of `layer` that mentions one of `needles` outside comments.
fn offending(layer: &str, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in sources(layer) {
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if needles.iter().any(|needle| code.contains(needle)) {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_domain_knows_no_framework_and_no_other_layer() {
    let found = offending(
        "domain",
        &[
            "sqlx",
            "axum",
            "redis",
            "reqwest",
            "crate::store",
            "crate::services",
            "crate::http",
            "crate::chain",
            "crate::workers",
            "crate::app",
            "crate::exchanges",
        ],
    );
    assert!(found.is_empty(), "domain must stay pure:\n{}", found.join("\n"));
}

#[test]
fn handlers_hold_no_sql_and_reach_no_store_but_through_services() {
    let found = offending("http", &["sqlx::query", "query_as(", "query_scalar(", "crate::workers", "crate::app"]);
    assert!(found.is_empty(), "SQL or a wrong-way dependency in http:\n{}", found.join("\n"));
}

#[test]
fn handlers_name_store_rows_but_call_no_store_function() {
    // http may shape the rows a service returns (`…Row` types); every call goes through
    // services.
    let mut found = Vec::new();
    for line in offending("http", &["crate::store", ".db"]) {
        let imported = line.rsplit("::").next().unwrap_or("").trim_end_matches(';').trim_matches(|c| c == '{' || c == '}');
        if !line.contains("use crate::store") || !imported.split(',').all(|name| name.trim().ends_with("Row")) {
            found.push(line);
        }
    }
    assert!(found.is_empty(), "http reaches the store directly:\n{}", found.join("\n"));
}

#[test]
fn lower_layers_do_not_depend_on_higher_ones() {
    for layer in ["store", "chain", "exchanges"] {
        let found = offending(layer, &["crate::services", "crate::http", "crate::workers", "crate::app", "axum::"]);
        assert!(found.is_empty(), "{layer} depends on a higher layer:\n{}", found.join("\n"));
    }
    let found = offending("services", &["crate::http", "crate::workers", "crate::app", "axum::"]);
    assert!(found.is_empty(), "services depend on a higher layer:\n{}", found.join("\n"));
    let found = offending("services", &["sqlx::query", "query_as(", "query_scalar("]);
    assert!(found.is_empty(), "SQL belongs in store:\n{}", found.join("\n"));
}

#[test]
fn the_checks_can_fail() {
    // The needle search finds what it looks for (so the tests above are not vacuous).
    assert!(!offending("store", &["sqlx::query"]).is_empty());
    assert!(!offending("http", &["axum::"]).is_empty());
}
