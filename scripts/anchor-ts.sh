#!/usr/bin/env bash
# The Anchor TypeScript suite (tests/ts) against the embedded chain, as `anchor test` runs it
# against solana-test-validator: installs the suite's Node packages (pinned by
# tests/ts/package-lock.json), builds the program's SBF binary (scripts/build-sbf.sh), starts
# the service on its embedded defaults running that binary, with a database of its own (its /rpc
# and, on the next port, its PubSub WebSocket), hands the suite the chain's role keys, runs
# mocha, and stops the service.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --locked -q --no-run
(cd tests/ts && npm ci --no-audit --no-fund --loglevel=error)

keys="$(mktemp -d)"
. scripts/lib/local-service.sh
# PubSub on the next port, as web3.js and kit derive it from the RPC URL.
# The chain runs the program's SBF binary, as a validator would (the suite checks a buy's logs
# line by line).
program_so="$(bash scripts/build-sbf.sh)"
start_local_service anchor_ts FM_RATE_RPC_PER_SEC=100000 FM_SCHEDULER=false FM_COLLECTORS=false FM_PROGRAM_SO="$program_so"
trap 'stop_local_service; rm -rf "$keys"' EXIT

# The chain's role keys (kept in its database), as solana-keygen files.
psql "$database_url" -qtAc "SELECT role || ' ' || encode(keypair, 'hex') FROM embedded_keys" |
  python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        role, hexkey = line.split()
        json.dump(list(bytes.fromhex(hexkey)), open(sys.argv[1] + "/" + role + ".json", "w"))
' "$keys"

cd tests/ts
ANCHOR_PROVIDER_URL="$base/rpc" FM_KEYS_DIR="$keys" npx mocha --require tsx --timeout 120000 --reporter spec '*.test.ts'
