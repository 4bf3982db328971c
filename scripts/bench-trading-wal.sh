#!/usr/bin/env bash
# What a trade writes to the WAL, by relation: runs each given `trade_bench` binary in turn,
# RUNS times (default 1), reads the WAL written over SECONDS (default 3) of its one-market phase
# with `pg_waldump`, and prints the records and bytes a trade for every table and index (and
# the records that name none: commits, sequences). The WAL a trade writes does not move with the
# host's speed as throughput does (only with the size of a group, which the table's shared rows
# are written once for), so a change of what a trade writes shows here when the trading
# comparison (`bench-trading-compare.sh`) cannot separate it. Reads Postgres's data directory:
# run it as a user that may (root, or postgres).
#
#   bash scripts/bench-trading-wal.sh /tmp/tb_a /tmp/tb_b
set -euo pipefail
cd "$(dirname "$0")/.."
default_rounds=1
source scripts/lib/trade-bench.sh
bench_db="${DATABASE_URL%/*}/fm_bench_trade"
seconds="${SECONDS_MEASURED:-3}"
waldump="$(pg_config --bindir 2>/dev/null)/pg_waldump"
[ -x "$waldump" ] || waldump=$(ls /usr/lib/postgresql/*/bin/pg_waldump | tail -1)
wal_dir="$(psql -Atc "SHOW data_directory" "$DATABASE_URL")/pg_wal"

log=$(mktemp) dump=$(mktemp) names=$(mktemp)
trap 'rm -f "$log" "$dump" "$names"' EXIT
for ((round = 1; round <= rounds; round++)); do
    for bin in "${binaries[@]}"; do
        trade_bench_start "$bin" "$log"
        # A second into the phase: past its first groups' plans and the first touch of its rows.
        sleep 1
        read -r lsn0 trades0 < <(psql -Atc "SELECT pg_current_wal_lsn(), (SELECT count(*) FROM trades)" -F ' ' "$bench_db")
        sleep "$seconds"
        read -r lsn1 trades1 < <(psql -Atc "SELECT pg_current_wal_lsn(), (SELECT count(*) FROM trades)" -F ' ' "$bench_db")
        psql -Atc "SELECT pg_relation_filenode(oid), relname FROM pg_class WHERE pg_relation_filenode(oid) IS NOT NULL" -F ' ' "$bench_db" >"$names"
        trade_bench_end
        "$waldump" -p "$wal_dir" -s "$lsn0" -e "$lsn1" >"$dump" 2>/dev/null || true
        echo "$bin | $((trades1 - trades0)) trades in ${seconds} s of the one-market phase (WAL $lsn0 .. $lsn1)"
        awk -v trades="$((trades1 - trades0))" '
            NR == FNR { name[$1] = $2; next }
            match($0, /len \(rec\/tot\): *[0-9]+\/ *[0-9]+/) {
                split(substr($0, RSTART, RLENGTH), len, "/"); bytes = len[3] + 0
                if (match($0, /rel [0-9]+\/[0-9]+\/[0-9]+/)) {
                    split(substr($0, RSTART + 4, RLENGTH - 4), rel, "/"); key = (rel[3] in name) ? name[rel[3]] : "relation " rel[3]
                } else { match($0, /rmgr: [A-Za-z]+/); key = "(" substr($0, RSTART + 6, RLENGTH - 6) ")" }
                records[key]++; size[key] += bytes; total_records++; total_bytes += bytes
            }
            END {
                printf "    a trade: %.1f records, %.0f bytes\n", total_records / trades, total_bytes / trades
                for (key in size) printf "%12.0f    %-44s %6.2f records %7.0f bytes\n", size[key], key, records[key] / trades, size[key] / trades
            }' "$names" "$dump" | { IFS= read -r header; echo "$header"; sort -rn | head -25 | sed 's/^ *[0-9]* //'; }
    done
done
