# The part the trading benchmark's harnesses share (bench-trading-compare.sh,
# bench-trading-backends.sh, bench-trading-wal.sh): sourced from the repository root, after
# `set -euo pipefail`, with the harness's arguments — `trade_bench` binaries and a trailing count
# of rounds. Starts Postgres and Redis where they are not running and sets `binaries`, `rounds`
# (`default_rounds` unless a count was given), `tick` (the clock ticks a second of /proc's CPU
# times) and `bench_db` (the URL of the database the benchmark trades in).
[ $# -ge 1 ] || { echo "usage: $0 TRADE_BENCH_BINARY... [ROUNDS]" >&2; exit 2; }
rounds="${default_rounds:-3}"
if [[ "${!#}" =~ ^[0-9]+$ ]]; then rounds="${!#}"; set -- "${@:1:$#-1}"; fi
binaries=("$@")
bash scripts/setup.sh >/dev/null
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export RUST_LOG=error FM_LOG_FORMAT=json
tick=$(getconf CLK_TCK)
bench_db="${DATABASE_URL%/*}/fm_bench_trade"

# A process's CPU time so far, in clock ticks (user + system, from /proc/PID/stat; 0 once gone).
ticks_of() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# Starts BIN on fresh benchmark databases, its output to LOG, and returns (with its `pid` set)
# once its trading phases begin.
trade_bench_start() {
    psql -q "$DATABASE_URL" -c "DROP DATABASE IF EXISTS fm_bench_trade" -c "DROP DATABASE IF EXISTS fm_bench_pgbench" 2>/dev/null
    "$1" >"$2" 2>&1 &
    pid=$!
    while trade_bench_before "$2" "custodial trades"; do sleep 0.05; done
}

# Whether the running benchmark (`pid`) has not printed LINE to LOG yet; exits with its output
# if it stopped first.
trade_bench_before() {
    grep -q "$2" "$1" && return 1
    kill -0 "$pid" 2>/dev/null || { cat "$1"; exit 1; }
}

# Waits for the benchmark (`pid`) to end; a benchmark that failed ends the harness.
trade_bench_end() {
    wait "$pid"
}
