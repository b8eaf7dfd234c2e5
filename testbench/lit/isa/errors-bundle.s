// Errors of whole bundles: slots over-subscribed, explicit slot conflicts,
// two writes to one register, two branches, too many distinct immediates.
// RUN: not tpu-as %s -o %t 2>&1 | FileCheck %s

// CHECK: errors-bundle.s:[[@LINE+1]]:32: error: no free mpush slot for 'mxu.mm.bf16' (a bundle has 1 mpush slot)
    mxu.wpush.bf16 mxu0, v1 ;; mxu.mm.bf16 mxu1, v2, a0

// CHECK: errors-bundle.s:[[@LINE+1]]:65: error: no free valu slot for 'vmov' (a bundle has 4 valu slots)
    vmov v1, v0 ;; vmov v2, v0 ;; vmov v3, v0 ;; vmov v4, v0 ;; vmov v5, v0

// CHECK: errors-bundle.s:[[@LINE+1]]:27: error: slot valu1 is already used by 'vmov'
    @valu1 vmov v1, v0 ;; @valu1 vmov v2, v0

// CHECK: errors-bundle.s:[[@LINE+1]]:5: error: 'vmov' cannot go in slot @vld0 (it needs a valu slot)
    @vld0 vmov v1, v0

// CHECK: errors-bundle.s:[[@LINE+1]]:5: error: slot @valu9 does not exist (a bundle has 4 valu slots, @valu0..@valu3)
    @valu9 vmov v1, v0

// CHECK: errors-bundle.s:[[@LINE+1]]:20: error: register v1 is written twice in one bundle (also by 'vmov')
    vmov v1, v0 ;; vadd.f32 v1, v2, v3

// CHECK: errors-bundle.s:[[@LINE+1]]:19: error: register s3 is written twice in one bundle (also by 'loop')
x:  loop s3, x ;; sadd s3, s1, s2

// CHECK: errors-bundle.s:[[@LINE+1]]:14: error: two branches in one bundle (also 'jmp'); at most one is allowed
    jmp x ;; br.z s1, x

// CHECK: errors-bundle.s:[[@LINE+1]]:5: error: more than 4 distinct 32-bit immediates in one bundle (slot valu2 needs 0x3f800000)
    sli s1, 1 ;; sli s2, 2 ;; vimm v1, 3 ;; vimm v2, 4 ;; vimm v3, 1.0
