// An endless loop stops at --max-cycles with a fault; stats are written.
// RUN: not tpusim %s --chip v5e --max-cycles=1000 --stats %t.json 2>&1 >/dev/null | FileCheck %s
// RUN: FileCheck --check-prefix=STATS %s < %t.json
// CHECK: fault [max-cycles]: the run exceeded --max-cycles=1000
// CHECK: unit:   core
// STATS: "kind": "max-cycles"
// STATS: "branch": {{[1-9][0-9]*}}
top:
  jmp top
