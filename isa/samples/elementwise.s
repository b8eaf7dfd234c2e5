// Element-wise kernel: out = max(a * b + 1.0, 0) over two f32 [64, 128]
// tensors. A counted loop (`loop`) walks the 8 vregs of each input: per
// iteration it loads one 8x128 block of a and of b, computes, and stores.
// One vector load per bundle, so the program runs on every production preset
// (v4 has a single load slot; a second vld in a bundle is an invalid bundle there).
//
// VMEM rows: a at 0..63, b at 64..127, out at 128..191.
// SMEM words 0, 16, 32: DMA descriptors for a, b and out.

.chip v5e
.buffer a, shape=[64, 128], dtype=f32, space=hbm, addr=0x0, role=input
.buffer b, shape=[64, 128], dtype=f32, space=hbm, addr=0x8000, role=input
.buffer out, shape=[64, 128], dtype=f32, space=hbm, addr=0x10000, role=output

.dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=32768, counts=[], src_strides=[], dst_strides=[]
.dma_descriptor 16, src=hbm:0x8000, dst=vmem:0x8000, inner=32768, counts=[], src_strides=[], dst_strides=[]
.dma_descriptor 32, src=vmem:0x10000, dst=hbm:0x10000, inner=32768, counts=[], src_strides=[], dst_strides=[]

.cost elementwise, flops=24576, hbm_read=65536, hbm_write=32768, vmem_read=98304, vmem_write=98304

.symbol main
.op elementwise, file="isa/samples/elementwise.s"
main:
    sli s0, 0 ;; sli s1, 16 ;; mark 0
    dma s0, f0, q0 ;; sli s2, 32
    dma s1, f0, q1 ;; sli s3, 8 ;; vimm v2, 1.0 ;; vimm v3, 0.0
    sync.wait f0, 2                      // a and b are in VMEM
body:                                    // s0 = row of the current block, s3 = blocks left
    vld v0, s0, 0, 1, 255
    vld v1, s0, 64, 1, 255
    vmul.f32 v4, v0, v1
    vadd.f32 v5, v4, v2
    vmax.f32 v6, v5, v3
    // The store reads s0 at issue, before saddi's result is written.
    vst v6, s0, 128, 1, 255 ;; saddi s0, s0, 8 ;; loop s3, body
    dma s2, f1, q0                       // out back to HBM
    sync.wait f1, 1
    halt
.endop
