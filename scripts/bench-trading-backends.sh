#!/usr/bin/env bash
# Where Postgres's share of a trade goes: runs each given `trade_bench` binary in turn, RUNS times (default 2), and prints
# for its one-market phase the trades a second, the WAL written a trade, and the CPU a trade of
# each Postgres backend, named by the statements it was seen running (sampled from
# pg_stat_activity every 0.2 s): the projection's turn, the ledger writer, the trade reads, the
# stream publisher, the rest — each with the time it spent runnable but waiting for a core
# (/proc's schedstat); then the same two for the benchmark's process (the service and its load
# generator, all threads); under it, the host's CPU over the phase (idle, stolen by the
# hypervisor). A one-at-a-time turn whose backend waits for a core about as long as it runs
# takes about twice its CPU. A backend's CPU a trade
# moves far less from run to run than the throughput does on these machines (±15 %), so a
# change to one turn's statement shows here when the trading comparison
# (`bench-trading-compare.sh`) cannot separate it.
#
#   bash scripts/bench-trading-backends.sh /tmp/tb_a /tmp/tb_b 3
set -euo pipefail
cd "$(dirname "$0")/.."
default_rounds=2
source scripts/lib/trade-bench.sh

# "pid ticks" for every Postgres process and "bench ticks" for the benchmark's process.
ticks() {
    local backend
    for backend in $(pgrep -x postgres); do echo "$backend $(ticks_of "$backend")"; done
    echo "bench $(ticks_of "$pid")"
}
# The nanoseconds each spent runnable but waiting for a core (the second field of /proc's
# schedstat): "pid ns" for every Postgres process, "bench/tid ns" for each of the benchmark's
# threads (its threads come and go, so they are summed in the end, each from its own start).
waits() {
    local backend task
    for backend in $(pgrep -x postgres); do echo "$backend $(awk '{print $2}' "/proc/$backend/schedstat" 2>/dev/null || echo 0)"; done
    for task in /proc/"$pid"/task/*; do echo "bench/${task##*/} $(awk '{print $2}' "$task/schedstat" 2>/dev/null || echo 0)"; done
}
lsn() { psql -At "$DATABASE_URL" -c "SELECT pg_current_wal_lsn()"; }

log=$(mktemp) seen=$(mktemp) before=$(mktemp) after=$(mktemp) waits_before=$(mktemp) waits_after=$(mktemp)
trap 'rm -f "$log" "$seen" "$before" "$after" "$waits_before" "$waits_after"' EXIT
for ((run = 1; run <= rounds; run++)); do
    for bin in "${binaries[@]}"; do
        trade_bench_start "$bin" "$log"
        ticks >"$before"
        waits >"$waits_before"
        lsn0=$(lsn)
        : >"$seen"
        while trade_bench_before "$log" "one market:"; do
            psql -At -F '|' "$bench_db" -c "SELECT pid, regexp_replace(left(query, 120), '\s+', ' ', 'g') FROM pg_stat_activity WHERE datname = 'fm_bench_trade'" >>"$seen" 2>/dev/null || true
            sleep 0.2
        done
        ticks >"$after"
        waits >"$waits_after"
        lsn1=$(lsn)
        trade_bench_end
        rate=$(grep "one market:" "$log" | awk '{print $3}')
        wal=$(psql -At "$DATABASE_URL" -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")
        python3 - "$bin" "$rate" "$wal" "$tick" "$seen" "$before" "$after" "$waits_before" "$waits_after" <<'PY'
import collections, sys

bin, rate, wal, tick = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
seen, before, after, waits_before, waits_after = sys.argv[5:]
trades = rate * 10  # the one-market phase lasts 10 s (trade_bench SECONDS)
# A backend's role, by every statement it was seen running, named in this order: the ledger
# writer also runs the projection's statement for the trades it writes (the ledger write's
# projection), so its backend is "ledger writer + projection" once both were seen.
# (Only a statement's first 120 characters are sampled, whitespace collapsed.)
roles = [("ledger writer", "FROM unnest($1::TEXT[], $2::BIGINT[], $3::BIGINT[], $4::JSONB[]"), ("projection", "WITH locked AS"),
         ("trade reads", "SELECT r.ord"), ("stream publisher", "stream_events"), ("stream publisher", "stream_seq")]
names = collections.defaultdict(set)
for line in open(seen):
    pid, _, query = line.rstrip("\n").partition("|")
    names[pid].update(name for name, mark in roles if mark in query)
order = list(dict.fromkeys(name for name, _ in roles))
role = {pid: " + ".join(n for n in order if n in seen_names) for pid, seen_names in names.items() if seen_names}
def readings(path):
    # "key value" lines: a Postgres pid's, or the benchmark's ("bench", "bench/tid").
    return {key: int(value) for key, value in (l.split() for l in open(path) if len(l.split()) == 2)}
ticks0, ticks1 = readings(before), readings(after)
waits0, waits1 = readings(waits_before), readings(waits_after)
cpu, waited = collections.Counter(), collections.Counter()
for pid in ticks1.keys() - {"bench"}:
    cpu[role.get(pid, "other backends")] += ticks1[pid] - ticks0.get(pid, 0)
    waited[role.get(pid, "other backends")] += waits1.get(pid, 0) - waits0.get(pid, 0)
# A thread that ended during the phase is left out (its wait since the start is gone with it);
# one that began in it counts from zero.
bench_waited = sum(w - waits0.get(task, 0) for task, w in waits1.items() if task.startswith("bench/"))
ms = lambda t: t / tick / trades * 1e3
ns_ms = lambda ns: ns / 1e6 / trades
shown = ", ".join(f"{name} {ms(t):.3f} (waited {ns_ms(waited[name]):.3f})" for name, t in cpu.most_common())
print(f"{bin} | {rate:.0f} trades/s | WAL {wal / trades / 1024:.1f} KiB a trade | Postgres CPU a trade {ms(sum(cpu.values())):.3f} ms "
      f"(waited for a core {ns_ms(sum(waited.values())):.3f}): {shown}")
print(f"    the benchmark's process (service and load generator): CPU a trade {ms(ticks1['bench'] - ticks0['bench']):.3f} ms "
      f"(waited for a core {ns_ms(bench_waited):.3f})")
PY
        # How much of the host's CPU the hypervisor took meanwhile (trade_bench's line).
        grep -m1 "host CPU:" "$log" || true
    done
done
