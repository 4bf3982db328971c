#!/usr/bin/env bash
# The read-path benchmark (numbers in docs/performance.md): 4,000 series in a fresh database `fm_bench`,
# GET /v1/series and the quote endpoint beside a bare axum handler, same load generator.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export RUST_LOG="${RUST_LOG:-error}" FM_LOG_FORMAT=json
cargo run --release --locked -p api --example load
