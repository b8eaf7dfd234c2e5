#!/usr/bin/env bash
# Collective benchmark (not a timed test): all-gather, reduce-scatter and
# all-reduce of f32 data (replica_groups={}, every chip of the slice) compiled
# by tpuc from an SPMD module and run with tpusim --mode timing, against the
# analytic bound of the public model:
#   all-gather / reduce-scatter of V bytes (the gathered / scattered array)
#   over a slice with A axes of more than one chip: V / (A x W), W = the chip's
#   bidirectional ICI bandwidth on one axis (2 links x link_bytes_per_second),
#   twice that when the axes do not wrap around; and at least the hop
#   latencies of half of each wrapping axis (all of a non-wrapping one);
#   all-reduce: twice the all-gather's bandwidth term.
# That model leaves out the (n - 1) / n of the data a chip already holds, so a
# collective can beat it; "% chip" is against the tighter per-chip bound: the
# chip with the fewest links (a corner: 2 per wrapping axis, 1 per other) must
# send or receive (n - 1) / n of V over them (all-reduce: twice).
# Columns: V, the step, the bound, % of the bound, % of the chip bound, V / time.
# Megacore presets (core.cores = 2: v4, v5p) run with --set core.cores=1: on
# real chips one program drives both TensorCores as one device and a
# collective's ICI bandwidth is per chip, while tpusim runs the whole program
# on each core, so every collective would cross the links twice
# (docs/performance.md). BENCH_MEGACORE=both keeps both cores.
# Usage: scripts/bench_collectives.sh [--build-dir DIR] [--quick] [--full]
#   default: v5e 4x4, 8 KiB .. 16 MiB (256 KiB - 1 MiB: the mid sizes);
#   --quick: 8 KiB and 512 KiB;
#   --full: the issue's grid (v5e 4x4 and 16x16, v4 4x4x4; 8 KiB .. 256 MiB).
#   A run that takes more than BENCH_TIMEOUT host seconds (default 900) is
#   reported as too slow and ends that row's larger sizes; one tpuc cannot
#   compile is reported and skipped. BENCH_CONFIGS ("v4:4x4x4 ..."),
#   BENCH_COLLECTIVES and BENCH_SIZES_KIB override the lists.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench/common.sh"
bench_start bench_collectives.sh "$@"
timeout_s=${BENCH_TIMEOUT:-900}
configs="v5e:4x4"
sizes_kib="8 64 256 512 1024 4096 16384"
[[ $quick == 1 ]] && sizes_kib="8 512"
if [[ $full == 1 ]]; then
  configs="v5e:4x4 v5e:16x16 v4:4x4x4"
  sizes_kib="8 64 512 4096 16384 65536 262144"
fi

configs=${BENCH_CONFIGS:-$configs}
sizes_kib=${BENCH_SIZES_KIB:-$sizes_kib}
collectives=${BENCH_COLLECTIVES:-all-gather reduce-scatter all-reduce}

echo "collectives ($(date -u +%Y-%m-%d), tpusim --mode timing, f32, every chip of the slice)"
printf "%-4s %-8s %-15s %10s %12s %10s %10s %8s %7s %10s %7s\n" chip slice collective "V KiB" \
  cycles us "bound us" "% bound" "% chip" "V/t GB/s" "host s"
for config in $configs; do
  chip=${config%%:*} topo=${config#*:}
  n=1
  for d in ${topo//x/ }; do n=$((n * d)); done
  for coll in $collectives; do
    for kib in $sizes_kib; do
      python3 - "$coll" "$n" "$kib" > "$work/c.hlo" <<'PY'
import sys
coll, n, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
e = kib * 256  # f32 elements of V
print(f"HloModule c, num_partitions={n}")
print("add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}")
print("ENTRY main {")
if coll == "all-gather":
    print(f"  x = f32[{e // n}] parameter(0)")
    print(f"  ROOT r = f32[{e}] all-gather(x), channel_id=1, replica_groups={{}}, dimensions={{0}}")
elif coll == "reduce-scatter":
    print(f"  x = f32[{e}] parameter(0)")
    print(f"  ROOT r = f32[{e // n}] reduce-scatter(x), channel_id=1, replica_groups={{}}, "
          "dimensions={0}, to_apply=add")
else:
    print(f"  x = f32[{e}] parameter(0)")
    print(f"  ROOT r = f32[{e}] all-reduce(x), channel_id=1, replica_groups={{}}, to_apply=add")
print("}")
PY
      start=$(date +%s.%N)
      rc=0
      cores=()
      if [[ ${BENCH_MEGACORE:-one} == one ]] &&
        [[ $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['core']['cores'])" \
          "$root/sim/chips/$chip.json") == 2 ]]; then
        cores=(--set core.cores=1)
      fi
      timeout "$timeout_s" "$tpusim" "$work/c.hlo" --chip "$chip" --topology "$topo" \
        --mode timing --quiet "${cores[@]}" > "$work/out.txt" 2> "$work/err.txt" || rc=$?
      if [[ $rc != 0 ]]; then
        if [[ $rc == 124 ]]; then
          printf "%-4s %-8s %-15s %10s  too slow to simulate (> %s host s); larger sizes skipped\n" \
            "$chip" "$topo" "$coll" "$kib" "$timeout_s"
          break
        fi
        printf "%-4s %-8s %-15s %10s  failed: %s\n" "$chip" "$topo" "$coll" "$kib" \
          "$(grep -m1 error "$work/err.txt" | cut -c1-160)"
        continue
      fi
      host=$(echo "$(date +%s.%N) - $start" | bc)
      python3 - "$work/out.txt" "$root/sim/chips/$chip.json" "$chip" "$topo" "$coll" "$kib" \
        "$host" <<'PY'
import json, re, sys
out, preset, chip, topo, coll, kib, host = sys.argv[1:]
text = open(out).read()
ici = json.load(open(preset))["ici"]
cycles = int(re.search(r"step\s+(\d+) cycles", text).group(1))
hz = float(re.search(r"cycles \(the slowest chip\), [\d.]+ us at ([\d.]+) GHz", text).group(1)) * 1e9
v = int(kib) * 1024
axes = [int(d) for d in topo.split("x") if int(d) > 1]
wm = ici["wrap_multiple"]
wraps = [d > 2 and wm > 0 and d % wm == 0 for d in axes]
w = 2 * ici["link_bytes_per_second"]
factor = 1 if all(wraps) else 2
hop = ici["latency_cycles"] / hz
latency = sum((d // 2 if wr else d - 1) for d, wr in zip(axes, wraps)) * hop
bound = max(v * factor / (len(axes) * w) * (2 if coll == "all-reduce" else 1), latency)
n = 1
for d in axes:
    n *= d
links = sum(2 if wr else 1 for wr in wraps)
chip_bound = max((n - 1) / n * v / (links * ici["link_bytes_per_second"]) *
                 (2 if coll == "all-reduce" else 1), latency)
t = cycles / hz
print(f"{chip:<4} {topo:<8} {coll:<15} {kib:>10} {cycles:>12} {t * 1e6:>10.1f} "
      f"{bound * 1e6:>10.1f} {100 * bound / t:>7.0f}% {100 * chip_bound / t:>6.0f}% "
      f"{v / t / 1e9:>10.2f} {float(host):>7.1f}")
PY
    done
  done
done
