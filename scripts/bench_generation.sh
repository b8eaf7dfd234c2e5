#!/usr/bin/env bash
# The generation benchmark of the Cloud TPU v5e inference workload: a prompt of
# --prefix tokens (prefill), then --decode steps of one token each, batch 1, on
# one chip. Prints time to first token (the prefill step), the per-token latency
# of the decode steps, and the total, with the host time the benchmark took.
#
#   scripts/bench_generation.sh [--build-dir DIR] [--chip v5e] [--model 7b|13b|tiny]
#       [--dtype int8|bf16] [--prefix 2048] [--decode 256] [--nodes 3] [--validate 2]
#       [--out DIR]
#
# Decode step i (1..--decode) attends over prefix + i tokens. Steps differ only
# in that length, so the script simulates --nodes lengths spread evenly from the
# first step to the last, interpolates every other step linearly between them,
# and, to show what the interpolation costs, simulates --validate further steps
# (midway between nodes) and reports the interpolation error at each. Every
# trace comes from tpu-tracegen, is compiled by tpuc and run in timing mode.
# Traces, programs and stats JSON are kept in --out (default
# bench-generation-out/). Numbers go to docs/performance.md by hand.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
chip=v5e
model=7b
dtype=int8
prefix=2048
decode=256
nodes=3
validate=2
out=bench-generation-out
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --chip) chip=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    --decode) decode=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --validate) validate=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "bench_generation.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$model" in
  7b) preset=llama2-7b ;;
  13b) preset=llama2-13b ;;
  tiny) preset=tiny ;;  # the tiny model: a quick check of the script itself
  *) echo "bench_generation.sh: --model must be 7b, 13b or tiny, not '$model'" >&2; exit 2 ;;
esac
[[ "$dtype" == int8 || "$dtype" == bf16 ]] ||
  { echo "bench_generation.sh: --dtype must be int8 or bf16, not '$dtype'" >&2; exit 2; }
for n in "$prefix" "$decode" "$nodes" "$validate"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "bench_generation.sh: '$n' is not a count" >&2; exit 2; }
done
(( decode >= 1 && nodes >= 2 && prefix >= 1 )) ||
  { echo "bench_generation.sh: needs --decode >= 1, --nodes >= 2, --prefix >= 1" >&2; exit 2; }
for tool in tpu-tracegen tpuc tpusim; do
  [[ -x "$build/bin/$tool" ]] || { echo "bench_generation.sh: no $build/bin/$tool (build it, or pass --build-dir)" >&2; exit 1; }
done
mkdir -p "$out"
start=$(date +%s.%N)

# Simulated seconds of one step: NAME, then tpu-tracegen options.
step_seconds() {
  local name=$1; shift
  local base="$out/$model-$dtype-$name"
  "$build/bin/tpu-tracegen" --preset=$preset --dtype=$dtype "$@" -o "$base.hlo"
  "$build/bin/tpuc" "$base.hlo" --chip "$chip" -o "$base.tpuprog" > "$base.tpuc.txt"
  "$build/bin/tpusim" "$base.tpuprog" --chip "$chip" --mode timing --quiet \
    --stats "$base.stats.json" > "$base.sim.txt"
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["simulated_seconds"])' \
    "$base.stats.json"
}

echo "prefill: $prefix tokens" >&2
ttft=$(step_seconds prefill-$prefix --phase=prefill --seq=$prefix)

# Node lengths: evenly spaced over the steps' lengths prefix+1 .. prefix+decode.
mapfile -t node_len < <(python3 - "$prefix" "$decode" "$nodes" <<'PY'
import sys
p, d, n = map(int, sys.argv[1:])
first, last = p + 1, p + d
pts = sorted({round(first + (last - first) * k / (n - 1)) for k in range(n)})
print("\n".join(map(str, pts)))
PY
)
node_sec=()
for len in "${node_len[@]}"; do
  echo "decode: attending over $len tokens (node)" >&2
  node_sec+=("$(step_seconds decode-$len --phase=decode --kv-len=$len)")
done
# Validation lengths: midway between nodes (the points farthest from any node).
mapfile -t check_len < <(python3 - "$validate" "${node_len[@]}" <<'PY'
import sys
v, nodes = int(sys.argv[1]), list(map(int, sys.argv[2:]))
mids = [(a + b) // 2 for a, b in zip(nodes, nodes[1:]) if b - a >= 2]
step = max(1, len(mids) / max(v, 1))
print("\n".join(str(mids[int(k * step)]) for k in range(min(v, len(mids)))))
PY
)
check_sec=()
for len in "${check_len[@]}"; do
  echo "decode: attending over $len tokens (validation)" >&2
  check_sec+=("$(step_seconds decode-$len --phase=decode --kv-len=$len)")
done
end=$(date +%s.%N)

python3 - "$prefix" "$decode" "$ttft" "${#node_len[@]}" "${node_len[@]}" "${node_sec[@]}" \
  "${#check_len[@]}" "${check_len[@]}" "${check_sec[@]}" "$preset" "$dtype" "$chip" \
  "$start" "$end" <<'PY'
import sys
a = sys.argv[1:]
prefix, decode, ttft = int(a[0]), int(a[1]), float(a[2])
n = int(a[3]); nodes = list(map(int, a[4:4 + n])); node_s = list(map(float, a[4 + n:4 + 2 * n]))
a = a[4 + 2 * n:]
m = int(a[0]); checks = list(map(int, a[1:1 + m])); check_s = list(map(float, a[1 + m:1 + 2 * m]))
model, dtype, chip, start, end = a[1 + 2 * m:]

def interp(length):
    for (x0, y0), (x1, y1) in zip(zip(nodes, node_s), zip(nodes[1:], node_s[1:])):
        if x0 <= length <= x1:
            return y0 + (y1 - y0) * (length - x0) / (x1 - x0) if x1 > x0 else y0
    return node_s[0] if length < nodes[0] else node_s[-1]

steps = [interp(prefix + i) for i in range(1, decode + 1)]
total_decode = sum(steps)
print(f"{model} {dtype} on {chip}: prefix {prefix}, {decode} decode steps, batch 1")
print()
print("| | ms |")
print("|---|---|")
print(f"| time to first token (prefill of {prefix}) | {ttft * 1e3:.2f} |")
print(f"| per-token latency (mean of {decode} decode steps) | {total_decode / decode * 1e3:.3f} |")
print(f"| total (prefill + {decode} steps) | {(ttft + total_decode) * 1e3:.2f} |")
print()
print("| decode step attends over | simulated ms | interpolated ms | error |")
print("|---|---|---|---|")
for x, y in zip(nodes, node_s):
    print(f"| {x} (node) | {y * 1e3:.4f} | – | – |")
worst = 0.0
for x, y in zip(checks, check_s):
    e = (interp(x) - y) / y
    worst = max(worst, abs(e))
    print(f"| {x} | {y * 1e3:.4f} | {interp(x) * 1e3:.4f} | {e * 100:+.3f}% |")
print()
print(f"worst interpolation error {worst * 100:.3f}%; {len(nodes) + len(checks) + 1} steps "
      f"simulated; host time {float(end) - float(start):.1f} s wall")
PY
# CPU time of everything this script ran: bash's `times` (its second line is
# the children's user and system time), run in this shell, not a subshell.
times > "$out/times.txt"
sed -n 2p "$out/times.txt" | awk '{ gsub(/s/, "", $1); gsub(/s/, "", $2); split($1, u, "m");
  split($2, s, "m"); printf "host CPU time of the tools: %.1f s\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }'
