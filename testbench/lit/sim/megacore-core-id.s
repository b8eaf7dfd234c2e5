// On a megacore chip (v5p: 2 TensorCores) every core runs the same program;
// `core.id` lets it split the work. Each core fills one 8x128 s32 block with
// (its id + 1) * 7 in its own VMEM and copies it to its half of `out`, at an
// HBM offset patched into the DMA descriptor from the core id. On a 1-core
// chip only the first half is written.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: tpusim %s --chip v5p --quiet --output-dir %t/v5p | FileCheck %s
// RUN: python3 %S/Inputs/npy_s32_values.py %t/v5p/out.npy | FileCheck --check-prefix=TWO %s
// RUN: tpusim %s --chip v5e --quiet --output-dir %t/v5e | FileCheck %s
// RUN: python3 %S/Inputs/npy_s32_values.py %t/v5e/out.npy | FileCheck --check-prefix=ONE %s
// CHECK: status          halted
// TWO: rows 0-7: 7
// TWO-NEXT: rows 8-15: 14
// ONE: rows 0-7: 7
// ONE-NEXT: rows 8-15: 0

.buffer out, shape=[16, 128], dtype=s32, space=hbm, addr=0x0, role=output
.dma_descriptor 0, src=vmem:0x0, dst=hbm:0x0, inner=4096, counts=[], src_strides=[], dst_strides=[]

.symbol main
main:
    core.id s1 ;; sli s0, 0
    saddi s2, s1, 1 ;; sshli s3, s1, 12          // s3 = id * 4096 bytes
    smuli s2, s2, 7 ;; sst s3, s0, 3             // descriptor word 3: destination address
    vbcast v0, s2
    vst v0, s0, 0, 1, 255
    dma s0, f0, q0
    sync.wait f0, 1
    halt
