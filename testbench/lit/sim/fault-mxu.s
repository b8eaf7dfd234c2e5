// MXU program errors: more weight pushes than the array has rows, and an LHS
// dtype that differs from the latched weights.
// RUN: not tpusim %s --chip v5e 2>&1 >/dev/null | FileCheck %s
// RUN: not tpusim %S/Inputs/mxu-dtype.s --chip v5e 2>&1 >/dev/null | FileCheck --check-prefix=DTYPE %s
// CHECK: fault [mxu-fault]: {{.*}}staging overflow
// CHECK: bundle: 16
// CHECK: slot:   mpush0 (mxu.wpush.bf16)
// CHECK: unit:   mxu1
// DTYPE: fault [mxu-fault]: {{.*}}
// DTYPE: slot:   mpush0 (mxu.mm.bf16)
// DTYPE: unit:   mxu0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  mxu.wpush.bf16 mxu1, v0
  halt
