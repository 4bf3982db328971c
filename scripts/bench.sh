#!/usr/bin/env bash
# Benchmarks (numbers in docs/performance.md). Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked -p lmsr --bench lmsr "$@"
