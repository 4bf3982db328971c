#!/usr/bin/env bash
# Two builds of the trading benchmark side by side (README, Benchmarks): runs each given
# `trade_bench` binary in turn, PAIRS times (default 3), and prints for each run the one-market
# line, its p50 and p99 after the phase's first second, pgbench's tps, their ratio, and the CPU a
# trade over the one-market phase — of the benchmark's process (service and its load generator)
# and of every Postgres process, from /proc/<pid>/stat. This machine's spread between runs is about ±15%: compare builds only
# alternating, never one run each.
#
#   cargo build --release --locked -p api --example trade_bench && cp target/release/examples/trade_bench /tmp/tb_a
#   (change, build again, copy to /tmp/tb_b)
#   bash scripts/bench-trading-compare.sh /tmp/tb_a /tmp/tb_b 4
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 TRADE_BENCH_BINARY... [PAIRS]" >&2; exit 2; }
pairs=3
if [[ "${!#}" =~ ^[0-9]+$ ]]; then pairs="${!#}"; set -- "${@:1:$#-1}"; fi
bash scripts/setup.sh >/dev/null
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export RUST_LOG=error FM_LOG_FORMAT=json
tick=$(getconf CLK_TCK)

# CPU ticks (user + system, with reaped children for Postgres) of a process, or of all of Postgres.
ticks_of() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
postgres_ticks() {
    local total=0 pid
    for pid in $(pgrep -x postgres); do
        total=$((total + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for ((pair = 1; pair <= pairs; pair++)); do
    for bin in "$@"; do
        psql -q "$DATABASE_URL" -c "DROP DATABASE IF EXISTS fm_bench_trade" -c "DROP DATABASE IF EXISTS fm_bench_pgbench" 2>/dev/null
        "$bin" >"$log" 2>&1 &
        pid=$!
        until grep -q "custodial trades" "$log"; do kill -0 "$pid" 2>/dev/null || { cat "$log"; exit 1; }; sleep 0.1; done
        bench0=$(ticks_of "$pid") pg0=$(postgres_ticks)
        until grep -q "one market:" "$log"; do kill -0 "$pid" 2>/dev/null || { cat "$log"; exit 1; }; sleep 0.1; done
        bench1=$(ticks_of "$pid") pg1=$(postgres_ticks)
        wait "$pid"
        line=$(grep "one market:" "$log" | sed 's/^ *//')
        # The one-market phase's figures after its first second (its phase is printed first).
        steady=$(grep -m1 "after its first second:" "$log" | sed 's/^ *after its first second: *//')
        tps=$(grep -o "tps = [0-9.]*" "$log" | head -1 | awk '{print $3}')
        echo "$line" | awk -v bin="$bin" -v pg="${tps:-0}" -v tick="$tick" -v b="$((bench1 - bench0))" -v p="$((pg1 - pg0))" -v line="$line" -v steady="$steady" '{
            trades = $3 * 10   # the one-market phase lasts 10 s (trade_bench SECONDS)
            printf "%s | %s | after 1 s: %s | pgbench %.0f tps | ratio %.2f | CPU a trade %.2f ms (service+clients %.2f / Postgres %.2f)\n",
                bin, line, steady, pg, (pg > 0 ? $3 / pg : 0), (b + p) / tick / trades * 1e3, b / tick / trades * 1e3, p / tick / trades * 1e3
        }'
    done
done
