#!/usr/bin/env bash
# Settlement at scale (numbers in docs/performance.md): 4,000 rounds due at once with 40,000 positions,
# settled by the real service's oracle, crank and indexer on the embedded chain; the time to the
# last payout visible through the API, and the transactions it took. SETTLE_ROUNDS=400 for a
# quicker run; SETTLE_GROWTH=10 settles ten such sets one after the other with the same wallets
# and prints the last one's time against the first's (the cost of a payout as the history grows).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export RUST_LOG="${RUST_LOG:-error}" FM_LOG_FORMAT=json
cargo run --release --locked -p api --example settle_bench
