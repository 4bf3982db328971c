#!/usr/bin/env bash
# The WebSocket fan-out benchmark (numbers in docs/performance.md): 5,000 subscribers of one market over
# 1,000 loopback source addresses, the real service in process, in a fresh database
# `fm_bench_ws`, at three rates: a change every 500, 100 and 20 ms. WS_SUBSCRIBERS and
# WS_UPDATES change the sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export RUST_LOG="${RUST_LOG:-error}" FM_LOG_FORMAT=json
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
cargo build --release --locked -p api --example ws_fanout
for spacing in 500 100 20; do
  WS_SPACING_MS=$spacing target/release/examples/ws_fanout
done
