// An SMEM load past the end of SMEM (v5e: 1 MiB = 262144 words).
// RUN: not tpusim %s --chip v5e 2>&1 >/dev/null | FileCheck %s
// CHECK: fault [smem-out-of-bounds]: SMEM read of word 262150 is out of bounds (SMEM holds 262144 words)
// CHECK: bundle: 1
// CHECK: slot:   scalar0 (sld)
// CHECK: unit:   smem
// CHECK: address: 0x100018
  sli s1, 262140
  sld s2, s1, 10
  halt
