#!/usr/bin/env bash
# The whole test suite: sets the machine up, then every crate's tests against real Postgres
# (each #[sqlx::test] gets a fresh database) and Redis, then the contract checks against the
# live service (scripts/contract.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's start and the seconds spent so far: where a slow run's time went.
step() { echo "test.sh: $* ($(date -u +%T), ${SECONDS} s in)"; }
step setup
bash scripts/setup.sh
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export RUST_LOG="${RUST_LOG:-warn}"
# Property tests draw from a fixed seed, so a run is repeatable and a failure is the code's, not
# the draw's; scripts/soak-lmsr.sh runs them with new seeds.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261128}"
# The code as rustfmt.toml formats it (before anything builds: a format slip fails in seconds).
installed="$(rustup component list --installed 2>/dev/null || true)"
for component in rustfmt clippy; do
  case "$installed" in *"$component-"*) ;; *) rustup component add "$component" ;; esac
done
step fmt
cargo fmt --all --check
step "workspace tests"
cargo test --workspace --locked "$@"
# The live service against its OpenAPI document: the docs page in Chromium, then the contract
# fuzzing (skipped when a filter was given, to run a few Rust tests quickly).
if [ "$#" -eq 0 ]; then
  # Every crate and target clippy-clean (a lint is allowed only on its line, with a reason).
  step clippy
  cargo clippy --workspace --all-targets --locked -- -D warnings
  # The program crates with the Rust anchor build uses (platform-tools' 1.89.0).
  step "program toolchain"
  bash scripts/check-program-toolchain.sh
  # The program as it deploys: its SBF binary (scripts/build-sbf.sh), the program's tests run
  # again against it, and the embedded chain's logs of a buy held against solana-program-test's.
  # (`--workspace --test <name>`, not `-p <crate>`: one package alone resolves other features
  # and rebuilds hundreds of crates; the names are unique in the workspace.)
  step "SBF build and tests"
  sbf_out_dir="$(dirname "$(bash scripts/build-sbf.sh)")"
  SBF_OUT_DIR="$sbf_out_dir" cargo test --locked --workspace --test program
  SBF_OUT_DIR="$sbf_out_dir" cargo test --locked --workspace --test embedded a_buy_logs_what_solana_program_test_logs_for_it
  step contract
  bash scripts/contract.sh
  # The Anchor TypeScript suite (tests/ts) against the embedded chain.
  step "anchor TS"
  bash scripts/anchor-ts.sh
fi
step done
