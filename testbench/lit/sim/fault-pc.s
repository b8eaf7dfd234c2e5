// Running off the end of the program (no halt) is a fault.
// RUN: not tpusim %s --chip v5e 2>&1 >/dev/null | FileCheck %s
// CHECK: fault [pc-out-of-range]: execution reached bundle 2, outside the program (0..1)
  vimm v1, 1.0
  vimm v2, 2.0
