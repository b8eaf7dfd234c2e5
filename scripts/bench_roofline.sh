#!/usr/bin/env bash
# Roofline goals of issue 17: every row of its goal table measured the way the
# issue defines it, printed as now against goal.
#
#   scripts/bench_roofline.sh [--build-dir DIR] [--out DIR] [--quick] [ROW ...]
#
# ROW: tiny prefill decode decode-int8 decode-int8-aqt v6e-matmul flash hbm tpuc-matmul
# (default: all). --quick skips the slow parts (the 7B prefill and the 8192^3 HLO dot, each
# minutes of host time). Outputs (stats, profiles, programs) stay in --out
# (default bench-roofline-out/). All rows run on v5e in timing mode unless named.
#
# Definitions (issue 17, "Goals"):
#   tiny prefill       simulated time / max(HLO FLOPs / MXU peak, parameter bytes / HBM peak)
#   7B prefill         simulated time / (HLO FLOPs / MXU peak)
#   7B decode (bf16)   simulated time / (weight bytes / HBM peak)
#   7B decode int8     the same with the s8 weights and their scales; also against bf16's time
#   7B decode int8 aqt the same weights, activations quantized per row in the HLO (s8 x s8 dots
#                      on the MXU's packed int8 mode, tpu-tracegen --int8-activations)
#   v6e matmul 4096^3  the library matmul (tpu-kernel, default blocks: tpuc's tiling model,
#                      2048x1024x4096 on v6e): MXU utilization
#   flash attention    head_dim 128, one head, blocks (512, 512): useful FLOPs (4 S^2 d,
#                      causal S(S+1)/2 pairs) / (MXU peak x cycles)
#   HBM 4 streams      tpusim-hbm-bench dma-stream-all-queues (64 MiB): % of the HBM peak
#   tpuc matmul        an HLO bf16 dot N^3 (f32 result) through tpuc: FLOPs / (peak x cycles)
# HLO FLOPs are the profile's cost-table count (what XProf counts); weight bytes are
# the input buffers named params[...] (tpu-objdump --buffers).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$src/build"
out=bench-roofline-out
quick=0
rows=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    -*) echo "bench_roofline.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) rows+=("$1"); shift ;;
  esac
