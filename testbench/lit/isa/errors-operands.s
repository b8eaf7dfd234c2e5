// Errors in single ops: unknown opcode, operand count, bad register, out of
// range. Every error of the file is reported, each with the source line and a caret.
// RUN: not tpu-as %s -o %t 2>&1 | FileCheck %s --strict-whitespace

// CHECK: errors-operands.s:[[@LINE+3]]:5: error: unknown opcode 'vaddd.f32' (did you mean 'vadd.f32'?)
// CHECK-NEXT: {{^}}    vaddd.f32 v1, v2, v3{{$}}
// CHECK-NEXT: {{^}}    ^{{$}}
    vaddd.f32 v1, v2, v3

// CHECK: errors-operands.s:[[@LINE+1]]:5: error: 'vadd.f32' takes 3 operands (vector register (v0..v63), vector register (v0..v63), vector register (v0..v63)), got 2
    vadd.f32 v1, v2

// CHECK: errors-operands.s:[[@LINE+1]]:23: error: 'halt' takes 0 operands, got 1
    sli s1, 0 ;; halt 3

// CHECK: errors-operands.s:[[@LINE+1]]:18: error: s32 does not exist: operand 3 of 'sadd' must be a scalar register (s0..s31)
    sadd s1, s2, s32

// CHECK: errors-operands.s:[[@LINE+1]]:18: error: operand 2 of 'vadd.f32' must be a vector register (v0..v63), got 's2'
    vadd.f32 v1, s2, v3

// CHECK: errors-operands.s:[[@LINE+1]]:14: error: v64 does not exist: operand 2 of 'vmov' must be a vector register (v0..v63)
    vmov v1, v64

// CHECK: errors-operands.s:[[@LINE+1]]:23: error: a64 does not exist: operand 3 of 'mxu.pop' must be an MXU result slot (a0..a63)
    mxu.pop v1, mxu0, a64

// CHECK: errors-operands.s:[[@LINE+1]]:19: error: immediate 40000 is out of range for operand 3 of 'saddi', a 16-bit signed immediate (-32768..32767)
    saddi s1, s2, 40000

// CHECK: errors-operands.s:[[@LINE+1]]:23: error: immediate 256 is out of range for operand 5 of 'vld', an 8-bit unsigned immediate (0..255)
    vld v1, s0, 0, 1, 256

// CHECK: errors-operands.s:[[@LINE+1]]:13: error: immediate 0x100000000 does not fit in 32 bits (operand 2 of 'sli')
    sli s1, 0x100000000

// CHECK: errors-operands.s:[[@LINE+1]]:15: error: mxu4 does not exist: operand 1 of 'mxu.latch' must be an MXU (mxu0..mxu3)
    mxu.latch mxu4

// CHECK: errors-operands.s:[[@LINE+1]]:13: error: f64 does not exist: operand 2 of 'dma' must be a sync flag (f0..f63)
    dma s1, f64, q0

// CHECK: errors-operands.s:[[@LINE+1]]:24: error: operand 3 of 'vunpack.s8' must be an integer (8-bit unsigned immediate (0..255)); only 32-bit immediates take float literals
    vunpack.s8 v1, v2, 1.5

// CHECK: errors-operands.s:[[@LINE+1]]:17: error: expected ',' or ';;' in the operands of 'sadd', found 's3'
    sadd s1, s2 s3

// CHECK: 14 errors generated.
