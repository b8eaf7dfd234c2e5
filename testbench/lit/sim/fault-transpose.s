// Popping the transpose unit before 16 pushes is a fault.
// RUN: not tpusim %s --chip v5e 2>&1 >/dev/null | FileCheck %s
// CHECK: fault [xlu-transpose]: transpose pop before the block is complete (1 of 16 pushes)
// CHECK: slot:   xlu0 (xlu.tr.pop)
  xlu.tr.push v1
  xlu.tr.pop v2
  halt
