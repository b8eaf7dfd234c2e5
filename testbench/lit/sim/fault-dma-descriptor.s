// A descriptor with an innermost size of 0 bytes is malformed.
// RUN: not tpusim %s --chip v5e 2>&1 >/dev/null | FileCheck %s
// CHECK: fault [dma-descriptor]: malformed DMA descriptor at SMEM word 32: DMA descriptor has an innermost size of 0 bytes
// CHECK: bundle: 1
// CHECK: unit:   dma
// CHECK: address: 0x80
.data smem, 128, words 0x10, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0
  sli s1, 32
  dma s1, f0, q0
  halt
