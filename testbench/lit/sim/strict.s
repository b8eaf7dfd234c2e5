// --strict turns a stall the schedule should have avoided into an error that
// names the bundle, slot, op and hazard; without it the stall is counted.
// RUN: not tpusim %s --chip v5e --strict 2>&1 >/dev/null | FileCheck %s
// RUN: tpusim %s --chip v5e --stats %t.json --quiet | FileCheck --check-prefix=LAX %s
// RUN: FileCheck --check-prefix=STATS %s < %t.json
// CHECK: fault [strict-hazard]: --strict: bundle 1 stalls 1 cycle(s) on operand_not_ready (valu0 vadd.f32); the schedule should have placed it later
// CHECK: bundle: 1
// CHECK: slot:   valu0 (vadd.f32)
// LAX: status          halted
// LAX: top stalls      operand_not_ready 1
// STATS: "operand_not_ready": 1,
  vimm v1, 1.0
  vadd.f32 v2, v1, v1
  halt
