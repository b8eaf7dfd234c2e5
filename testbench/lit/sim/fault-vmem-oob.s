// A vector load past the end of VMEM is a fault naming cycle, bundle, slot,
// op, unit and address; stats and trace are still written.
// RUN: rm -f %t.stats.json %t.trace.json
// RUN: not tpusim %s --chip v5e --stats %t.stats.json --trace %t.trace.json 2>&1 >/dev/null | FileCheck %s
// RUN: FileCheck --check-prefix=STATS %s < %t.stats.json
// RUN: FileCheck --check-prefix=TRACE %s < %t.trace.json
// CHECK: tpusim: error: fault [vmem-out-of-bounds]: vector load of VMEM row 262144 (sublane 0) is out of bounds (VMEM has 262144 rows)
// CHECK-NEXT: cycle:  1
// CHECK-NEXT: core:   0
// CHECK-NEXT: bundle: 1
// CHECK-NEXT: slot:   vld0 (vld)
// CHECK-NEXT: op:     oob_kernel
// CHECK-NEXT: unit:   vmem
// CHECK-NEXT: address: 0x8000000
// STATS: "halted": false,
// STATS: "kind": "vmem-out-of-bounds",
// STATS: "bundle": 1,
// STATS: "total_cycles": 1,
// TRACE: "fault: vmem-out-of-bounds"
.op oob_kernel
  sli s1, 262144
  vld v1, s1, 0, 1, 255
  halt
.endop