done
[[ ${#rows[@]} -gt 0 ]] || rows=(tiny prefill decode decode-int8 decode-int8-aqt v6e-matmul flash hbm tpuc-matmul)
for tool in tpuc tpusim tpu-kernel tpu-objdump tpusim-hbm-bench; do
  [[ -x "$build/bin/$tool" ]] || { echo "bench_roofline.sh: no $build/bin/$tool (build it)" >&2; exit 1; }
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
chips="$src/sim/chips"
py=python3

# Weight bytes: input buffers named params[...].
weight_bytes() {
  "$build/bin/tpu-objdump" --buffers "$1" | $py -c '
import re, sys
size = {"f32": 4, "bf16": 2, "s32": 4, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "pred": 1}
total = 0
for line in sys.stdin:
    m = re.match(r"\.buffer \"?(params[^,]*?)\"?, shape=\[([^\]]*)\], dtype=(\w+),.*role=input", line)
    if m:
        n = 1
        for d in m.group(2).split(","):
            if d.strip():
                n *= int(d)
        total += n * size[m.group(3)]
print(total)'
}

# Compiles and runs an HLO file in timing mode with a profile; echoes "seconds flops
# weight_bytes mxu_peak_flops hbm_peak_bytes" (per second).
run_hlo() {
  local hlo="$1" name="$2" chip="$3"
  local prog="$out/$name.$chip.tpuprog" prof="$out/$name.$chip.prof"
  "$build/bin/tpuc" "$hlo" -o "$prog" --chip "$chip" > "$out/$name.$chip.tpuc.txt"
  rm -rf "$prof"
  "$build/bin/tpusim" "$prog" --chip "$chip" --mode timing --quiet --profile "$prof" \
    > "$out/$name.$chip.sim.txt" 2>&1
  local w
  w=$(weight_bytes "$prog")
  $py - "$prof/profile.json" "$w" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
o, p = j["overview"], j["peaks"]
print(o["step_seconds"], o["flops"], sys.argv[2], p["mxu_flops_per_second"] * p["cores"],
      p["hbm_bytes_per_second"] * p["cores"])
EOF
}

table=""
row() { table+="$(printf '| %s | %s | %s |' "$1" "$2" "$3")"$'\n'; printf '%-58s %-34s %s\n' "$1" "$2" "$3"; }
skip() { row "$1" "(skipped: $2)" "$3"; }

for r in "${rows[@]}"; do
  echo "== $r" >&2
  case "$r" in
    tiny)
      read -r t f w mp hp < <(run_hlo "$src/traces/llama_tiny_prefill.hlo" tiny_prefill v5e)
      row "tiny prefill (default workload) vs max(MXU, HBM bound)" \
        "$($py -c "t,f,w,mp,hp=$t,$f,$w,$mp,$hp; b=max(f/mp,w/hp); print('%.2fx (%.3f ms; bound %.3f ms)'%(t/b,t*1e3,b*1e3))")" "<= 2.0x" ;;
    prefill)
      if [[ $quick -eq 1 ]]; then skip "7B layer prefill 2048 vs compute bound" "--quick" "<= 1.4x"; continue; fi
      read -r t f w mp hp < <(run_hlo "$src/traces/llama2_7b_layer_prefill_2048.hlo" prefill_7b v5e)
      row "7B layer prefill 2048 vs compute bound" \
        "$($py -c "t,f,mp=$t,$f,$mp; b=f/mp; print('%.2fx (%.3f ms; bound %.3f ms)'%(t/b,t*1e3,b*1e3))")" "<= 1.4x" ;;
    decode)
      read -r t f w mp hp < <(run_hlo "$src/traces/llama2_7b_layer_decode_2048.hlo" decode_7b v5e)
      echo "$t" > "$out/decode_bf16_seconds"
      row "7B layer decode 2048 vs HBM bound" \
        "$($py -c "t,w,hp=$t,$w,$hp; b=w/hp; print('%.2fx (%.3f ms; bound %.3f ms)'%(t/b,t*1e3,b*1e3))")" "<= 1.2x" ;;
    decode-int8)
      read -r t f w mp hp < <(run_hlo "$src/traces/llama2_7b_layer_decode_2048_int8.hlo" decode_7b_int8 v5e)
      bf=$(cat "$out/decode_bf16_seconds" 2>/dev/null || echo 0)
      row "7B layer decode 2048 int8 vs its HBM bound" \
        "$($py -c "t,w,hp,bf=$t,$w,$hp,$bf; b=w/hp; print('%.2fx (%.3f ms; bound %.3f ms%s)'%(t/b,t*1e3,b*1e3, '; bf16 %.3f ms'%(bf*1e3) if bf else ''))")" \
        "<= 1.3x, faster than bf16" ;;
    decode-int8-aqt)
      read -r t f w mp hp < <(run_hlo "$src/traces/llama2_7b_layer_decode_2048_int8_aqt.hlo" decode_7b_int8_aqt v5e)
      bf=$(cat "$out/decode_bf16_seconds" 2>/dev/null || echo 0)
      row "7B layer decode 2048 int8, int8 activations (AQT) vs its HBM bound" \
        "$($py -c "t,w,hp,bf=$t,$w,$hp,$bf; b=w/hp; print('%.2fx (%.3f ms; bound %.3f ms%s)'%(t/b,t*1e3,b*1e3, '; bf16 %.3f ms'%(bf*1e3) if bf else ''))")" \
        "<= 1.3x, faster than bf16" ;;
    v6e-matmul)
      prog="$out/mm4096_v6e.tpuprog"
      "$build/bin/tpu-kernel" matmul --param m=4096 --param n=4096 --param k=4096 \
        --chips-dir "$chips" --chip v6e -o "$prog" > "$out/mm4096_v6e.txt" 2>&1
      "$build/bin/tpusim" "$prog" --chip v6e --mode timing --quiet --stats "$out/mm4096_v6e.json" > /dev/null
      row "v6e bf16 matmul 4096^3 (library), MXU utilization" \
        "$($py -c "import json; s=json.load(open('$out/mm4096_v6e.json')); print('%.1f%%'%(100*s['mxu_utilization']))")" ">= 85%" ;;
    flash)
      for s in 2048 8192; do
        for causal in false true; do
          prog="$out/fa_${s}_$causal.tpuprog"
          "$build/bin/tpu-kernel" flash_attention --param bh=1 --param seq_q="$s" --param seq_k="$s" \
            --param head_dim=128 --param block_q=512 --param block_k=512 --param causal="$causal" \
            --chips-dir "$chips" -o "$prog" > "$out/fa.txt" 2>&1
          "$build/bin/tpusim" "$prog" --chip v5e --mode timing --quiet --stats "$out/fa_${s}_$causal.json" > /dev/null
          goal=">= 50%"; [[ $causal == true ]] && goal=">= 40%"
          row "flash attention seq $s head_dim 128$([[ $causal == true ]] && echo ' causal'), useful MXU" \
            "$($py - "$out/fa_${s}_$causal.json" "$s" "$causal" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))
s, causal, d = int(sys.argv[2]), sys.argv[3] == "true", 128
pairs = s * (s + 1) / 2 if causal else s * s
cfg = st["chip_config"]
peak = cfg["mxu"]["count"] * cfg["mxu"]["size"] ** 2 * 2
print("%.1f%%" % (100 * 4 * pairs * d / (st["total_cycles"] * peak)))
EOF
)" "$goal"
        done
      done ;;
    hbm)
      for chip in v5e v6e v4; do
        pct=$("$build/bin/tpusim-hbm-bench" --chip "$chip" --bytes $((64 << 20)) --markdown \
          --pattern dma-stream-all-queues | awk -F'|' '{gsub(/ /, "", $6); print $6}')
        row "HBM, concurrent DMA streams (dma-stream-all-queues), $chip" "$pct of peak" ">= 90%"
      done ;;
    tpuc-matmul)
      for n in 4096 8192; do
        goal=">= 90%"; [[ $n == 8192 ]] && goal=">= 95%"
        if [[ $quick -eq 1 && $n == 8192 ]]; then skip "v5e bf16 matmul 8192^3 through tpuc" "--quick" "$goal"; continue; fi
        hlo="$out/dot$n.hlo"
        cat > "$hlo" <<EOF
HloModule dot$n

ENTRY main {
  x = bf16[$n,$n]{1,0} parameter(0)
  y = bf16[$n,$n]{1,0} parameter(1)
  ROOT d = f32[$n,$n]{1,0} dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
EOF
        read -r t f w mp hp < <(run_hlo "$hlo" "dot$n" v5e)
        row "v5e bf16 matmul ${n}^3 through tpuc (HLO dot), MXU utilization" \
          "$($py -c "print('%.1f%%'%(100*$f/$mp/$t))")" "$goal"
      done ;;
    *) echo "bench_roofline.sh: unknown row '$r'" >&2; exit 2 ;;
  esac
done

echo
echo "| workload (v5e unless named) | now | goal |"
echo "|---|---|---|"
printf '%s' "$table"
echo "(measured $(date -u +%Y-%m-%d); outputs in $out)"
