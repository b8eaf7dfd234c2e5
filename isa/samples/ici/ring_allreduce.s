// Ring all-reduce over ICI (SPMD: every chip runs this program). Each device
// holds x, f32 [8, 128] (one vreg); out = the sum of every device's x.
// Step k (1 .. n-1) sends VMEM slot k-1 (slot 0 = x, then what arrived at the
// previous step) to slot k of the right neighbour (device id + 1 mod n) and
// adds what arrived from the left into the accumulator: after n-1 steps every
// device has the sum. Up to 8 devices (slots 0..7, out at VMEM row 64).
// Run: tpusim ring_allreduce.s --chip tiny8 --topology 2x4
//
// Flags: f0 local DMA, f1 a slot arrived (the left neighbour's dma.remote),
// f2 a send left (the source may be reused). SMEM: word 0 loads x, word 16k
// is step k's descriptor, word 128 stores out.

.buffer x, shape=[8, 128], dtype=f32, space=hbm, addr=0x0, role=input
.buffer out, shape=[8, 128], dtype=f32, space=hbm, addr=0x1000, role=output

.dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=4096
.dma_descriptor 16, src=vmem:0x0, dst=vmem:0x1000, inner=4096
.dma_descriptor 32, src=vmem:0x1000, dst=vmem:0x2000, inner=4096
.dma_descriptor 48, src=vmem:0x2000, dst=vmem:0x3000, inner=4096
.dma_descriptor 64, src=vmem:0x3000, dst=vmem:0x4000, inner=4096
.dma_descriptor 80, src=vmem:0x4000, dst=vmem:0x5000, inner=4096
.dma_descriptor 96, src=vmem:0x5000, dst=vmem:0x6000, inner=4096
.dma_descriptor 112, src=vmem:0x6000, dst=vmem:0x7000, inner=4096
.dma_descriptor 128, src=vmem:0x8000, dst=hbm:0x1000, inner=4096

.symbol main
.op ring_allreduce
main:
    sli s0, 0 ;; chip.id s1
    dma s0, f0, q0
    chip.count s2
    saddi s3, s1, 1 ;; sli s5, 0
    scmp.eq s4, s3, s2 ;; saddi s6, s2, -1
    ssel s3, s4, s5, s3 ;; sli s7, 16           // s3 = right neighbour, s6 = steps
    sync.wait f0, 1 ;; sli s8, 8                // x is in slot 0
    vld v0, s5, 0, 1, 255                       // the accumulator
step:                                           // s7 = descriptor, s8 = row of slot k
    dma.remote s7, s3, f2, f1, q1
    sync.wait f1, 1
    vld v1, s8, 0, 1, 255
    vadd.f32 v0, v0, v1
    saddi s7, s7, 16 ;; saddi s8, s8, 8
    loop s6, step
    vst v0, s5, 64, 1, 255 ;; sli s9, 128
    fence                                       // every send has left
    dma s9, f0, q0
    sync.wait f0, 1
    halt
.endop
