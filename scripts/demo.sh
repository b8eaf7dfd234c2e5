#!/usr/bin/env bash
# Sets up, builds and runs the main job on the default workload: the tiny
# Llama-style model's prefill (traces/llama_tiny_prefill.hlo: d_model 1024,
# 8 heads, 8 layers, d_ff 2048, 256 tokens) compiled by tpuc and simulated on
# the v5e preset in timing-only mode, printing the summary (cycles, simulated
# time, MXU utilization, HBM bandwidth, stalls), the top HLO ops and the
# profiler's overview, and writing the profile (docs/profiler.md) to
# build/demo-profile: report.html to open in a browser, profile.json for
# tpu-prof, trace.json for ui.perfetto.dev.
#
#   scripts/demo.sh [--chip NAME] [--mode timing|functional] [extra tpusim options]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" --build-dir "$root/build" >&2
bin="$root/build/bin"
workload="$root/traces/llama_tiny_prefill.hlo"
chip=v5e
mode=timing
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --chip) chip="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
profile="$root/build/demo-profile"
echo "demo: compiling and simulating $(basename "$workload") on $chip ($mode mode)" >&2
# --force: the directory holds the previous demo's profile, which this one replaces.
"$bin/tpusim" "$workload" --chip "$chip" --mode "$mode" --profile "$profile" --force \
  "${extra[@]+"${extra[@]}"}"
echo "demo: the report is $profile/report.html (open it in a browser); tpu-prof $profile prints the op profile" >&2
