#!/usr/bin/env bash
# Collective benchmark (not a timed test): an all-reduce of f32 data compiled
# by tpuc from an SPMD module (num_partitions = the slice's chips) and run with
# tpusim on v5e slices, from 8 KiB to 64 MiB per device. Prints the algorithm
# tpuc chose (from the ICI transfer count), the step, the algorithm bandwidth
# (bytes per device / time) and the bus bandwidth (NCCL's convention:
# algbw x 2 (n - 1) / n, the bytes every chip must send and receive).
# Usage: scripts/bench_collectives.sh [--build-dir DIR] [--quick]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench/common.sh"
bench_start bench_collectives.sh "$@"
sizes_kib="8 64 512 4096 32768 65536"
[[ $quick == 1 ]] && sizes_kib="8 512"

echo "all-reduce on v5e ($(date -u +%Y-%m-%d), tpusim --mode timing)"
printf "%-6s %10s %10s %12s %10s %12s %12s\n" slice KiB/dev algorithm cycles us "algbw GB/s" "busbw GB/s"
for topo in 1x4 2x2 2x4; do
  n=$(( ${topo%x*} * ${topo#*x} ))
  for kib in $sizes_kib; do
    elems=$(( kib * 256 ))
    cat > "$work/ar.hlo" <<HLO
HloModule ar, num_partitions=$n
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[$elems] parameter(0)
  ROOT r = f32[$elems] all-reduce(x), channel_id=1, replica_groups={}, to_apply=add
}
HLO
    "$tpusim" "$work/ar.hlo" --chip v5e --topology "$topo" --mode timing --quiet \
      > "$work/out.txt" 2> "$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
    python3 - "$work/out.txt" "$topo" "$kib" "$n" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
topo, kib, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
cycles = int(re.search(r"step\s+(\d+) cycles", text).group(1))
hz = float(re.search(r"cycles \(the slowest chip\), [\d.]+ us at ([\d.]+) GHz", text).group(1)) * 1e9
transfers = int(re.search(r"ICI\s+(\d+) transfer", text).group(1))
# one-shot: one all-gather, n (n - 1) transfers; ring: n (n - 1) more.
alg = "one-shot" if transfers == n * (n - 1) else "ring"
t = cycles / hz
algbw = kib * 1024 / t / 1e9
print(f"{topo:<6} {kib:>10} {alg:>10} {cycles:>12} {t * 1e6:>10.1f} {algbw:>12.2f} "
      f"{algbw * 2 * (n - 1) / n:>12.2f}")
PY
  done
done
