#!/usr/bin/env bash
# Custodial trading throughput (numbers in docs/performance.md): trades/s on one market and across ten,
# through the real service on the embedded chain, beside pgbench on the same Postgres. Each phase
# also prints its p50 and p99 after its first second. TRADE_BENCH_LATENCIES=FILE appends every
# trade as `phase,start_ms,latency_ms`. TRADE_BENCH_GROWTH=10 measures both phases again once the
# service holds ten times their trades (a trade's cost as the history grows).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export RUST_LOG="${RUST_LOG:-error}" FM_LOG_FORMAT=json
cargo run --release --locked -p api --example trade_bench
