// The multi-chip ops assemble, disassemble and reassemble byte for byte, and
// their operand errors are clear.
// RUN: tpu-as %s -o %t.tpuprog
// RUN: tpu-objdump -d --no-annotate %t.tpuprog | FileCheck %s
// RUN: tpu-objdump %t.tpuprog > %t.s
// RUN: tpu-as %t.s -o %t2.tpuprog
// RUN: cmp %t.tpuprog %t2.tpuprog
// RUN: tpu-as %src/isa/samples/ici/ring_allreduce.s -o %t.ring.tpuprog
// RUN: tpu-objdump %t.ring.tpuprog > %t.ring.s
// RUN: tpu-as %t.ring.s -o %t.ring2.tpuprog
// RUN: cmp %t.ring.tpuprog %t.ring2.tpuprog
// RUN: not tpu-as %S/Inputs/ici-ops-errors.s -o %t.bad 2>&1 | FileCheck --check-prefix=ERR %s

// CHECK: chip.id s1
// CHECK: sli s0, 0 ;; chip.count s2
// CHECK: dma.remote s0, s3, f2, f63, q3
// CHECK: sync.remote s3, f4, 65535
    chip.id s1
    chip.count s2 ;; sli s0, 0
    dma.remote s0, s3, f2, f63, q3
    sync.remote s3, f4, 65535
    halt

// ERR: error: 'dma.remote' takes 5 operands
// ERR: error: operand 5 of 'dma.remote' must be a DMA queue
// ERR: error: 'sync.remote' takes 3 operands
// ERR: error: no free misc slot for 'chip.count'
