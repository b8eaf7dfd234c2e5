#!/usr/bin/env bash
# Sets up, builds and runs every test: the full ctest suite in build/, then the
# sanitizer build (ASan + UBSan) of the tests labelled "sanitize" in build-asan/.
#   scripts/test.sh [--werror]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
extra=()
[ "${1:-}" = "--werror" ] && extra+=(--werror)
jobs=$(nproc)

# Each phase's wall time, so a slow CI run shows where its minutes went.
phase() { echo "test.sh: $1 done at ${SECONDS}s" >&2; }

"$root/scripts/setup.sh" --build-dir "$root/build" "${extra[@]}"
phase "set-up and build"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"
phase "ctest"

# Sanitizer configuration: only the targets the "sanitize" tests need.
"$root/scripts/setup.sh" --build-dir "$root/build-asan" --sanitize "${extra[@]}" --no-build
cmake --build "$root/build-asan" --target tpusim_sanitize_targets
phase "sanitizer build"
san_log="$root/build-asan/sanitize-tests.log"
if ! ASAN_OPTIONS=detect_leaks=1 ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" -L sanitize 2>&1 | tee "$san_log"; then
  # LeakSanitizer's tracer occasionally crashes ("Tracer caught signal 11") at exit in a process
  # that ran SystemC coroutines, after every assertion passed. Rerun the failed tests once,
  # visibly; a real failure fails again. A timeout is not rerun: it would take as long again.
  if grep -q '\*\*\*Timeout' "$san_log"; then
    echo "test.sh: a sanitizer test timed out; not rerunning" >&2
    exit 1
  fi
  echo "test.sh: rerunning the failed sanitizer tests once" >&2
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir "$root/build-asan" --output-on-failure --rerun-failed
fi
phase "sanitizer tests"
