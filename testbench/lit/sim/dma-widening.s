// Widening DMA (elem=2): bf16 values from HBM land one per 32-bit VMEM word
// with zero upper halves; the narrowing direction reads only the low halves.
// RUN: tpu-as %s -o %t.tpuprog && tpu-objdump %t.tpuprog | FileCheck --check-prefix=DIS %s
// RUN: tpu-objdump %t.tpuprog > %t.s && tpu-as %t.s -o %t2.tpuprog && cmp %t.tpuprog %t2.tpuprog
// RUN: rm -rf %t.out && tpusim %t.tpuprog --chip v5e --output-dir %t.out --quiet
// RUN: python3 %S/Inputs/npy_words.py %t.out/wide.npy | FileCheck --check-prefix=WIDE %s
// RUN: python3 %S/Inputs/npy_words.py %t.out/back.npy | FileCheck --check-prefix=BACK %s
// RUN: tpusim %t.tpuprog --chip v5e --mode timing --quiet --stats %t.json && FileCheck --check-prefix=STATS %s < %t.json
// RUN: not tpu-as %S/Inputs/dma-widening-errors.s -o %t3.tpuprog 2>&1 | FileCheck --check-prefix=ERR %s

// DIS: .dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=16, counts=[], src_strides=[], dst_strides=[], elem=2
// DIS: .dma_descriptor 32, src=vmem:0x0, dst=hbm:0x2000, inner=16, counts=[2], src_strides=[512], dst_strides=[16], elem=2

// Row 0 after the widening copy, copied out word for word.
// WIDE:      0x00003f80
// WIDE-NEXT: 0x0000c000
// WIDE-NEXT: 0x00004049
// WIDE-NEXT: 0x00007f80
// WIDE-NEXT: 0x00000001
// WIDE-NEXT: 0x00008000
// WIDE-NEXT: 0x0000ffff
// WIDE-NEXT: 0x00001234
// WIDE-NEXT: 0xffffffff

// The round trip of row 0, then the low halves of row 1's 0xabcd1234 words.
// BACK:      0x3f80
// BACK-NEXT: 0xc000
// BACK-NEXT: 0x4049
// BACK-NEXT: 0x7f80
// BACK-NEXT: 0x0001
// BACK-NEXT: 0x8000
// BACK-NEXT: 0xffff
// BACK-NEXT: 0x1234
// BACK-NEXT: 0x1234
// BACK-COUNT-7: 0x1234

// HBM moves the dense bytes (16 in; 36 + 32 out), VMEM the widened words
// (32 in; 36 + 2 x 32 out).
// STATS:      "dma_bytes_by_memory": {
// STATS-NEXT:   "hbm": {
// STATS-NEXT:     "bytes_read": 16,
// STATS-NEXT:     "bytes_written": 68,
// STATS:        "vmem": {
// STATS-NEXT:     "bytes_read": 100,
// STATS-NEXT:     "bytes_written": 32,

// ERR: dma-widening-errors.s:2:17: error: widening DMA descriptor (element size 2 bytes, word 0 bits 10-11): exactly one side must be hbm (the dense side), but it copies vmem -> vmem
// ERR: dma-widening-errors.s:3:17: error: widening DMA descriptor (element size 2 bytes, word 0 bits 10-11): source address 1 is not a multiple of 2
// ERR: dma-widening-errors.s:4:59: error: elem 3 is out of range (1..2)

.chip v5e
.buffer wide, shape=[9], dtype=s32, addr=0x1000, role=output
.buffer back, shape=[16], dtype=u16, addr=0x2000, role=output
.data hbm, 0, bytes 0x80, 0x3f, 0x00, 0xc0, 0x49, 0x40, 0x80, 0x7f, 0x01, 0x00, 0x00, 0x80, 0xff, 0xff, 0x34, 0x12
.dma_descriptor 0, src=hbm:0, dst=vmem:0, inner=16, elem=2
.dma_descriptor 16, src=vmem:0, dst=hbm:0x1000, inner=36
.dma_descriptor 32, src=vmem:0, dst=hbm:0x2000, inner=16, counts=[2], src_strides=[512], dst_strides=[16], elem=2

    vimm v0, -1 ;; vimm v1, 0xabcd1234 ;; sli s0, 0
    vst v0, s0, 0, 1, 1
    vst v1, s0, 1, 1, 1
    dma s0, f0, q0
    sync.wait f0, 1 ;; sli s2, 16 ;; sli s3, 32
    dma s2, f1, q0
    dma s3, f1, q1
    sync.wait f1, 2
    halt
