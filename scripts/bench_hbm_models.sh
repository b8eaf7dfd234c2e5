#!/usr/bin/env bash
# Host speed of whole workloads in the two memory-system models (detailed:
# hbm.model = dma.model = detailed, the per-pseudo-channel and per-request
# reference; fast: both fast, the default), timing mode, and a check that both
# give identical stats JSON. Per workload and model:
# simulated cycles, HBM bytes moved, CPU seconds of the simulation (tpusim's
# own "host time", which excludes loading the program), M simulated cycles per
# CPU second and GB of simulated HBM traffic per CPU second. Each run is
# repeated --repeat times and the fastest kept (the machines are shared).
#
#   scripts/bench_hbm_models.sh [--build-dir DIR] [--chip v5e] [--repeat N] [WORKLOAD ...]
#
# WORKLOAD: mm1024 / mm2048 (library bf16 matmul, M = N = K, via tpu-kernel)
# or a trace name under traces/ without .hlo (via tpuc). Default: mm1024
# mm2048 llama_tiny_prefill llama2_7b_layer_decode_2048.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$src/build"
chip=v5e
repeat=1
workloads=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --chip) chip="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "bench_hbm_models.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) workloads+=("$1"); shift ;;
  esac
done
[[ ${#workloads[@]} -gt 0 ]] || workloads=(mm1024 mm2048 llama_tiny_prefill llama2_7b_layer_decode_2048)
for tool in tpusim tpuc tpu-kernel; do
  [[ -x "$build/bin/$tool" ]] || { echo "no $build/bin/$tool (ninja -C $build $tool)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

printf '| workload | model | cycles | HBM MB | CPU s | M cycles / CPU s | GB / CPU s |\n'
printf '|---|---|---|---|---|---|---|\n'
for w in "${workloads[@]}"; do
  prog="$work/$w.tpuprog"
  case "$w" in
    mm*) n=${w#mm}
         "$build/bin/tpu-kernel" matmul --m "$n" --n "$n" --k "$n" --chip "$chip" -o "$prog" > /dev/null ;;
    *) "$build/bin/tpuc" "$src/traces/$w.hlo" -o "$prog" --chip "$chip" > /dev/null ;;
  esac
  for model in detailed fast; do
    best=""
    for ((i = 0; i < repeat; i++)); do
      "$build/bin/tpusim" "$prog" --chip "$chip" --mode timing --quiet --set hbm.model=$model \
        --set dma.model=$model \
        --stats "$work/$w.$model.json" > "$work/run.txt" 2>&1 ||
        { cat "$work/run.txt" >&2; exit 1; }
      cpu=$(sed -n 's/.*host time.* s wall, \([0-9.]*\) s CPU.*/\1/p' "$work/run.txt")
      if [[ -z "$best" ]] || python3 -c "import sys; sys.exit(0 if $cpu < $best else 1)"; then best=$cpu; fi
    done
    python3 - "$work/$w.$model.json" "$w" "$model" "$best" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
cpu = max(float(sys.argv[4]), 1e-3)
cycles = st["total_cycles"]
h = st["hbm"]
moved = h["bytes_read"] + h["bytes_written"]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {cycles:,} | {moved / 1e6:,.1f} | {cpu:.3f} | "
      f"{cycles / cpu / 1e6:.2f} | {moved / cpu / 1e9:.2f} |")
PY
  done
  python3 - "$work/$w.detailed.json" "$work/$w.fast.json" "$w" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for j in (a, b):
    j["chip_config"]["hbm"].pop("model", None)
    j["chip_config"]["dma"].pop("model", None)
if a != b:
    sys.exit(f"bench_hbm_models.sh: {sys.argv[3]}: the two models differ")
PY
done
echo "(stats JSON identical in both models for every workload)" >&2
