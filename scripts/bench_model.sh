#!/bin/bash
# Model benchmark: HLO traces compiled by tpuc and simulated on a chip preset.
#
#   scripts/bench_model.sh [--build DIR] [--chip v5e] [--out DIR] [--functional] [MODEL ...]
#
# MODEL is a trace name under traces/ without .hlo (default: llama2_7b_layer_prefill_2048,
# llama2_7b_layer_decode_2048, llama_tiny_prefill). For each: tpuc compile time, then a
# timing-only run (and a functional one with --functional): simulated time, MXU utilization,
# HBM bandwidth and its share of the peak, host time. For a decode trace also the HBM-bound
# lower bound = weight bytes (input buffers named params[...]) / peak HBM bandwidth, and the
# ratio of simulated time to it. Stats JSON and summaries are kept in --out (default
# bench-model-out/). Numbers go to docs/performance.md by hand.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
chip=v5e
out=bench-model-out
functional=0
models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --chip) chip=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --functional) functional=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "bench_model.sh: unknown option $1" >&2; exit 1 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || models=(llama2_7b_layer_prefill_2048 llama2_7b_layer_decode_2048 llama_tiny_prefill)
for tool in tpuc tpusim tpu-objdump; do
  [ -x "$build/bin/$tool" ] || { echo "bench_model.sh: $build/bin/$tool is missing (build it, or pass --build DIR)" >&2; exit 1; }
done
mkdir -p "$out"

now() { date +%s.%N; }

# Prints "name value" lines from a stats JSON (python3 standard library only).
summarize() {
  python3 - "$1" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
h = j["hbm"]
print("cycles %d" % j["total_cycles"])
print("simulated_ms %.4f" % (j["simulated_seconds"] * 1e3))
print("mxu_utilization_pct %.2f" % (100 * j["mxu_utilization"]))
print("hbm_gbps %.2f" % (h["achieved_bytes_per_second"] / 1e9))
print("hbm_utilization_pct %.2f" % (100 * h["utilization"]))
print("hbm_peak_bps %.6g" % h["peak_bytes_per_second"])
EOF
}

# Bytes of the input buffers whose names start with params (the weights).
weight_bytes() {
  "$build/bin/tpu-objdump" --buffers "$1" | python3 -c '
import re, sys
size = {"f32": 4, "bf16": 2, "s32": 4, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "pred": 1}
total = 0
for line in sys.stdin:
    m = re.match(r"\.buffer \"?(params[^,]*?)\"?, shape=\[([^\]]*)\], dtype=(\w+),.*role=input", line)
    if not m:
        continue
    n = 1
    for d in m.group(2).split(","):
        if d.strip():
            n *= int(d)
    total += n * size[m.group(3)]
print(total)'
}

printf '%-30s %10s %12s %12s %8s %10s %8s %10s\n' model mode "compile s" "sim ms" "MXU %" "HBM GB/s" "HBM %" "host s"
for model in "${models[@]}"; do
  hlo="$root/traces/$model.hlo"
  [ -f "$hlo" ] || { echo "bench_model.sh: no trace $hlo" >&2; exit 1; }
  prog="$out/$model.$chip.tpuprog"
  t0=$(now)
  "$build/bin/tpuc" "$hlo" -o "$prog" --chip "$chip" --print-stats > "$out/$model.tpuc.txt"
  compile=$(python3 -c "print($(now) - $t0)")
  modes=(timing)
  [ $functional -eq 1 ] && modes+=(functional)
  for mode in "${modes[@]}"; do
    stats="$out/$model.$chip.$mode.json"
    t0=$(now)
    "$build/bin/tpusim" "$prog" --chip "$chip" --mode "$mode" --quiet --stats "$stats" > "$out/$model.$chip.$mode.txt"
    host=$(python3 -c "print($(now) - $t0)")
    declare -A s=()
    while read -r k v; do s[$k]=$v; done < <(summarize "$stats")
    printf '%-30s %10s %12.2f %12s %8s %10s %8s %10.2f\n' "$model" "$mode" "$compile" \
      "${s[simulated_ms]}" "${s[mxu_utilization_pct]}" "${s[hbm_gbps]}" "${s[hbm_utilization_pct]}" "$host"
    if [[ $model == *decode* && $mode == timing ]]; then
      w=$(weight_bytes "$prog")
      python3 -c "
w, peak, sim = $w, ${s[hbm_peak_bps]}, ${s[simulated_ms]} / 1e3
bound = w / peak
print('  %s: weights %.1f MB; HBM-bound lower bound %.4f ms at %.1f GB/s; simulated / bound = %.2f'
      % ('$model', w / 1e6, bound * 1e3, peak / 1e9, sim / bound))"
    fi
    unset s
  done
done
echo "(compile = tpuc wall seconds; host = tpusim wall seconds; details in $out/)"
