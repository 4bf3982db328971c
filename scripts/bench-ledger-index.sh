#!/usr/bin/env bash
# getSignaturesForAddress's query on a 300,000-transaction ledger, by a row per address and
# transaction and by a row per address and ledger group (the service's query, read from
# localnet/src/reads.rs; numbers in docs/performance.md), in a scratch database dropped afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
admin="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
psql -q "$admin" -c "DROP DATABASE IF EXISTS fm_bench_ledger" -c "CREATE DATABASE fm_bench_ledger"
psql -q -v ON_ERROR_STOP=1 "${admin%/*}/fm_bench_ledger" -f bench/sql/signatures_for_address.sql | grep -E "^ *(by |a user|the program)|Scan|Execution Time"
psql -q "$admin" -c "DROP DATABASE fm_bench_ledger"
