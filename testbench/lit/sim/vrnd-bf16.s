// vrnd.bf16.f32 rounds an f32 to bf16 precision and keeps the f32 layout: the
// value vcvt.bf16.f32 then vcvt.f32.bf16 give, in one ALU op. Row 0 of `out`
// holds vrnd's results, row 1 the convert pair's, for: 1 + 2^-8 (a tie: to
// even, 1.0), 1 + 3 x 2^-8 (up), -1.5 (exact), a NaN with a payload (the
// canonical NaN) and the largest f32 (rounds up into +inf).
// RUN: tpu-as %s -o %t.tpuprog && tpu-objdump -d %t.tpuprog | FileCheck --check-prefix=DIS %s
// RUN: tpu-objdump %t.tpuprog > %t.s && tpu-as %t.s -o %t2.tpuprog && cmp %t.tpuprog %t2.tpuprog
// RUN: rm -rf %t.out && tpusim %t.tpuprog --chip v6e --output-dir %t.out --quiet
// RUN: python3 %S/Inputs/npy_words.py %t.out/out.npy | FileCheck %s

// DIS: vrnd.bf16.f32 v1, v0

// CHECK:      0x3f800000
// CHECK-NEXT: 0x3f820000
// CHECK-NEXT: 0xbfc00000
// CHECK-NEXT: 0x7fc00000
// CHECK-NEXT: 0x7f800000
// CHECK-NEXT: 0x3f800000
// CHECK-NEXT: 0x3f820000
// CHECK-NEXT: 0xbfc00000
// CHECK-NEXT: 0x7fc00000
// CHECK-NEXT: 0x7f800000

.chip v6e
.buffer out, shape=[2, 5], dtype=s32, space=hbm, addr=0x1000, role=output
// Word 0 of each of the five VMEM rows, then word 0 of the next five.
.dma_descriptor 0, src=vmem:0x0, dst=hbm:0x1000, inner=4, counts=[10], src_strides=[512], dst_strides=[4]

.symbol main
main:
    vimm v0, 0x3f808000
    vrnd.bf16.f32 v1, v0 ;; vcvt.bf16.f32 v2, v0 ;; sli s0, 0
    vcvt.f32.bf16 v3, v2 ;; vimm v0, 0x3f818000
    vst v1, s0, 0, 1, 1 ;; vrnd.bf16.f32 v1, v0 ;; vcvt.bf16.f32 v2, v0
    vst v3, s0, 5, 1, 1 ;; vcvt.f32.bf16 v3, v2 ;; vimm v0, 0xbfc00000
    vst v1, s0, 1, 1, 1 ;; vrnd.bf16.f32 v1, v0 ;; vcvt.bf16.f32 v2, v0
    vst v3, s0, 6, 1, 1 ;; vcvt.f32.bf16 v3, v2 ;; vimm v0, 0x7f812345
    vst v1, s0, 2, 1, 1 ;; vrnd.bf16.f32 v1, v0 ;; vcvt.bf16.f32 v2, v0
    vst v3, s0, 7, 1, 1 ;; vcvt.f32.bf16 v3, v2 ;; vimm v0, 0x7f7fffff
    vst v1, s0, 3, 1, 1 ;; vrnd.bf16.f32 v1, v0 ;; vcvt.bf16.f32 v2, v0
    vst v3, s0, 8, 1, 1 ;; vcvt.f32.bf16 v3, v2
    vst v1, s0, 4, 1, 1
    vst v3, s0, 9, 1, 1
    dma s0, f1, q0
    sync.wait f1, 1
    halt
