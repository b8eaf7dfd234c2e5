// A DMA whose HBM source runs past the chip's HBM capacity.
// RUN: not tpusim %s --chip v5e 2>&1 >/dev/null | FileCheck %s
// CHECK: fault [dma-fault]: {{.*}}out of bounds
// CHECK: bundle: 1
// CHECK: slot:   misc0 (dma)
// CHECK: unit:   dma q0
// CHECK: address: 0x3fffff000
.dma_descriptor 0, src=hbm:0x3fffff000, dst=vmem:0x0, inner=8192
  sli s1, 0
  dma s1, f0, q0
  sync.wait f0, 1
  halt
