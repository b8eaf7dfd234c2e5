#!/usr/bin/env bash
# Regenerates every committed model trace in traces/ with tpu-tracegen.
#   scripts/gen_traces.sh [--check] [--tool PATH] [--traces-dir DIR]
# --check writes nothing: it regenerates into a temporary folder and fails,
# naming each file, when a committed trace differs from what the generator
# writes now (or when traces/ holds an .hlo the list below does not make).
# --tool defaults to $TPU_TRACEGEN, then build/bin/tpu-tracegen.
# The traces are outputs of the generator: never edit them by hand.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=${TPU_TRACEGEN:-$root/build/bin/tpu-tracegen}
traces_dir=$root/traces
check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1; shift ;;
    --tool) tool=$2; shift 2 ;;
    --traces-dir) traces_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "gen_traces.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if ! command -v "$tool" >/dev/null 2>&1; then
  echo "gen_traces.sh: error: tpu-tracegen not found at '$tool' (build it: ninja -C build tpu-tracegen, or pass --tool)" >&2
  exit 2
fi

# file name -> tpu-tracegen options. docs/tools.md ("Model traces") says what each one is.
traces=(
  "llama_tiny_prefill.hlo|--preset=tiny"
  "llama_tiny_decode.hlo|--preset=tiny --phase=decode --kv-len=256"
  "llama2_7b_layer_prefill_2048.hlo|--preset=llama2-7b --layers-only --n-layers=1 --seq=2048"
  "llama2_7b_layer_decode_2048.hlo|--preset=llama2-7b --layers-only --n-layers=1 --phase=decode --kv-len=2048"
  "llama2_7b_layer_decode_2048_int8.hlo|--preset=llama2-7b --layers-only --n-layers=1 --phase=decode --kv-len=2048 --dtype=int8"
  "llama2_7b_layer_decode_2048_int8_aqt.hlo|--preset=llama2-7b --layers-only --n-layers=1 --phase=decode --kv-len=2048 --dtype=int8 --int8-activations"
  "llama2_7b_decode_2048.hlo|--preset=llama2-7b --phase=decode --kv-len=2048"
  "llama2_7b_decode_2048_int8.hlo|--preset=llama2-7b --phase=decode --kv-len=2048 --dtype=int8"
  "llama2_7b_prefill_2048.hlo|--preset=llama2-7b --seq=2048"
  "llama2_7b_prefill_2048_int8.hlo|--preset=llama2-7b --seq=2048 --dtype=int8"
  "llama2_13b_decode_2048_int8.hlo|--preset=llama2-13b --phase=decode --kv-len=2048 --dtype=int8"
  "llama2_70b_layer_decode_2048_int8_tp8.hlo|--preset=llama2-70b --layers-only --n-layers=1 --phase=decode --kv-len=2048 --dtype=int8 --tp=8"
  "llama2_70b_layer_prefill_2048_int8_tp8.hlo|--preset=llama2-70b --layers-only --n-layers=1 --seq=2048 --dtype=int8 --tp=8"
  "llama3_8b_layer_prefill_2048.hlo|--preset=llama3-8b --layers-only --n-layers=1 --seq=2048"
  "llama3_8b_layer_decode_2048.hlo|--preset=llama3-8b --layers-only --n-layers=1 --phase=decode --kv-len=2048"
  "llama_micro_prefill.hlo|--preset=micro"
  "llama_micro_decode.hlo|--preset=micro --phase=decode"
  "llama_micro_gqa_prefill.hlo|--preset=micro --n-heads=4 --n-kv-heads=2"
  "llama_tiny_prefill_tp2.hlo|--preset=tiny --tp=2"
  "llama_tiny_train.hlo|--preset=tiny-train"
  "llama_tiny_train_dp2.hlo|--preset=tiny-train --dp=2"
  "llama_micro_train.hlo|--preset=micro --phase=train --batch=2 --pos-embedding=learned"
  "llama_micro_train_onehot.hlo|--preset=micro --phase=train --batch=2 --pos-embedding=learned --embedding=one-hot"
)

out_dir=$traces_dir
if [ $check = 1 ]; then
  out_dir=$(mktemp -d)
  trap 'rm -rf "$out_dir"' EXIT
fi

stale=()
declare -A expected=()
for entry in "${traces[@]}"; do
  file=${entry%%|*}
  read -r -a options <<<"${entry#*|}"
  expected[$file]=1
  "$tool" "${options[@]}" -o "$out_dir/$file"
  if [ $check = 1 ] && ! cmp -s "$out_dir/$file" "$traces_dir/$file"; then
    stale+=("$file")
  fi
done

if [ $check = 0 ]; then
  echo "gen_traces.sh: wrote ${#traces[@]} traces to $traces_dir"
  exit 0
fi
status=0
for file in "${stale[@]}"; do
  if [ -f "$traces_dir/$file" ]; then
    echo "gen_traces.sh: error: traces/$file differs from what tpu-tracegen writes now" >&2
  else
    echo "gen_traces.sh: error: traces/$file is missing" >&2
  fi
  status=1
done
for path in "$traces_dir"/*.hlo; do
  [ -e "$path" ] || continue
  name=$(basename "$path")
  if [ -z "${expected[$name]:-}" ]; then
    echo "gen_traces.sh: error: traces/$name is not made by scripts/gen_traces.sh (add it to the list or remove it)" >&2
    status=1
  fi
done
if [ $status != 0 ]; then
  echo "gen_traces.sh: regenerate the traces with: scripts/gen_traces.sh --tool <build>/bin/tpu-tracegen" >&2
  exit 1
fi
echo "gen_traces.sh: all ${#traces[@]} traces are up to date"
