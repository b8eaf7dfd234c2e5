#!/usr/bin/env bash
# Simulation speed of the MXU: the fast C++ model (timing-only and functional)
# against the Verilated RTL, on the same dense matmul command stream, plus the
# time to build the RTL model (Verilator + C++ compile), per array size.
#
#   scripts/bench_mxu.sh [--build-root DIR] [--jobs J] [SIZES...]     (default sizes: 16 32)
#
# Each size gets its own build tree DIR/rtl-N configured with
# -DTPUSIM_RTL_SIZES=N -DTPUSIM_RTL_TRACE=OFF, so the build time printed is the
# cost of that one array. A 128x128 array takes several minutes: run it alone.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
root="$src/build-mxu/bench"
jobs=2
sizes=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-root) root="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) sizes+=("$1"); shift ;;
  esac
done
[[ ${#sizes[@]} -gt 0 ]] || sizes=(16 32)

for n in "${sizes[@]}"; do
  dir="$root/rtl-$n"
  echo "== N=$n: configure + build in $dir"
  mkdir -p "$root"
  start=$(date +%s)
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DTPUSIM_RTL_SIZES="$n" -DTPUSIM_RTL_TRACE=OFF > "$dir.configure.log" 2>&1 ||
    { echo "configure failed: see $dir.configure.log"; exit 1; }
  mid=$(date +%s)
  ninja -C "$dir" -j"$jobs" mxu-bench > "$dir.build.log" 2>&1 ||
    { echo "build failed: see $dir.build.log"; exit 1; }
  end=$(date +%s)
  echo "N=$n build: configure (incl. verilator) $((mid - start)) s, compile $((end - mid)) s"
  "$dir/bin/mxu-bench" --size "$n"
done
