#!/usr/bin/env python3
"""Writes the HBM-streaming benchmark loop (scripts/bench_sim.sh, case b).

Four DMA queues each keep one 64 KiB HBM -> VMEM copy in flight over
consecutive HBM addresses; each loop iteration waits for the oldest copy of a
queue and issues the next. Usage: gen_hbm_stream.py ITERATIONS [BYTES]
"""
import sys

iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
size = int(sys.argv[2]) if len(sys.argv) > 2 else 65536
queues = 4
out = [".op hbm_stream"]
# Descriptor q at SMEM word 16q; its source address word (1) is advanced in the loop.
for q in range(queues):
    out.append(".dma_descriptor %d, src=hbm:%#x, dst=vmem:%#x, inner=%d"
               % (16 * q, q * size, q * size, size))
out.append("  sli s1, %d ;; sli s9, %d" % (iterations, queues * size))
for q in range(queues):
    out.append("  sli s%d, %d" % (2 + q, 16 * q))
for q in range(queues):
    out.append("  dma s%d, f%d, q%d" % (2 + q, q, q))
out.append("top:")
for q in range(queues):
    # Next source address of queue q: += queues * size (wraps within 1 GiB).
    out.append("  sld s10, s%d, 1" % (2 + q))
    out.append("  sadd s10, s10, s9")
    out.append("  sli s11, 0x3fffffff")
    out.append("  sand s10, s10, s11")
    out.append("  sst s10, s%d, 1" % (2 + q))
    out.append("  sync.wait f%d, 1" % q)
    out.append("  dma s%d, f%d, q%d" % (2 + q, q, q))
out.append("  loop s1, top")
for q in range(queues):
    out.append("  sync.wait f%d, 1" % q)
out += ["  halt", ".endop"]
print("\n".join(out))
