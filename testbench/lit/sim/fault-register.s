// v40 does not exist on v4 (32 vector registers); valu slot 2 is not enabled
// on v4 (2 vector ALU slots). Both fault when the bundle is reached.
// RUN: not tpusim %s --chip v4 2>&1 >/dev/null | FileCheck %s
// RUN: not tpusim %s --chip v4 --set core.vector_regs=64 2>&1 >/dev/null | FileCheck --check-prefix=SLOT %s
// RUN: tpusim %s --chip v5e --quiet | FileCheck --check-prefix=OK %s
// CHECK: fault [invalid-bundle]: v40 does not exist on this chip (32 vector registers)
// CHECK: bundle: 1
// SLOT: fault [invalid-bundle]: slot valu2 is not enabled on this chip (2 valu slots)
// SLOT: bundle: 2
// OK: status          halted
  vimm v1, 1.0
  vadd.f32 v40, v1, v1
  @valu2 vadd.f32 v3, v1, v1
  halt
