#!/usr/bin/env bash
# The Anchor program as a deployable SBPF v0 binary, target/deploy/funding_market.so, built from
# upstream Rust without Solana's platform-tools (which `cargo build-sbf` downloads from GitHub,
# unreachable here): a pinned nightly (LLVM 23) compiles std and the program for BPF, and
# sbpf-linker (crates.io) links the bitcode into an SBPF v0 shared object. The target spec and
# the std patch are in sbf/; docs/local-chain.md says how it works and what to check before
# deploying a binary built this way.
#
# Installs the nightly and sbpf-linker on first use (rustup and crates.io), then builds into
# target/sbf. Prints the path of the .so.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
nightly=nightly-2026-10-01 # rustc 1.101-nightly with LLVM 23, the LLVM sbpf-linker 0.2.6 links with
linker_version=0.2.6
target_dir="${CARGO_TARGET_DIR:-$root/target}"

if ! rustup run "$nightly" rustc --version >/dev/null 2>&1; then
  echo "build-sbf: installing $nightly" >&2
  rustup toolchain install "$nightly" --profile minimal --component rust-src --no-self-update >&2
fi
# (Outputs are captured before they are matched: `grep -q` stops reading at the first match, and
# under pipefail the writer's broken pipe would fail the test.)
components="$(rustup component list --toolchain "$nightly" --installed)"
case "$components" in *rust-src*) ;; *) rustup component add rust-src --toolchain "$nightly" >&2 ;; esac
linker="$(sbpf-linker --version 2>/dev/null || true)"
case "$linker" in
  *"sbpf-linker $linker_version"*) ;;
  *)
    echo "build-sbf: installing sbpf-linker $linker_version" >&2
    cargo "+$nightly" install "sbpf-linker@$linker_version" --locked --force >&2
    ;;
esac

# std for this target: rust-src with sbf/std.patch applied (MIN_ALIGN 8 for target_arch = "bpf";
# fixed RandomState keys, since an SBF program has no writable static for std's per-thread keys).
src="$(rustc "+$nightly" --print sysroot)/lib/rustlib/src/rust/library"
std_root="$target_dir/sbf-std"
stamp="$std_root/.patched-$(sha256sum sbf/std.patch | cut -c1-16)-$(rustc "+$nightly" --version | tr -cd '[:alnum:].-')"
if [ ! -f "$stamp" ]; then
  rm -rf "$std_root" && mkdir -p "$std_root"
  cp -r "$src" "$std_root/"
  (cd "$std_root/library" && patch -p1 --quiet < "$root/sbf/std.patch")
  touch "$stamp"
fi

# The target: upstream bpfel with std (os "zkvm", which std builds for; the Solana crates' own
# SBF code is switched on with --cfg target_os="solana"). RUSTC_BOOTSTRAP_SYNTHETIC_TARGET keeps
# std from being restricted_std for a JSON target; __CARGO_TESTS_ONLY_SRC_ROOT points cargo's
# build-std at the patched sources. A panic is the abort syscall (panic=immediate-abort): std's
# unwinding machinery would leave writable statics behind. Anchor's errors still log.
export RUSTC_BOOTSTRAP_SYNTHETIC_TARGET=1
export __CARGO_TESTS_ONLY_SRC_ROOT="$std_root/library"
export RUSTFLAGS='--cfg target_os="solana" -A explicit_builtin_cfgs_in_flags -C linker=sbpf-linker -Zunstable-options -C panic=immediate-abort -C relocation-model=static -C target-cpu=v2 -C target-feature=+allows-misaligned-mem-access -C link-arg=--arch=v0 -C link-arg=--llvm-args=--bpf-stack-size=4096 -C link-arg=--llvm-args=--disable-movsx -C link-arg=--llvm-args=--disable-ldsx'
cargo "+$nightly" build --release --locked -Zjson-target-spec --target "$root/sbf/bpfel-solana.json" \
  -Zbuild-std=std,panic_abort -Zbuild-std-features=compiler-builtins-mem \
  --target-dir "$target_dir/sbf" -p funding-market >&2

mkdir -p "$target_dir/deploy"
cp "$target_dir/sbf/bpfel-solana/release/libfunding_market.so" "$target_dir/deploy/funding_market.so"
echo "$target_dir/deploy/funding_market.so"
