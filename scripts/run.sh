#!/usr/bin/env bash
# Sets the machine up and runs the service on its embedded defaults (see .env.example).
# The service creates its database and applies the migrations itself.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f .env ] && set -a && . ./.env && set +a
export FM_LOG_FORMAT="${FM_LOG_FORMAT:-pretty}"
# The embedded chain runs the program's SBF binary, as a validator would (real compute units,
# the program's own log lines); where it cannot be built, the program compiled into the service.
if [ -z "${FM_PROGRAM_SO:-}" ]; then
  FM_PROGRAM_SO="$(bash scripts/build-sbf.sh)" || { echo "run: no SBF build (see above); the program runs natively"; FM_PROGRAM_SO=native; }
  export FM_PROGRAM_SO
fi
exec cargo run --release --locked -p api --bin funding-api
