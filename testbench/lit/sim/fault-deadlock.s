// A sync.wait that nothing outstanding can ever satisfy is a deadlock, found
// at once (not after --max-cycles).
// RUN: not tpusim %s --chip v5e 2>&1 >/dev/null | FileCheck %s
// CHECK: fault [deadlock]: sync.wait f3, 2 can never be satisfied: the flag is 1 and 0 DMA(s) that signal it are outstanding
// CHECK: cycle:  1
// CHECK: bundle: 1
// CHECK: slot:   misc0 (sync.wait)
// CHECK: op:     waiter
.op waiter
  sync.signal f3, 1
  sync.wait f3, 2
  halt
.endop
