#!/usr/bin/env bash
# Multi-chip simulator speed (not a timed test): simulated cycles per host CPU
# second of one chip against a system of 8 (tpusim --topology 2x4) for
#   (a) the MXU-bound loop of bench_sim.sh on every chip (no ICI traffic), and
#   (b) an ICI-bound ring: every chip sends 1 MiB to its neighbour per step.
# Usage: scripts/bench_ici.sh [--build-dir DIR] [--quick]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench/common.sh"
bench_start bench_ici.sh "$@"
mxu_iters=2000; ring_iters=5000
if [[ $quick == 1 ]]; then mxu_iters=200; ring_iters=200; fi
python3 "$root/scripts/bench/gen_mxu_loop.py" "$mxu_iters" 4 > "$work/mxu.s"
python3 "$root/scripts/bench/gen_ici_ring.py" "$ring_iters" $((1 << 20)) > "$work/ring.s"

# run NAME PROGRAM [--topology T]: one line from the summary.
run() {
  local name=$1 prog=$2
  shift 2
  "$tpusim" "$prog" --chip v5e --mode timing --quiet "$@" > "$work/$name.txt"
  python3 - "$work/$name.txt" "$name" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"host time\s+([\d.]+) s wall, ([\d.]+) s CPU", text)
wall, cpu = float(m.group(1)), float(m.group(2))
step = re.search(r"step\s+(\d+) cycles", text)
chips = re.search(r"x (\d+) chips", text)
cycles = int(step.group(1)) if step else int(re.search(r"cycles\s+(\d+)", text).group(1))
n = int(chips.group(1)) if chips else 1
print(f"{sys.argv[2]:<16} chips {n}  step {cycles:>10}  CPU {cpu:7.3f} s  wall {wall:7.3f} s  "
      f"{cycles / cpu / 1e6:8.2f} M step-cycles/CPU-s  {n * cycles / cpu / 1e6:8.2f} M chip-cycles/CPU-s")
PY
}
echo "tpusim multi-chip benchmark ($(date -u +%Y-%m-%d), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
run mxu-1chip "$work/mxu.s"
run mxu-8chips "$work/mxu.s" --topology 2x4
run ring-2chips "$work/ring.s" --topology 1x2
run ring-8chips "$work/ring.s" --topology 2x4
