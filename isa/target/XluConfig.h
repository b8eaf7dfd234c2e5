// Cross-lane unit: number of units and how long each kind of op occupies one.
// Ownership: the engineer who owns this unit may add a field here. Add it with
// its key, unit, one-line doc and limits in visit(), give it a value and a
// "sources" entry in every sim/chips/*.json (non-extending presets must list
// every field), then regenerate docs/presets.md with
// `build/bin/tpusim-config --doc > docs/presets.md`.
#pragma once

#include "isa/target/Params.h"

namespace tpusim::target {

struct XluConfig {
  int64_t count = 1;
  int64_t permute_interval = 8;
  int64_t reduce_interval = 8;
  int64_t transpose_push_interval = 8;
  int64_t transpose_pop_interval = 8;

  template <class V>
  void visit(V& v) {
    v.field("count", count, "count", "XLU units per core; ops go to the first free one", 1, 8);
    v.field("permute_interval", permute_interval, "cycles",
            "cycles an XLU is busy per rotate or permute", 1, 1024);
    v.field("reduce_interval", reduce_interval, "cycles",
            "cycles an XLU is busy per cross-lane reduction", 1, 1024);
    v.field("transpose_push_interval", transpose_push_interval, "cycles",
            "cycles the transpose unit is busy per xlu.tr.push (8 rows)", 1, 1024);
    v.field("transpose_pop_interval", transpose_pop_interval, "cycles",
            "cycles the transpose unit is busy per xlu.tr.pop (8 rows)", 1, 1024);
  }

  void check(ConfigProblems&) const {}
};

}  // namespace tpusim::target
