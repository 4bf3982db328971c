#!/usr/bin/env bash
# The LMSR's property tests with new random seeds, run after run: the soak that looks for cases
# the test suite's fixed seed (scripts/test.sh) does not draw. Each run prints its seed; a
# failing run stops the soak with it (PROPTEST_RNG_SEED=<seed> cargo test -p lmsr replays it),
# and proptest records the shrunk case in programs/lmsr/tests/*.proptest-regressions, which the
# suite replays first from then on: commit that file with a fixed test for the case.
#
# SOAK_RUNS (default 20): how many runs.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${SOAK_RUNS:-20}"
cargo test --locked -p lmsr --no-run -q
for run in $(seq 1 "$runs"); do
  seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
  echo "soak: run $run of $runs, PROPTEST_RNG_SEED=$seed"
  if ! PROPTEST_RNG_SEED="$seed" cargo test --locked -p lmsr -q >"target/soak-lmsr.log" 2>&1; then
    cat target/soak-lmsr.log
    echo "soak: run $run failed; replay it with PROPTEST_RNG_SEED=$seed cargo test -p lmsr"
    exit 1
  fi
done
echo "soak: $runs runs passed"
