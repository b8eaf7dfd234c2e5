#!/usr/bin/env bash
# Regenerates testbench/regression/sim/cycles.golden.json (the cycle goldens of
# every regression program on every chip preset). Golden files are never
# edited by hand: change the simulator or a preset, run this, review the diff.
# Usage: scripts/update_goldens.sh [--build-dir DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build"
if [[ "${1:-}" == "--build-dir" ]]; then build=$2; fi
ninja -C "$build" tpusim >&2
python3 "$root/testbench/regression/sim/run_goldens.py" --tpusim "$build/bin/tpusim" --update
git -C "$root" --no-pager diff --stat -- testbench/regression/sim/cycles.golden.json || true
