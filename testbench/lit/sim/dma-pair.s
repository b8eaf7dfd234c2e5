// Paired DMA (elem=1, pair=P): int8 values at a and a + P land in the low two
// bytes of one 32-bit VMEM word (the s8x2 weight layout), upper bytes zero;
// HBM reads both runs, VMEM writes one word per pair.
// RUN: tpu-as %s -o %t.tpuprog && tpu-objdump %t.tpuprog | FileCheck --check-prefix=DIS %s
// RUN: tpu-objdump %t.tpuprog > %t.s && tpu-as %t.s -o %t2.tpuprog && cmp %t.tpuprog %t2.tpuprog
// RUN: rm -rf %t.out && tpusim %t.tpuprog --chip v5e --output-dir %t.out --quiet
// RUN: python3 %S/Inputs/npy_words.py %t.out/packed.npy | FileCheck --check-prefix=PACKED %s
// RUN: tpusim %t.tpuprog --chip v5e --mode timing --quiet --stats %t.json && FileCheck --check-prefix=STATS %s < %t.json
// RUN: not tpu-as %S/Inputs/dma-pair-errors.s -o %t3.tpuprog 2>&1 | FileCheck --check-prefix=ERR %s

// DIS: .dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=8, counts=[], src_strides=[], dst_strides=[], elem=1, pair=256

// PACKED:      0x00008001
// PACKED-NEXT: 0x00007f02
// PACKED-NEXT: 0x0000ff03
// PACKED-NEXT: 0x00000004
// PACKED-NEXT: 0x00001180
// PACKED-NEXT: 0x000022ff
// PACKED-NEXT: 0x00003300
// PACKED-NEXT: 0x00004405

// HBM reads both runs of 8 (16; 32 more for the copy out), VMEM writes 8 words (32).
// STATS:      "dma_bytes_by_memory": {
// STATS-NEXT:   "hbm": {
// STATS-NEXT:     "bytes_read": 16,
// STATS-NEXT:     "bytes_written": 32,
// STATS:        "vmem": {
// STATS-NEXT:     "bytes_read": 32,
// STATS-NEXT:     "bytes_written": 32,

// ERR: dma-pair-errors.s:2:17: error: paired DMA descriptor (pair offset 256 bytes, word 0 bit 12 and word 15): the pair mode packs dense elements into 32-bit words, so it needs the widening mode
// ERR: dma-pair-errors.s:3:17: error: paired DMA descriptor (pair offset 256 bytes, word 0 bit 12 and word 15): it packs on the way from hbm into vmem or smem, but it copies vmem -> hbm
// ERR: dma-pair-errors.s:4:17: error: paired DMA descriptor (pair offset 255 bytes, word 0 bit 12 and word 15): the pair offset is not a multiple of the element size 2
// ERR: dma-pair-errors.s:5:{{[0-9]+}}: error: pair 0 is out of range

.chip v5e
.buffer packed, shape=[8], dtype=s32, addr=0x1000, role=output
.data hbm, 0, bytes 0x01, 0x02, 0x03, 0x04, 0x80, 0xff, 0x00, 0x05
.data hbm, 256, bytes 0x80, 0x7f, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44
.dma_descriptor 0, src=hbm:0, dst=vmem:0, inner=8, elem=1, pair=256
.dma_descriptor 16, src=vmem:0, dst=hbm:0x1000, inner=32

    sli s0, 0 ;; sli s1, 16
    dma s0, f0, q0
    sync.wait f0, 1
    dma s1, f1, q0
    sync.wait f1, 1
    halt
