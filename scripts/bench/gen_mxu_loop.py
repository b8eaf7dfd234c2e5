#!/usr/bin/env python3
"""Writes the MXU-bound benchmark loop (scripts/bench_sim.sh, case a).

Every MXU streams one 8-row LHS block (mma) every 8 cycles while the next
128x128 weight tile is pushed behind it on the weight port and latched at the
end of the tile: 64 LHS blocks (512 rows) per weight tile, LHS loaded from
VMEM one group ahead into double-buffered registers. The loop body holds two
tiles that accumulate into a0 and a1 in turn; each tile pops the other slot's
result (finished long before). The latches, which wait until the last LHS
rows have entered the array, and the loop branch are the only bubbles.
Usage: gen_mxu_loop.py ITERATIONS [MXUS]   (one iteration = 2 tiles per MXU)
"""
import sys

iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
mxus = int(sys.argv[2]) if len(sys.argv) > 2 else 4
groups = 64
out = [".op mxu_loop", "  sli s1, %d" % iterations, "  vld v30, s0, 4096, 1, 255"]
out += ["  mxu.latch mxu%d" % m for m in range(mxus)]
out.append("top:")
for tile in range(2):
    for g in range(groups):
        cur = 20 + 4 * (g % 2)
        nxt = 20 + 4 * ((g + 1) % 2)
        for b in range(8):
            ops = []
            if b < mxus:
                ops.append("mxu.mma.bf16 mxu%d, v%d, a%d" % (b, cur + b, tile))
                ops.append("vld v%d, s0, %d, 1, 255" % (nxt + b, 8 * ((g * 4 + b) % 64)))
                if g == 40:  # > 7 + 2N cycles after the other tile's last mma
                    ops.append("mxu.pop v%d, mxu%d, a%d" % (40 + b, b, 1 - tile))
            elif 4 <= b < 4 + mxus and g < 16:
                ops.append("mxu.wpush.bf16 mxu%d, v30" % (b - 4))
            elif 4 <= b < 4 + mxus and g == groups - 1:
                ops.append("mxu.latch mxu%d" % (b - 4))
            if tile == 1 and g == groups - 1 and b == 7:
                ops.append("loop s1, top")
            out.append("  " + (" ;; ".join(ops) if ops else "nop"))
out += ["  mxu.pop v%d, mxu%d, a0" % (40 + m, m) for m in range(mxus)]
out += ["  halt", ".endop"]
print("\n".join(out))
