  mxu.wpush.s8 mxu0, v0
  mxu.latch mxu0
  mxu.mm.bf16 mxu0, v1, a0
  halt
