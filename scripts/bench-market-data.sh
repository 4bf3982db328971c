#!/usr/bin/env bash
# The market-data read benchmark (numbers in docs/performance.md): 4,000 perps with 30 days of interval
# changes and crowd history in a fresh database `fm_bench_market_data`, the eight endpoints beside
# a bare axum handler, same load generator. The database is dropped after the run (`KEEP_DATABASE=1`
# keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export RUST_LOG="${RUST_LOG:-error}" FM_LOG_FORMAT=json
cargo run --release --locked -p api --example market_data_load
