#!/usr/bin/env bash
# Sets up, builds and runs the main job on the default workload.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" --build-dir "$root/build" >&2
bin="$root/build/bin"
sample="$root/isa/samples/matmul_tile.s"
out=$(mktemp -d)
"$bin/tpu-as" "$sample" -o "$out/sample.tpuprog"
"$bin/tpu-objdump" "$out/sample.tpuprog"
