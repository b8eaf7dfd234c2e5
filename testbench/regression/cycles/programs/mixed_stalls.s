// Every kind of stall in one loop: operands, branch, bank conflicts, the
// transcendental unit, XLU, MXU ports and results, DMA and sync waits.
.buffer x, shape=[64,128], dtype=f32, space=hbm, addr=0x0, role=input
.dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=32768
.dma_descriptor 16, src=vmem:0x0, dst=hbm:0x10000, inner=4096
  sli s1, 0 ;; sli s2, 16
  sli s5, 6
  dma s1, f0, q0
  sync.wait f0, 1
top:
  vld v1, s0, 0, 32, 255
  vld v2, s0, 1, 1, 255 ;; vexp.f32 v3, v1
  vadd.f32 v4, v2, v2
  vtanh.f32 v5, v4
  xlu.sum.f32 v6, v3
  xlu.max.f32 v7, v5 ;; mxu.wpush.bf16 mxu0, v1
  mxu.wpush.bf16 mxu0, v2
  mxu.latch mxu0
  mxu.mm.bf16 mxu0, v2, a1
  mxu.pop v8, mxu0, a1
  vst v8, s0, 16, 1, 255
  dma s2, f1, q2
  dma s2, f1, q2
  loop s5, top
  sync.wait f1, 12
  halt
