#!/usr/bin/env bash
# Simulator speed benchmark (not a timed test). Prints simulated cycles per
# host CPU second and the achieved MXU utilization / HBM bandwidth for:
#   (a) an MXU-bound matmul loop on v5e (4 MXUs, hand-scheduled), timing-only
#       and functional, plus a plain optimized host loop doing the same
#       arithmetic as the functional run;
#   (b) an HBM-streaming DMA loop (4 queues of 64 KiB copies).
# Rates use CPU time (the shared machines are often overloaded; wall time is
# shown too). Usage: scripts/bench_sim.sh [--build-dir DIR] [--quick]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench/common.sh"
bench_start bench_sim.sh "$@"

timing_iters=10000; functional_iters=50; hbm_iters=500
if [[ $quick == 1 ]]; then timing_iters=1000; functional_iters=5; hbm_iters=50; fi
python3 "$root/scripts/bench/gen_mxu_loop.py" "$timing_iters" 4 > "$work/mxu_timing.s"
python3 "$root/scripts/bench/gen_mxu_loop.py" "$functional_iters" 4 > "$work/mxu_functional.s"
python3 "$root/scripts/bench/gen_hbm_stream.py" "$hbm_iters" > "$work/hbm.s"
c++ -std=c++17 -O3 -ffp-contract=off "$root/scripts/bench/hostloop.cpp" -o "$work/hostloop"

# run NAME MODE PROGRAM: prints one result line from the stats and the summary.
run() {
  local name=$1 mode=$2 prog=$3
  "$tpusim" "$prog" --chip v5e --mode "$mode" --quiet --stats "$work/$name.json" > "$work/$name.txt"
  python3 - "$work/$name.json" "$work/$name.txt" "$name" <<'PY'
import json, re, sys
stats = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
m = re.search(r"host time\s+([\d.]+) s wall, ([\d.]+) s CPU", text)
wall, cpu = float(m.group(1)), float(m.group(2))
cycles = stats["total_cycles"]
print(f"{sys.argv[3]:<22} cycles {cycles:>10}  CPU {cpu:7.3f} s  wall {wall:7.3f} s  "
      f"{cycles / cpu / 1e6:8.2f} M cycles/CPU-s  MXU {100 * stats['mxu_utilization']:5.1f}%  "
      f"HBM {stats['hbm']['achieved_bytes_per_second'] / 1e9:7.1f} GB/s "
      f"({100 * stats['hbm']['utilization']:.1f}% of peak)")
PY
}
echo "tpusim simulator benchmark ($(date -u +%Y-%m-%d), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
run "a: mxu loop, timing" timing "$work/mxu_timing.s"
run "a: mxu loop, functional" functional "$work/mxu_functional.s"
matmuls=$((functional_iters * 2 * 64 * 4))
"$work/hostloop" "$matmuls"
run "b: hbm stream, timing" timing "$work/hbm.s"
