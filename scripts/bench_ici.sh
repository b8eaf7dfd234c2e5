#!/usr/bin/env bash
# Multi-chip simulator speed (not a timed test): simulated cycles per host CPU
# second of one chip against a system of 8 (tpusim --topology 2x4) for
#   (a) the MXU-bound loop of bench_sim.sh on every chip (no ICI traffic), and
#   (b) an ICI-bound ring: every chip sends 1 MiB to its neighbour per step;
# then host threads (tpusim --host-threads 1 and 2) on 8 chips (2x4) and 64 chips (8x8):
#   (c) the MXU-bound loop, (d) an HBM stream (4 DMA queues of 64 KiB copies) on every chip,
#   (e) the Llama-2-70B layer decode at tp=8 (traces/, 2x4; memory-heavy).
# Chip-cycles per CPU second and per wall second; the machine's load is printed with them
# (wall time on a shared machine is noisy).
# Usage: scripts/bench_ici.sh [--build-dir DIR] [--quick] [--full]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bench/common.sh"
bench_start bench_ici.sh "$@"
mxu_iters=2000; ring_iters=5000; mxu64_iters=300; hbm_iters=300; hbm64_iters=60
if [[ $quick == 1 ]]; then mxu_iters=200; ring_iters=200; mxu64_iters=30; hbm_iters=30; hbm64_iters=10; fi
python3 "$root/scripts/bench/gen_mxu_loop.py" "$mxu_iters" 4 > "$work/mxu.s"
python3 "$root/scripts/bench/gen_mxu_loop.py" "$mxu64_iters" 4 > "$work/mxu64.s"
python3 "$root/scripts/bench/gen_hbm_stream.py" "$hbm_iters" > "$work/hbm.s"
python3 "$root/scripts/bench/gen_hbm_stream.py" "$hbm64_iters" > "$work/hbm64.s"
python3 "$root/scripts/bench/gen_ici_ring.py" "$ring_iters" $((1 << 20)) > "$work/ring.s"

# run NAME PROGRAM [--topology T] [--host-threads N]: one line from the summary.
run() {
  local name=$1 prog=$2
  shift 2
  "$tpusim" "$prog" --chip v5e --mode timing --quiet "$@" > "$work/$name.txt" || {
    cat "$work/$name.txt" >&2; return 1; }
  python3 - "$work/$name.txt" "$name" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"host time\s+([\d.]+) s wall, ([\d.]+) s CPU", text)
wall, cpu = float(m.group(1)), float(m.group(2))
step = re.search(r"step\s+(\d+) cycles", text)
chips = re.search(r"x (\d+) chips", text)
cycles = int(step.group(1)) if step else int(re.search(r"cycles\s+(\d+)", text).group(1))
n = int(chips.group(1)) if chips else 1
threads = re.search(r"; (\d+) host threads", text)
t = int(threads.group(1)) if threads else 1
print(f"{sys.argv[2]:<16} chips {n:>2}  threads {t}  step {cycles:>10}  CPU {cpu:7.3f} s  "
      f"wall {wall:7.3f} s  {cycles / cpu / 1e6:8.2f} M step-cycles/CPU-s  "
      f"{n * cycles / cpu / 1e6:8.2f} M chip-cycles/CPU-s  {n * cycles / wall / 1e6:8.2f} M "
      f"chip-cycles/wall-s")
PY
}
echo "tpusim multi-chip benchmark ($(date -u +%Y-%m-%d), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
run mxu-1chip "$work/mxu.s"
run mxu-8chips "$work/mxu.s" --topology 2x4
run ring-2chips "$work/ring.s" --topology 1x2
run ring-8chips "$work/ring.s" --topology 2x4

echo "host threads (load $(cut -d' ' -f1-3 /proc/loadavg))"
for t in 1 2; do
  run mxu-8chips "$work/mxu.s" --topology 2x4 --host-threads $t
  run mxu-64chips "$work/mxu64.s" --topology 8x8 --host-threads $t
  run hbm-8chips "$work/hbm.s" --topology 2x4 --host-threads $t
  run hbm-64chips "$work/hbm64.s" --topology 8x8 --host-threads $t
  if [[ $quick == 0 ]]; then
    run 70b-decode-tp8 "$root/traces/llama2_70b_layer_decode_2048_int8_tp8.hlo" --host-threads $t
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
