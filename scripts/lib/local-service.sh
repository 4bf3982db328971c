# Sourced by the scripts that test a live service (contract.sh, anchor-ts.sh):
#   start_local_service NAME [VAR=value ...]
# starts the suite's funding-api build on its embedded defaults on a free port, against a
# database of its own (fm_NAME_<pid>), with the given extra environment; waits until /health
# answers; on exit stops it and drops the database. Sets `port`, `base`, `database_url` and
# `service_log`. The port is one whose next port is free too: the embedded chain's PubSub
# listens there unless FM_PUBSUB_ADDR says otherwise (where web3.js looks for it).
free_port_pair() {
  python3 -c '
import socket
while True:
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    if p < 65535:
        b = socket.socket()
        try:
            b.bind(("127.0.0.1", p + 1)); print(p); break
        except OSError:
            pass
'
}

start_local_service() {
  local name="$1"
  shift
  local target="${CARGO_TARGET_DIR:-target}"
  local admin="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
  local database="fm_${name}_$$"
  port=$(free_port_pair)
  base="http://127.0.0.1:$port"
  database_url="${admin%/*}/$database"
  service_log="$target/$name-service.log"
  env FM_BIND_ADDR="127.0.0.1:$port" FM_METRICS_ADDR=off \
    DATABASE_URL="$database_url" REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}" RUST_LOG="${RUST_LOG:-warn}" \
    "$@" "$target/debug/funding-api" >"$service_log" 2>&1 &
  local_service_pid=$!
  local_service_admin="$admin"
  local_service_database="$database"
  trap stop_local_service EXIT
  for _ in $(seq 1 240); do
    curl -sf "$base/health" >/dev/null && return 0
    kill -0 "$local_service_pid" 2>/dev/null || { echo "$name: the service exited"; cat "$service_log"; exit 1; }
    sleep 0.5
  done
  echo "$name: the service did not become healthy"
  exit 1
}

stop_local_service() {
  kill "$local_service_pid" 2>/dev/null || true
  wait "$local_service_pid" 2>/dev/null || true
  psql "$local_service_admin" -qtAc "DROP DATABASE IF EXISTS \"$local_service_database\" WITH (FORCE)" >/dev/null 2>&1 || true
}
