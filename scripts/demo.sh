#!/usr/bin/env bash
# Sets up, builds and runs the main job on the default workload: assembles the
# sample tiled matmul and simulates it on the v5e preset, printing the summary
# (cycles, simulated time, MXU utilization, HBM bandwidth, stalls, per-op table).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" --build-dir "$root/build" >&2
bin="$root/build/bin"
sample="$root/isa/samples/matmul_tile.s"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin/tpu-as" "$sample" -o "$out/matmul_tile.tpuprog"
"$bin/tpusim" "$out/matmul_tile.tpuprog" --chip v5e --stats "$out/stats.json" --quiet
