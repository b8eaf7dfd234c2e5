"""Checks a line-exchange reduce-scatter's step against its formula.

Usage: line_exchange_bound.py SUMMARY PRESET SLICE BYTES [--min R] [--max R]
The exchange (compiler/lower/collectives/LineExchangeReduce.h) of BYTES of
operand per chip over every chip of SLICE (e.g. 4x4, no wraparound): part j
(of D, one per dimension) is reduced along dimension j, j + 1, ... in turn; a
phase along a line of m chips takes its farthest hops (m - 1) x the hop latency
plus the busiest link's floor(m/2) ceil(m/2) blocks (a block: the part's bytes
still unreduced / m) over one link; the parts run side by side; the handshake
first costs the longest line's hops. Prints step / formula and fails unless
MIN <= it <= MAX (what is left above 1 is the combines on the chip).
"""
import argparse
import json
import math
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("summary")
p.add_argument("preset")
p.add_argument("slice")
p.add_argument("bytes", type=int)
p.add_argument("--min", type=float, default=1.0)
p.add_argument("--max", type=float, default=math.inf)
a = p.parse_args()
preset = json.load(open(a.preset))
per_cycle = preset["ici"]["link_bytes_per_second"] / preset["core"]["clock_hz"]
lat = preset["ici"]["latency_cycles"]
dims = [int(d) for d in a.slice.split("x") if int(d) > 1]
D = len(dims)
slowest = 0.0
for j in range(D):
    left = a.bytes / D
    t = 0.0
    for ph in range(D):
        m = dims[(j + ph) % D]
        block = left / m
        t += (m - 1) * lat + (m // 2) * ((m + 1) // 2) * block / per_cycle
        left = block
    slowest = max(slowest, t)
formula = (max(dims) - 1) * lat + slowest
step = int(re.search(r"step\s+(\d+) cycles", open(a.summary).read()).group(1))
ratio = step / formula
ok = a.min <= ratio <= a.max
print(f"step / formula: {ratio:.2f} ({step} / {formula:.0f}), wanted {a.min} .. {a.max}: "
      f"{'ok' if ok else 'out of range'}")
sys.exit(0 if ok else 1)
