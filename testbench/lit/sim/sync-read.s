// sync.read sees every DMA completion before its cycle, even when the core ran
// ahead on its own (a counted loop touches no shared state, so the core does not
// synchronize with SystemC inside it). The first read, right after the DMA is
// issued, sees 0. The second read comes 4,000 cycles later, long after the
// 512-byte copy finished, and sees 1. Before the fix it saw 0: the flag
// was as of the last synchronization. Both modes give the same cycles.
// RUN: tpu-as %s -o %t.tpuprog
// RUN: rm -rf %t.out && tpusim %t.tpuprog --chip v5e --output-dir %t.out --quiet | FileCheck --check-prefix=CYC %s
// RUN: python3 %S/Inputs/npy_words.py %t.out/out.npy | FileCheck %s
// RUN: tpusim %t.tpuprog --chip v5e --mode timing --quiet | FileCheck --check-prefix=CYC %s

// CHECK:      0x00000000
// CHECK-NEXT: 0x00000001
// CYC: cycles 6076

.chip v5e
.buffer out, shape=[2], dtype=s32, space=hbm, addr=0x1000, role=output
.dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=512
.dma_descriptor 16, src=smem:0x400, dst=hbm:0x1000, inner=8

.symbol main
main:
    sli s0, 0 ;; sli s4, 16
    dma s0, f1, q0
    sli s6, 2000
    sync.read s5, f1
spin:
    loop s6, spin
    sync.read s7, f1
    sli s8, 256
    sst s5, s8, 0
    sst s7, s8, 1
    dma s4, f2, q0
    sync.wait f2, 1
    sync.wait f1, 1
    halt
