#!/usr/bin/env bash
# Indexer benchmarks (numbers in docs/performance.md): catch-up of 100,000 events beside a raw COPY of the
# same rows (and of every row the projection leaves), what a group of trades applied ahead costs
# by its size, then the lag from confirmation to visibility through the API on the embedded chain.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export RUST_LOG="${RUST_LOG:-error}"
cargo run --release --locked -p indexer --example catchup
cargo run --release --locked -p api --example lag
