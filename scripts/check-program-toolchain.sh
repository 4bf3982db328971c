#!/usr/bin/env bash
# The program crates with the Rust `anchor build` / `cargo build-sbf` compile them with:
# platform-tools v1.52–v1.56 ship Rust 1.89.0, whose cargo refuses a package that declares a newer
# rust-version and whose compiler must accept the program's code and every dependency version in
# Cargo.lock. Installs that toolchain with rustup when missing, then checks programs/lmsr and
# programs/funding-market with it (the lockfile's versions, --locked) and runs lmsr's tests.
#
# The program's own tests run on the workspace's toolchain: their runtime, solana-program-test
# 4.0, builds solana-accounts-db 4.0, which needs Rust 1.91 (a const PathBuf::new).
set -euo pipefail
cd "$(dirname "$0")/.."
toolchain=1.89.0
if ! rustup run "$toolchain" rustc --version >/dev/null 2>&1; then
  echo "check-program-toolchain: installing Rust $toolchain"
  rustup toolchain install "$toolchain" --profile minimal --no-self-update
fi
cargo "+$toolchain" check --locked -p lmsr -p funding-market
cargo "+$toolchain" test --locked -p lmsr
echo "check-program-toolchain: programs/lmsr and programs/funding-market build with Rust $toolchain"
