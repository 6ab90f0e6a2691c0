#!/usr/bin/env bash
# A profile-guided release build of simbench, for long grid sweeps: build an instrumented
# binary, run it on every shipped world (the training), then build again with the profile so the
# compiler lays out the hot paths as the runs take them. Outputs are the same as the plain
# release build's (no floating-point setting changes; `--check` compares them); only speed
# differs (docs/performance.md, "Profile-guided build").
#
#   scripts/build-pgo.sh [--check] [--static] [OUT]   # OUT defaults to target/pgo/simbench
#
# --static links the C library into the binary (Linux with glibc only): no dynamic loader at
# start, a third of a millisecond less per command here (docs/performance.md). simbench looks
# up no host names (`serve --bind` takes an address), so the binary loads nothing at run time.
#
# Needs llvm-profdata of the LLVM major version rustc was built with (`rustc -vV`): Debian's
# `llvm-N` package, or `rustup component add llvm-tools`; LLVM_PROFDATA names it explicitly.
set -euo pipefail
cd "$(dirname "$0")/.."

check=""
static=""
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1 ;;
    --static) static=1 ;;
    *) break ;;
  esac
  shift
done
out=${1:-target/pgo/simbench}

# A static build names its target, so that the flag reaches simbench and not the build's own
# procedural macros (which must stay dynamic libraries); its binaries then sit one folder deeper.
target=()
subdir=""
static_flags=""
if [ -n "$static" ]; then
  host=$(rustc -vV | sed -n 's/^host: //p')
  case "$host" in
    *-linux-gnu) ;;
    *) echo "error: --static needs Linux with glibc (this host is $host)" >&2; exit 2 ;;
  esac
  target=(--target "$host")
  subdir="$host/"
  static_flags="-Ctarget-feature=+crt-static"
fi

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
RUSTFLAGS="${RUSTFLAGS:-} $static_flags -Cprofile-generate=$work/profiles" \
  cargo build --release --quiet --target-dir "$work/generate" "${target[@]}"

# The training: the built-in world's default comparison, every shipped world's, and the
# reference's replay, so no one world or algorithm decides the layout.
echo "pgo: training runs" >&2
trained=$work/generate/${subdir}release/simbench
"$trained" run --quiet --json "$tmp/t.json"
"$trained" run --rng reference --quiet --json "$tmp/t.json"
for world in scenarios/*.toml; do
  "$trained" run "$world" --seeds 2 --quiet --json "$tmp/t.json"
done
"$profdata" merge -o "$work/merged.profdata" "$work/profiles"

echo "pgo: optimized build" >&2
RUSTFLAGS="${RUSTFLAGS:-} $static_flags -Cprofile-use=$work/merged.profdata" \
  cargo build --release --quiet --target-dir "$work/use" "${target[@]}"
cp "$work/use/${subdir}release/simbench" "$out"
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
