#!/usr/bin/env bash
# A profile-guided release build of simbench, for long grid sweeps: build an instrumented
# binary, run it on every shipped world (the training), then build again with the profile so the
# compiler lays out the hot paths as the runs take them. Outputs are the same as the plain
# release build's (no floating-point setting changes; `--check` compares them); only speed
# differs (docs/performance.md, "Profile-guided build").
#
#   scripts/build-pgo.sh [--check] [OUT]     # OUT defaults to target/pgo/simbench
#
# Needs llvm-profdata of the LLVM major version rustc was built with (`rustc -vV`): Debian's
# `llvm-N` package, or `rustup component add llvm-tools`; LLVM_PROFDATA names it explicitly.
set -euo pipefail
cd "$(dirname "$0")/.."

check=""
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
out=${1:-target/pgo/simbench}

major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
find_profdata() {
  local c
  for c in "${LLVM_PROFDATA:-}" "llvm-profdata-$major" "/usr/lib/llvm-$major/bin/llvm-profdata" \
      "$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata" \
      llvm-profdata; do
    [ -n "$c" ] || continue
    command -v "$c" >/dev/null 2>&1 || continue
    # A profile written by one LLVM major cannot be read by another.
    if "$c" --version 2>/dev/null | grep -q "LLVM version $major\."; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}
if ! profdata=$(find_profdata); then
  echo "error: no llvm-profdata of LLVM $major (the version rustc uses) found" >&2
  echo "hint: apt-get install llvm-$major, or rustup component add llvm-tools, or set LLVM_PROFDATA" >&2
  exit 2
fi

work=$PWD/target/pgo
rm -rf "$work/profiles"
mkdir -p "$work/profiles" "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "pgo: instrumented build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$work/profiles" \
  cargo build --release --quiet --target-dir "$work/generate"

# The training: the built-in world's default comparison, every shipped world's, and the
# reference's replay, so no one world or algorithm decides the layout.
echo "pgo: training runs" >&2
trained=$work/generate/release/simbench
"$trained" run --quiet --json "$tmp/t.json"
"$trained" run --rng reference --quiet --json "$tmp/t.json"
for world in scenarios/*.toml; do
  "$trained" run "$world" --seeds 2 --quiet --json "$tmp/t.json"
done
"$profdata" merge -o "$work/merged.profdata" "$work/profiles"

echo "pgo: optimized build" >&2
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$work/merged.profdata" \
  cargo build --release --quiet --target-dir "$work/use"
cp "$work/use/release/simbench" "$out"
echo "pgo: wrote $out" >&2

if [ -n "$check" ]; then
  # The same JSON as the plain release build, but for wall times, on every shipped world.
  cargo build --release --quiet
  if ! scripts/same_outputs.sh target/release/simbench "$out" >&2; then
    echo "pgo: the profile-guided build's reports differ from the plain build's" >&2
    exit 1
  fi
  echo "pgo: the same reports as the plain release build on every shipped world" >&2
fi
