#!/usr/bin/env bash
# Sets the machine up and runs the service on its embedded defaults (see .env.example).
# The service creates its database and applies the migrations itself.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f .env ] && set -a && . ./.env && set +a
export FM_LOG_FORMAT="${FM_LOG_FORMAT:-pretty}"
exec cargo run --release --locked -p api --bin funding-api
