// A tiled bf16 matmul on one MXU: C[128,128] = A[128,256] . B[256,128].
// Inputs and output are f32 in HBM; the MXU multiplies bf16 values (rounded
// from f32 by vcvt.bf16.f32) and accumulates in f32. K = 256 is two weight
// tiles of 128 rows: tile 0 with mxu.mm into a0..a15, tile 1 with mxu.mma
// adding into the same slots. Assumes an MXU of size 128 (mxu.size = 128).
//
// VMEM layout (rows of 128 x 32 bit = 512 bytes):
//   rows   0..255  A, as two column tiles: rows 0..127 = A[:, 0:128],
//                  rows 128..255 = A[:, 128:256]
//   rows 256..511  B (rows 256..383 = tile 0 = B[0:128, :], 384..511 = tile 1)
//   rows 512..639  C
// SMEM words 0, 16, 32: the DMA descriptors for A, B and C.
//
// Pipelining: loads, converts and MXU ops of consecutive 8-row blocks overlap
// (load block p, convert block p-1, push block p-2 in one bundle); the
// interlocks stall where a result is not ready yet, so the schedule is
// correct whatever the chip's latencies. While tile 0 multiplies, tile 1's
// weights are pushed into the staging buffer (mm and wpush alternate in the
// one mpush slot).

.chip v5e
.buffer a, shape=[128, 256], dtype=f32, space=hbm, addr=0x0, role=input
.buffer b, shape=[256, 128], dtype=f32, space=hbm, addr=0x20000, role=input
.buffer c, shape=[128, 128], dtype=f32, space=hbm, addr=0x40000, role=output

// A: 128 rows of 1024 bytes -> two column tiles of 128 rows x 512 bytes.
.dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=512, counts=[128, 2], src_strides=[1024, 512], dst_strides=[512, 65536]
// B: contiguous, 256 rows x 512 bytes, to VMEM row 256.
.dma_descriptor 16, src=hbm:0x20000, dst=vmem:0x20000, inner=131072, counts=[], src_strides=[], dst_strides=[]
// C: VMEM rows 512..639 back to HBM.
.dma_descriptor 32, src=vmem:0x40000, dst=hbm:0x40000, inner=65536, counts=[], src_strides=[], dst_strides=[]

.cost matmul_tile, flops=8388608, hbm_read=262144, hbm_write=65536, vmem_read=327680, vmem_write=327680

.symbol main
.op matmul_tile, file="isa/samples/matmul_tile.s"
main:
    sli s0, 0 ;; sli s1, 16 ;; mark 0
    dma s0, f0, q0 ;; sli s2, 32
    dma s1, f0, q1
    sync.wait f0, 2                       // A and B are in VMEM

// Weight tile 0: load B rows 8p..8p+7, convert to bf16, push (16 pushes).
    vld v0, s0, 256, 1, 255
    vld v1, s0, 264, 1, 255 ;; vcvt.bf16.f32 v4, v0
    vld v2, s0, 272, 1, 255 ;; vcvt.bf16.f32 v5, v1 ;; mxu.wpush.bf16 mxu0, v4
    vld v3, s0, 280, 1, 255 ;; vcvt.bf16.f32 v6, v2 ;; mxu.wpush.bf16 mxu0, v5
    vld v0, s0, 288, 1, 255 ;; vcvt.bf16.f32 v7, v3 ;; mxu.wpush.bf16 mxu0, v6
    vld v1, s0, 296, 1, 255 ;; vcvt.bf16.f32 v4, v0 ;; mxu.wpush.bf16 mxu0, v7
    vld v2, s0, 304, 1, 255 ;; vcvt.bf16.f32 v5, v1 ;; mxu.wpush.bf16 mxu0, v4
    vld v3, s0, 312, 1, 255 ;; vcvt.bf16.f32 v6, v2 ;; mxu.wpush.bf16 mxu0, v5
    vld v0, s0, 320, 1, 255 ;; vcvt.bf16.f32 v7, v3 ;; mxu.wpush.bf16 mxu0, v6
    vld v1, s0, 328, 1, 255 ;; vcvt.bf16.f32 v4, v0 ;; mxu.wpush.bf16 mxu0, v7
    vld v2, s0, 336, 1, 255 ;; vcvt.bf16.f32 v5, v1 ;; mxu.wpush.bf16 mxu0, v4
    vld v3, s0, 344, 1, 255 ;; vcvt.bf16.f32 v6, v2 ;; mxu.wpush.bf16 mxu0, v5
    vld v0, s0, 352, 1, 255 ;; vcvt.bf16.f32 v7, v3 ;; mxu.wpush.bf16 mxu0, v6
    vld v1, s0, 360, 1, 255 ;; vcvt.bf16.f32 v4, v0 ;; mxu.wpush.bf16 mxu0, v7
    vld v2, s0, 368, 1, 255 ;; vcvt.bf16.f32 v5, v1 ;; mxu.wpush.bf16 mxu0, v4
    vld v3, s0, 376, 1, 255 ;; vcvt.bf16.f32 v6, v2 ;; mxu.wpush.bf16 mxu0, v5
    vcvt.bf16.f32 v7, v3 ;; mxu.wpush.bf16 mxu0, v6
    mxu.wpush.bf16 mxu0, v7
    mxu.latch mxu0                        // tile 0 active; staging cleared for tile 1

