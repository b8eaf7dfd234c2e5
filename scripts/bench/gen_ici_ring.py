#!/usr/bin/env python3
"""Writes an ICI-bound SPMD loop (tpu-as assembly): every chip sends BYTES
from HBM to the HBM of its right neighbour (device id + 1 mod n) ITERS times,
waiting for its own send to leave and for the left neighbour's to arrive
before the next one. Usage: gen_ici_ring.py ITERS BYTES"""
import sys

iters, size = int(sys.argv[1]), int(sys.argv[2])
print(f"""// {iters} ring steps of {size} bytes each (scripts/bench/gen_ici_ring.py)
.dma_descriptor 0, src=hbm:0x0, dst=hbm:{hex(1 << 26)}, inner={size}
main:
    chip.id s1
    chip.count s2
    saddi s3, s1, 1 ;; sli s5, 0
    scmp.eq s4, s3, s2 ;; sli s6, {iters}
    ssel s3, s4, s5, s3 ;; sli s0, 0
step:
    dma.remote s0, s3, f2, f1, q0
    sync.wait f2, 1
    sync.wait f1, 1
    loop s6, step
    halt""")
