// Row softmax of an f32 [16, 128] tensor: y[r, :] = exp(x[r, :] - max(x[r, :]))
// / sum(exp(x[r, :] - max(x[r, :]))). Each row is one sublane of a vreg, so the
// XLU lane reductions (xlu.max.f32, xlu.sum.f32; both broadcast the result to
// every lane of the sublane) give the row max and sum directly. The two 8-row
// blocks are interleaved so the VPU works on one while the XLU reduces the
// other. One vector load per bundle: v4 has a single load slot.
//
// VMEM rows: x at 0..15, y at 16..31. SMEM words 0 and 16: DMA descriptors.

.chip v5e
.buffer x, shape=[16, 128], dtype=f32, space=hbm, addr=0x0, role=input
.buffer y, shape=[16, 128], dtype=f32, space=hbm, addr=0x2000, role=output

.dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=8192, counts=[], src_strides=[], dst_strides=[]
.dma_descriptor 16, src=vmem:0x2000, dst=hbm:0x2000, inner=8192, counts=[], src_strides=[], dst_strides=[]

.cost softmax_row, flops=10240, hbm_read=8192, hbm_write=8192, vmem_read=16384, vmem_write=16384

.symbol main
.op softmax_row, file="isa/samples/softmax_row.s"
main:
    sli s0, 0 ;; sli s1, 16 ;; mark 0
    dma s0, f0, q0
    sync.wait f0, 1                             // x is in VMEM
    vld v0, s0, 0, 1, 255
    vld v8, s0, 8, 1, 255
    xlu.max.f32 v1, v0                          // row max, block 0
    xlu.max.f32 v9, v8                          // row max, block 1
    vsub.f32 v2, v0, v1
    vexp.f32 v3, v2 ;; vsub.f32 v10, v8, v9
    xlu.sum.f32 v4, v3 ;; vexp.f32 v11, v10     // row sum, block 0
    xlu.sum.f32 v12, v11 ;; vrcp.f32 v5, v4     // row sum, block 1
    vmul.f32 v6, v3, v5 ;; vrcp.f32 v13, v12
    vst v6, s0, 16, 1, 255 ;; vmul.f32 v14, v11, v13
    vst v14, s0, 24, 1, 255
    dma s1, f1, q0                              // y back to HBM
    sync.wait f1, 1
    halt
.endop