// A[:, 0:128] through tile 0 into a0..a15, while tile 1's weights (B rows
// 128..255 at VMEM 384..511) are pushed behind it.
    vld v8, s0, 0, 1, 255 ;; vld v16, s0, 384, 1, 255
    vld v9, s0, 8, 1, 255 ;; vld v17, s0, 392, 1, 255 ;; vcvt.bf16.f32 v12, v8 ;; vcvt.bf16.f32 v20, v16
    vld v10, s0, 16, 1, 255 ;; vld v18, s0, 400, 1, 255 ;; vcvt.bf16.f32 v13, v9 ;; vcvt.bf16.f32 v21, v17 ;; mxu.mm.bf16 mxu0, v12, a0
    mxu.wpush.bf16 mxu0, v20
    vld v11, s0, 24, 1, 255 ;; vld v19, s0, 408, 1, 255 ;; vcvt.bf16.f32 v14, v10 ;; vcvt.bf16.f32 v22, v18 ;; mxu.mm.bf16 mxu0, v13, a1
    mxu.wpush.bf16 mxu0, v21
    vld v8, s0, 32, 1, 255 ;; vld v16, s0, 416, 1, 255 ;; vcvt.bf16.f32 v15, v11 ;; vcvt.bf16.f32 v23, v19 ;; mxu.mm.bf16 mxu0, v14, a2
    mxu.wpush.bf16 mxu0, v22
    vld v9, s0, 40, 1, 255 ;; vld v17, s0, 424, 1, 255 ;; vcvt.bf16.f32 v12, v8 ;; vcvt.bf16.f32 v20, v16 ;; mxu.mm.bf16 mxu0, v15, a3
    mxu.wpush.bf16 mxu0, v23
    vld v10, s0, 48, 1, 255 ;; vld v18, s0, 432, 1, 255 ;; vcvt.bf16.f32 v13, v9 ;; vcvt.bf16.f32 v21, v17 ;; mxu.mm.bf16 mxu0, v12, a4
    mxu.wpush.bf16 mxu0, v20
    vld v11, s0, 56, 1, 255 ;; vld v19, s0, 440, 1, 255 ;; vcvt.bf16.f32 v14, v10 ;; vcvt.bf16.f32 v22, v18 ;; mxu.mm.bf16 mxu0, v13, a5
    mxu.wpush.bf16 mxu0, v21
    vld v8, s0, 64, 1, 255 ;; vld v16, s0, 448, 1, 255 ;; vcvt.bf16.f32 v15, v11 ;; vcvt.bf16.f32 v23, v19 ;; mxu.mm.bf16 mxu0, v14, a6
    mxu.wpush.bf16 mxu0, v22
    vld v9, s0, 72, 1, 255 ;; vld v17, s0, 456, 1, 255 ;; vcvt.bf16.f32 v12, v8 ;; vcvt.bf16.f32 v20, v16 ;; mxu.mm.bf16 mxu0, v15, a7
    mxu.wpush.bf16 mxu0, v23
    vld v10, s0, 80, 1, 255 ;; vld v18, s0, 464, 1, 255 ;; vcvt.bf16.f32 v13, v9 ;; vcvt.bf16.f32 v21, v17 ;; mxu.mm.bf16 mxu0, v12, a8
    mxu.wpush.bf16 mxu0, v20
    vld v11, s0, 88, 1, 255 ;; vld v19, s0, 472, 1, 255 ;; vcvt.bf16.f32 v14, v10 ;; vcvt.bf16.f32 v22, v18 ;; mxu.mm.bf16 mxu0, v13, a9
    mxu.wpush.bf16 mxu0, v21
    vld v8, s0, 96, 1, 255 ;; vld v16, s0, 480, 1, 255 ;; vcvt.bf16.f32 v15, v11 ;; vcvt.bf16.f32 v23, v19 ;; mxu.mm.bf16 mxu0, v14, a10
    mxu.wpush.bf16 mxu0, v22
    vld v9, s0, 104, 1, 255 ;; vld v17, s0, 488, 1, 255 ;; vcvt.bf16.f32 v12, v8 ;; vcvt.bf16.f32 v20, v16 ;; mxu.mm.bf16 mxu0, v15, a11
    mxu.wpush.bf16 mxu0, v23
    vld v10, s0, 112, 1, 255 ;; vld v18, s0, 496, 1, 255 ;; vcvt.bf16.f32 v13, v9 ;; vcvt.bf16.f32 v21, v17 ;; mxu.mm.bf16 mxu0, v12, a12
    mxu.wpush.bf16 mxu0, v20
    vld v11, s0, 120, 1, 255 ;; vld v19, s0, 504, 1, 255 ;; vcvt.bf16.f32 v14, v10 ;; vcvt.bf16.f32 v22, v18 ;; mxu.mm.bf16 mxu0, v13, a13
    mxu.wpush.bf16 mxu0, v21
    vcvt.bf16.f32 v15, v11 ;; vcvt.bf16.f32 v23, v19 ;; mxu.mm.bf16 mxu0, v14, a14
    mxu.wpush.bf16 mxu0, v22
    mxu.mm.bf16 mxu0, v15, a15
    mxu.wpush.bf16 mxu0, v23
    mxu.latch mxu0                        // tile 1 active (waits for the last mm's rows)

