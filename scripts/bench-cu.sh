#!/usr/bin/env bash
# Compute units on real SBF (a benchmark, not CI): the LMSR math alone (bench/sbf-lmsr, built
# for bpfel-unknown-none with a nightly toolchain and sbpf-linker), then every instruction of the
# program's SBF binary (scripts/build-sbf.sh), both in solana-program-test's SBF VM. Installs
# both tools on first use (rustup reaches its server).
set -euo pipefail
cd "$(dirname "$0")/.."
NIGHTLY=nightly-2026-10-01
# build-sbf.sh installs the nightly and sbpf-linker when missing.
bash scripts/build-sbf.sh >/dev/null
(cd bench/sbf-lmsr && cargo +"$NIGHTLY" build --release --target bpfel-unknown-none \
  -Zbuild-std=core,alloc -Zbuild-std-features=compiler-builtins-mem)
built=bench/sbf-lmsr/target/bpfel-unknown-none/release/liblmsr_sbf_bench.so
so=bench/sbf-lmsr/target/bpfel-unknown-none/release/lmsr_sbf_bench.so
cp "$built" "$so"
[ -f "$so" ] || { echo "no $so"; exit 1; }
SBF_OUT_DIR="$PWD/$(dirname "$so")" RUST_LOG=error \
  cargo test -p funding-market --test compute_units lmsr_compute_units -- --ignored --nocapture 2>&1 | grep -E "CU|test result"
# Every instruction of the program's SBF binary, whole.
program_dir="$(dirname "$(bash scripts/build-sbf.sh 2>/dev/null)")"
SBF_OUT_DIR="$program_dir" RUST_LOG=error \
  cargo test -p funding-market --test compute_units program_compute_units -- --ignored --nocapture 2>&1 | grep -E "^\||test result"
