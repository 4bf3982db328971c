#!/usr/bin/env bash
# Two builds of the trading benchmark side by side (docs/performance.md): runs each given
# `trade_bench` binary in turn, PAIRS times (default 3), and prints for each run the one-market
# line, its p50 and p99 after the phase's first second, pgbench's tps, their ratio, and the CPU a
# trade over the one-market phase — of the benchmark's process (service and its load generator)
# and of every Postgres process, from /proc/<pid>/stat — and under it how busy the phase kept
# each one-at-a-time turn and how much of the host's CPU time the hypervisor took (steal) during
# the phase and during pgbench's run. This machine's spread between runs is about ±15%: compare
# builds only alternating, never one run each.
#
#   cargo build --release --locked -p api --example trade_bench && cp target/release/examples/trade_bench /tmp/tb_a
#   (change, build again, copy to /tmp/tb_b)
#   bash scripts/bench-trading-compare.sh /tmp/tb_a /tmp/tb_b 4
set -euo pipefail
cd "$(dirname "$0")/.."
default_rounds=3
source scripts/lib/trade-bench.sh

# CPU ticks of all of Postgres (user + system, with reaped children).
postgres_ticks() {
    local total=0 pid
    for pid in $(pgrep -x postgres); do
        total=$((total + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for ((pair = 1; pair <= rounds; pair++)); do
    for bin in "${binaries[@]}"; do
        trade_bench_start "$bin" "$log"
        bench0=$(ticks_of "$pid") pg0=$(postgres_ticks)
        while trade_bench_before "$log" "one market:"; do sleep 0.1; done
        bench1=$(ticks_of "$pid") pg1=$(postgres_ticks)
        trade_bench_end
        line=$(grep "one market:" "$log" | sed 's/^ *//')
        # The one-market phase's figures after its first second (its phase is printed first).
        steady=$(grep -m1 "after its first second:" "$log" | sed 's/^ *after its first second: *//')
        tps=$(grep -o "tps = [0-9.]*" "$log" | head -1 | awk '{print $3}')
        echo "$line" | awk -v bin="$bin" -v pg="${tps:-0}" -v tick="$tick" -v b="$((bench1 - bench0))" -v p="$((pg1 - pg0))" -v line="$line" -v steady="$steady" '{
            trades = $3 * 10   # the one-market phase lasts 10 s (trade_bench SECONDS)
            printf "%s | %s | after 1 s: %s | pgbench %.0f tps | ratio %.2f | CPU a trade %.2f ms (service+clients %.2f / Postgres %.2f)\n",
                bin, line, steady, pg, (pg > 0 ? $3 / pg : 0), (b + p) / tick / trades * 1e3, b / tick / trades * 1e3, p / tick / trades * 1e3
        }'
        grep -m1 "turns busy:" "$log" || true
        # How much of the host's CPU the hypervisor took, in the phase and in pgbench's run: a
        # pair whose shares differ much compares the host, not the builds.
        phase_host=$(grep -m1 "host CPU:" "$log" | sed 's/^ *host CPU: *//') pgbench_host=$(grep -m1 "pgbench's host CPU:" "$log" | sed 's/^.*host CPU: *//')
        [ -z "$phase_host" ] || echo "    host CPU: one market ${phase_host}; pgbench ${pgbench_host:-not measured}"
    done
done
