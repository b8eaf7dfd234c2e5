// Packed int8 (mxu.*.s8x2): each 16-bit weight and LHS value holds two int8,
// K element k in the low byte and k + N in the high byte, so an 8x8 array
// takes a 16-deep K tile. The same values with the fast model and the RTL; a
// fault on an MXU without the mode (mxu.int8_rate 1).
// RUN: tpu-as %s -o %t.tpuprog && tpu-objdump %t.tpuprog | FileCheck --check-prefix=DIS %s
// RUN: rm -rf %t.fast %t.rtl
// RUN: tpusim %s --chip tiny8 --set mxu.int8_rate=2 --mxu-model=fast --quiet --output-dir %t.fast
// RUN: tpusim %s --chip tiny8 --set mxu.int8_rate=2 --mxu-model=rtl --quiet --output-dir %t.rtl
// RUN: cmp %t.fast/y.npy %t.rtl/y.npy
// RUN: cmp %t.fast/y2.npy %t.rtl/y2.npy
// RUN: python3 %S/Inputs/npy_words.py %t.fast/y.npy | FileCheck %s
// RUN: python3 %S/Inputs/npy_words.py %t.fast/y2.npy | FileCheck --check-prefix=Y2 %s
// RUN: not tpusim %s --chip tiny8 --quiet 2>&1 | FileCheck --check-prefix=FAULT %s

// DIS: mxu.wpush.s8x2 mxu0, v3
// DIS: mxu.mm.s8x2 mxu0, v3, a0
// DIS: mxu.mma.s8x2 mxu0, v3, a1

// W[k][n] = n and W[k + 8][n] = k - 4; a[j][k] = k and a[j][k + 8] = j - 4:
// y[j][n] = sum_k k n + sum_k (j - 4)(k - 4) = 28 n - 4 (j - 4). Row 0:
// CHECK:      0x00000010
// CHECK-NEXT: 0x0000002c
// CHECK-NEXT: 0x00000048
// CHECK-NEXT: 0x00000064
// CHECK-NEXT: 0x00000080
// CHECK-NEXT: 0x0000009c
// CHECK-NEXT: 0x000000b8
// CHECK-NEXT: 0x000000d4
// CHECK-NEXT: 0x00000000
// Row 1 starts with 12.
// CHECK:      0x0000000c
// The second result (mm then mma into a1) is twice y.
// Y2:      0x00000020
// Y2-NEXT: 0x00000058

// FAULT: fault [mxu-fault]: MXU wpush.s8x2: this chip's MXU has no packed int8 mode
.buffer y, shape=[8,128], dtype=s32, space=vmem, addr=0x1000, role=output
.buffer y2, shape=[8,128], dtype=s32, space=vmem, addr=0x2000, role=output
  viota.lane v1 ;; viota.sub v2 ;; vimm v4, 4
  vsub.s32 v2, v2, v4
  vpack.b8 v3, v1, v2
  mxu.wpush.s8x2 mxu0, v3
  mxu.latch mxu0
  mxu.mm.s8x2 mxu0, v3, a0
  mxu.mm.s8x2 mxu0, v3, a1
  mxu.mma.s8x2 mxu0, v3, a1
  mxu.pop v5, mxu0, a0
  mxu.pop v6, mxu0, a1
  vst v5, s0, 8, 1, 255
  vst v6, s0, 16, 1, 255
  halt
