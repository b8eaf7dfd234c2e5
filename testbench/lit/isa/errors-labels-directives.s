// Label and directive errors.
// RUN: not tpu-as %s -o %t 2>&1 | FileCheck %s

// CHECK: errors-labels-directives.s:[[@LINE+1]]:9: error: undefined label 'nowhere'
    jmp nowhere
top:
// CHECK: errors-labels-directives.s:[[@LINE+1]]:1: error: label 'top' is already defined on line [[@LINE-1]]
top: halt
// CHECK: errors-labels-directives.s:[[@LINE+1]]:9: error: branch target 1000 is past the end of the program
    jmp 1000
// CHECK: errors-labels-directives.s:[[@LINE+1]]:1: error: unknown directive '.bogus'
.bogus 1
// CHECK: errors-labels-directives.s:[[@LINE+1]]:34: error: unknown dtype 'f33'
.buffer a, shape=[8, 128], dtype=f33, addr=0
// CHECK: errors-labels-directives.s:[[@LINE+2]]:55: error: buffer 'c' [0x1000, 0x2000) overlaps buffer 'b' [0x0, 0x1000000) in hbm
.buffer b, shape=[1024, 4096], dtype=f32, addr=0
.buffer c, shape=[8, 128], dtype=f32, space=hbm, addr=0x1000
// CHECK: errors-labels-directives.s:[[@LINE+1]]:42: error: unknown key 'colour' for '.buffer'
.buffer d, shape=[8], dtype=f32, addr=0, colour=red
// CHECK: errors-labels-directives.s:[[@LINE+1]]:1: error: '.words' must follow a '.data' line
.words 1, 2
// CHECK: errors-labels-directives.s:[[@LINE+1]]:53: error: inner 0 is out of range (1..4294967295)
.dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=0
// CHECK: errors-labels-directives.s:[[@LINE+1]]:1: error: '.endop' without an open '.op'
.endop
// CHECK: errors-labels-directives.s:[[@LINE+1]]:1: error: '.op never_closed' is never closed by '.endop'
.op never_closed
    halt
