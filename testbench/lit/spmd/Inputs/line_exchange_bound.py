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
import step_ratio

a = step_ratio.arguments(("slice", str), ("bytes", int), default_min=1.0)
preset = step_ratio.preset(a.preset)
per_cycle = step_ratio.link_bytes_per_cycle(preset)
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
step_ratio.check("formula", step_ratio.step_cycles(a.summary), formula, a, f"{formula:.0f}")