// A[:, 128:256] through tile 1, accumulating into a0..a15.
    vld v8, s0, 128, 1, 255
    vld v9, s0, 136, 1, 255 ;; vcvt.bf16.f32 v12, v8
    vld v10, s0, 144, 1, 255 ;; vcvt.bf16.f32 v13, v9 ;; mxu.mma.bf16 mxu0, v12, a0
    vld v11, s0, 152, 1, 255 ;; vcvt.bf16.f32 v14, v10 ;; mxu.mma.bf16 mxu0, v13, a1
    vld v8, s0, 160, 1, 255 ;; vcvt.bf16.f32 v15, v11 ;; mxu.mma.bf16 mxu0, v14, a2
    vld v9, s0, 168, 1, 255 ;; vcvt.bf16.f32 v12, v8 ;; mxu.mma.bf16 mxu0, v15, a3
    vld v10, s0, 176, 1, 255 ;; vcvt.bf16.f32 v13, v9 ;; mxu.mma.bf16 mxu0, v12, a4
    vld v11, s0, 184, 1, 255 ;; vcvt.bf16.f32 v14, v10 ;; mxu.mma.bf16 mxu0, v13, a5
    vld v8, s0, 192, 1, 255 ;; vcvt.bf16.f32 v15, v11 ;; mxu.mma.bf16 mxu0, v14, a6
    vld v9, s0, 200, 1, 255 ;; vcvt.bf16.f32 v12, v8 ;; mxu.mma.bf16 mxu0, v15, a7
    vld v10, s0, 208, 1, 255 ;; vcvt.bf16.f32 v13, v9 ;; mxu.mma.bf16 mxu0, v12, a8
    vld v11, s0, 216, 1, 255 ;; vcvt.bf16.f32 v14, v10 ;; mxu.mma.bf16 mxu0, v13, a9
    vld v8, s0, 224, 1, 255 ;; vcvt.bf16.f32 v15, v11 ;; mxu.mma.bf16 mxu0, v14, a10
    vld v9, s0, 232, 1, 255 ;; vcvt.bf16.f32 v12, v8 ;; mxu.mma.bf16 mxu0, v15, a11
    vld v10, s0, 240, 1, 255 ;; vcvt.bf16.f32 v13, v9 ;; mxu.mma.bf16 mxu0, v12, a12
    vld v11, s0, 248, 1, 255 ;; vcvt.bf16.f32 v14, v10 ;; mxu.mma.bf16 mxu0, v13, a13
    vcvt.bf16.f32 v15, v11 ;; mxu.mma.bf16 mxu0, v14, a14
    mxu.mma.bf16 mxu0, v15, a15

// Pop the 16 result slots (each stalls until its rows are ready) and store C.
    mxu.pop v24, mxu0, a0
    mxu.pop v25, mxu0, a1 ;; vst v24, s0, 512, 1, 255
    mxu.pop v26, mxu0, a2 ;; vst v25, s0, 520, 1, 255
    mxu.pop v27, mxu0, a3 ;; vst v26, s0, 528, 1, 255
    mxu.pop v24, mxu0, a4 ;; vst v27, s0, 536, 1, 255
    mxu.pop v25, mxu0, a5 ;; vst v24, s0, 544, 1, 255
    mxu.pop v26, mxu0, a6 ;; vst v25, s0, 552, 1, 255
    mxu.pop v27, mxu0, a7 ;; vst v26, s0, 560, 1, 255
    mxu.pop v24, mxu0, a8 ;; vst v27, s0, 568, 1, 255
    mxu.pop v25, mxu0, a9 ;; vst v24, s0, 576, 1, 255
    mxu.pop v26, mxu0, a10 ;; vst v25, s0, 584, 1, 255
    mxu.pop v27, mxu0, a11 ;; vst v26, s0, 592, 1, 255
    mxu.pop v24, mxu0, a12 ;; vst v27, s0, 600, 1, 255
    mxu.pop v25, mxu0, a13 ;; vst v24, s0, 608, 1, 255
    mxu.pop v26, mxu0, a14 ;; vst v25, s0, 616, 1, 255
    mxu.pop v27, mxu0, a15 ;; vst v26, s0, 624, 1, 255
    vst v27, s0, 632, 1, 255
    dma s2, f1, q0                        // C back to HBM
    sync.wait f1, 1
    halt
.endop
