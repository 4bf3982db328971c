#!/usr/bin/env bash
# The contract checks against the live service, run by scripts/test.sh after the Rust suite:
#   1. GET /docs rendered in headless Chromium (Debian's) lists every path of the document;
#   2. schemathesis generates requests from GET /v1/openapi.json — at least 10,000 — and every
#      answer must be no 5xx and match the document (status, content type, headers, schema).
# Installs what it needs (Chromium from Debian, schemathesis from PyPI pinned in
# scripts/contract/requirements.txt), starts the service on its embedded defaults against a
# database of its own, and stops it after.
#
# FM_FUZZ_EXAMPLES (default 250): test cases per operation; FM_FUZZ_SEED: the generator's seed
# (fixed by default, so a run is repeatable; `random` for a new one).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

target="${CARGO_TARGET_DIR:-target}"
examples="${FM_FUZZ_EXAMPLES:-250}"
seed="${FM_FUZZ_SEED:-20261124}"
minimum=10000

# The service and the sign-in example as the suite built them (a no-op after scripts/test.sh;
# `cargo build -p api` would rebuild three crates with other features).
cargo test --workspace --locked -q --no-run

if ! command -v chromium >/dev/null 2>&1; then
  echo "contract: installing chromium"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
venv="$target/contract-venv"
if ! "$venv/bin/st" --version 2>/dev/null | grep -q "4.32.5"; then
  echo "contract: installing schemathesis"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r scripts/contract/requirements.txt
fi

webhook_secret="contract-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
# Limits far above what the run sends: the fuzzing is about answers, not the limiter (tested
# on its own), and 10,000 requests from one address would otherwise be mostly 429s.
. scripts/lib/local-service.sh
start_local_service contract FM_PUBSUB_ADDR=off \
  FM_RATE_PUBLIC_PER_MIN=10000000 FM_RATE_AUTH_PER_MIN=10000000 FM_RATE_TRADE_PER_SEC=1000000 FM_RATE_RPC_PER_SEC=1000000 \
  FM_DEPOSIT_WEBHOOK_AUTH="$webhook_secret"

python3 scripts/contract/check_docs.py "$base"

# A signed-in wallet with test USDC, so trades and withdrawals can get past the balance check.
signed_in=$("$target/debug/examples/sign_in" "$base")
token=$(awk '/^token:/ {print $2}' <<<"$signed_in")
wallet=$(awk '/^wallet:/ {print $2}' <<<"$signed_in")
curl -sf -X POST "$base/v1/dev/faucet" -H 'content-type: application/json' \
  -d "{\"wallet_address\": \"$wallet\", \"amount\": \"1000\"}" >/dev/null

report="$target/contract-report"
rm -rf "$report"
seed_args=(--seed "$seed")
[ "$seed" = random ] && seed_args=()
# One worker: schemathesis's workers are threads, and CPython 3.11 (this machine has 3.11.7)
# can fail `ast.parse` run in two threads at once ("AST constructor recursion depth
# mismatch", CPython gh-106905) — hypothesis parses its filters' source — which stops the run
# with a runtime error that is no finding about the service.
set +e
FM_FUZZ_TOKEN="$token" FM_FUZZ_WEBHOOK_AUTH="$webhook_secret" PYTHONPATH=scripts/contract SCHEMATHESIS_HOOKS=hooks \
  "$venv/bin/st" --no-color run "$base/v1/openapi.json" --url "$base" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance \
  --phases examples,coverage,fuzzing --max-examples "$examples" "${seed_args[@]}" \
  --workers 1 --request-timeout 30 --report junit --report-dir "$report" >"$report.txt" 2>&1
status=$?
set -e
sed -n '/^=* *\(FAILURES\|ERRORS\)/,$p' "$report.txt" | head -200
generated=$(grep -oE '[0-9]+ generated' "$report.txt" | tail -n 1 | grep -oE '[0-9]+' || echo 0)
echo "contract: $generated requests generated (at least $minimum required); schemathesis exit $status"
if [ "$status" -ne 0 ]; then
  echo "contract: failures above; the service log is $service_log"
  exit 1
fi
if [ "$generated" -lt "$minimum" ]; then
  echo "contract: fewer than $minimum requests were generated"
  exit 1
fi
