#!/usr/bin/env bash
# What a trade writes to the WAL, by relation: runs each given `trade_bench` binary in turn,
# ROUNDS times (default 1), reads the WAL written over SECONDS_MEASURED (default 3, at most 8:
# the phase lasts 10 s) of its one-market phase with `pg_waldump` while the benchmark still
# runs, and prints the records and bytes a trade for every table and index, and for the
# records that name no relation (commits, full-page-write hints) by their resource manager.
# The WAL a trade writes does not move with the host's speed as throughput does (only with the
# size of a group, whose shared rows are written once), so a change of what a trade writes
# shows here when the trading comparison (`bench-trading-compare.sh`) cannot separate it. Reads
# Postgres's data directory: run it as a user that may (root, or postgres).
#
#   bash scripts/bench-trading-wal.sh /tmp/tb_a /tmp/tb_b [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
default_rounds=1
source scripts/lib/trade-bench.sh
seconds="${SECONDS_MEASURED:-3}"
[ "$seconds" -le 8 ] || { echo "SECONDS_MEASURED must be at most 8 (the one-market phase lasts 10 s)" >&2; exit 2; }
# The server's own major version's pg_waldump (it reads only its own version's WAL).
major=$(($(psql -Atc "SHOW server_version_num" "$DATABASE_URL") / 10000))
waldump="/usr/lib/postgresql/$major/bin/pg_waldump"
[ -x "$waldump" ] || waldump="$(pg_config --bindir 2>/dev/null || true)/pg_waldump"
[ -x "$waldump" ] || { echo "no pg_waldump for PostgreSQL $major" >&2; exit 1; }
wal_dir="$(psql -Atc "SHOW data_directory" "$DATABASE_URL")/pg_wal"

# The WAL's insert position and the trades recorded so far, as "lsn count".
wal_and_trades() { psql -Atc "SELECT pg_current_wal_lsn(), (SELECT count(*) FROM trades)" -F ' ' "$bench_db"; }

log=$(mktemp) dump=$(mktemp) names=$(mktemp)
trap 'rm -f "$log" "$dump" "$names"' EXIT
for ((round = 1; round <= rounds; round++)); do
    for bin in "${binaries[@]}"; do
        trade_bench_start "$bin" "$log"
        # A second into the phase: past its first groups' plans and the first touch of its rows.
        sleep 1
        read -r lsn0 trades0 < <(wal_and_trades)
        sleep "$seconds"
        read -r lsn1 trades1 < <(wal_and_trades)
        psql -Atc "SELECT pg_relation_filenode(oid), relname FROM pg_class WHERE pg_relation_filenode(oid) IS NOT NULL" -F ' ' "$bench_db" >"$names"
        # Read now, before the rest of the benchmark's WAL could bring a checkpoint that recycles
        # these segments. A record still being written at the window's end makes pg_waldump stop
        # there with an error; what it read before stands (an empty dump ends the run below).
        "$waldump" -p "$wal_dir" -s "$lsn0" -e "$lsn1" >"$dump" 2>/dev/null || true
        trade_bench_end
        trades=$((trades1 - trades0))
        [ "$trades" -gt 0 ] && [ -s "$dump" ] || { echo "$bin: no trades or no WAL in the window" >&2; exit 1; }
        echo "$bin | $trades trades in ${seconds} s of the one-market phase (WAL $lsn0 .. $lsn1)"
        awk -v trades="$trades" '
            NR == FNR { name[$1] = $2; next }
            match($0, /len \(rec\/tot\): *[0-9]+\/ *[0-9]+/) {
                split(substr($0, RSTART, RLENGTH), len, "/"); bytes = len[3] + 0
                if (match($0, /rel [0-9]+\/[0-9]+\/[0-9]+/)) {
                    split(substr($0, RSTART + 4, RLENGTH - 4), rel, "/"); key = (rel[3] in name) ? name[rel[3]] : "relation " rel[3]
                } else { match($0, /rmgr: [A-Za-z0-9]+/); key = "(" substr($0, RSTART + 6, RLENGTH - 6) ")" }
                records[key]++; size[key] += bytes; total_records++; total_bytes += bytes
            }
            END {
                printf "    a trade: %.1f records, %.0f bytes\n", total_records / trades, total_bytes / trades
                for (key in size) printf "%12.0f    %-44s %6.2f records %7.0f bytes\n", size[key], key, records[key] / trades, size[key] / trades
            }' "$names" "$dump" | { IFS= read -r header; echo "$header"; sort -rn | head -25 | sed 's/^ *[0-9]* //'; }
    done
done
