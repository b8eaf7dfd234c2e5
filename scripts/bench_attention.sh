#!/usr/bin/env bash
# Attention kernels on the v5e preset (kernels/lib/FlashAttention.h,
# DecodeAttention.h): compiled by tpu-kernel, run by tpusim.
#
#   scripts/bench_attention.sh [--build-dir DIR] [--heads N] [--seqs "2048 8192"]
#                              [--block-q BQ] [--block-k BK] [--decode-lens "2048 8192"]
#
# Flash attention (head_dim 128, bf16 in, bf16 out, N heads, default 1), causal
# and not, timing-only mode: simulated time, useful MXU utilization (the
# attention FLOPs 4*S*S*d per head, halved plus the diagonal for causal, over
# the MXU peak of the elapsed cycles) next to the simulator's MXU busy fraction,
# and host time. Decode attention (batch 4, 8 kv heads, GQA group 4, head_dim
# 128, every sequence at the given length), contiguous (block_k 2048) and paged
# (256-position pages), in FUNCTIONAL mode (the lengths and the page table are
# SMEM data the index maps read, and timing-only mode has no data): the K and V
# bytes it must read over the simulated time, against the 819.2 GB/s HBM peak.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$src/build"
heads=1
seqs="2048 8192"
bq=512
bk=512
decode_lens="2048 4096 8192"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --heads) heads="$2"; shift 2 ;;
    --seqs) seqs="$2"; shift 2 ;;
    --block-q) bq="$2"; shift 2 ;;
    --block-k) bk="$2"; shift 2 ;;
    --decode-lens) decode_lens="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "bench_attention.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for tool in tpu-kernel tpusim; do
  [[ -x "$build/bin/$tool" ]] || { echo "no $build/bin/$tool: build it (ninja -C $build $tool)" >&2; exit 1; }
done
py=/usr/bin/python3
[[ -x $py ]] || py=python3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chips="$src/sim/chips"

# Seconds of wall time of a command (its output goes to $work/last.log).
timed() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > "$work/last.log" 2>&1 || { cat "$work/last.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}

echo "flash attention, v5e, timing-only: heads=$heads head_dim=128 blocks ($bq, $bk), bf16 out"
printf '%-6s %-7s %12s %11s %9s %9s %9s %9s\n' seq causal cycles sim_us useful% mxu_busy% host_s compile_s
for s in $seqs; do
  for causal in false true; do
    prog="$work/fa_${s}_$causal.tpuprog"
    ct=$(timed "$build/bin/tpu-kernel" flash_attention --param bh="$heads" --param seq_q="$s" \
      --param seq_k="$s" --param head_dim=128 --param block_q="$bq" --param block_k="$bk" \
      --param causal="$causal" --chips-dir "$chips" -o "$prog")
    ht=$(timed "$build/bin/tpusim" "$prog" --chip "$chips/v5e.json" --mode timing --quiet \
      --stats "$work/st.json")
    $py - "$work/st.json" "$s" "$causal" "$heads" "$ht" "$ct" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))
s, causal, heads = int(sys.argv[2]), sys.argv[3] == "true", int(sys.argv[4])
d = 128
pairs = s * (s + 1) / 2 if causal else s * s
useful = 4 * heads * pairs * d
cfg = st["chip_config"]
peak = cfg["mxu"]["count"] * cfg["mxu"]["size"] ** 2 * 2  # FLOP per cycle
cyc = st["total_cycles"]
print(f"{s:<6} {str(causal).lower():<7} {cyc:>12,} {st['simulated_seconds']*1e6:>11.1f} "
      f"{100*useful/(cyc*peak):>9.1f} {100*st['mxu_utilization']:>9.1f} "
      f"{float(sys.argv[5]):>9.2f} {float(sys.argv[6]):>9.2f}")
EOF
  done
done

echo
echo "decode attention, v5e, functional: batch 4, kv_heads 8, group 4, head_dim 128"
printf '%-11s %-7s %12s %9s %10s %9s %9s\n' cache length cycles sim_us GB/s %peak host_s
# One row per (layout, length): contiguous cache with block_k 2048, and a paged
# cache of 256-position pages (page table = a shuffled permutation).
for layout in contiguous paged; do
for len in $decode_lens; do
  prog="$work/dec_$len.tpuprog"
  if [[ $layout == paged ]]; then
    pages=$(( (len + 255) / 256 ))
    kernel=(paged_attention --param num_pages=$((4 * pages)) --param page_size=256
            --param pages_per_seq=$pages)
  else
    kernel=(decode_attention --param max_len="$len" --param block_k=2048)
  fi
  rm -rf "$work/in"
  "$build/bin/tpu-kernel" "${kernel[@]}" --param batch=4 --param kv_heads=8 --param group=4 \
    --param head_dim=128 --param length="$len" --interpret-dir "$work/in" \
    --chips-dir "$chips" -o "$prog" > "$work/last.log" 2>&1 || { cat "$work/last.log" >&2; exit 1; }
  # The lengths (and page table) tpu-kernel generated; q, k, v: tpusim's seeded data.
  inputs=(--input lengths="$work/in/lengths.npy")
  [[ $layout == paged ]] && inputs+=(--input page_indices="$work/in/page_indices.npy")
  ht=$(timed "$build/bin/tpusim" "$prog" --chip "$chips/v5e.json" --quiet "${inputs[@]}" \
    --stats "$work/st.json")
  $py - "$work/st.json" "$len" "$ht" "$layout" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
kv_bytes = 2 * 4 * 8 * n * 128 * 2  # K and V, bf16
sec = st["simulated_seconds"]
peak = st["hbm"]["peak_bytes_per_second"]
print(f"{sys.argv[4]:<11} {n:<7} {st['total_cycles']:>12,} {sec*1e6:>9.1f} "
      f"{kv_bytes/sec/1e9:>10.1f} {100*kv_bytes/sec/peak:>9.1f} {float(sys.argv[3]):>9.2f}")
EOF
done
done
