// Result slots beyond a15 (the ISA encodes a0..a63): an 8x8 array (tiny8),
// iota weights and LHS; mm into a40, mm then mma into a63, both popped.
.buffer y, shape=[16,128], dtype=f32, space=vmem, addr=0x1000, role=output
  viota.lane v1 ;; viota.sub v2
  vcvt.f32.s32 v1, v1 ;; vcvt.f32.s32 v2, v2
  vcvt.bf16.f32 v1, v1 ;; vcvt.bf16.f32 v2, v2
  mxu.wpush.bf16 mxu0, v1
  mxu.latch mxu0
  mxu.mm.bf16 mxu0, v2, a40
  mxu.mm.bf16 mxu0, v1, a63
  mxu.mma.bf16 mxu0, v2, a63
  mxu.pop v3, mxu0, a40
  mxu.pop v4, mxu0, a63
  vst v3, s0, 8, 1, 255
  vst v4, s0, 16, 1, 255
  halt
