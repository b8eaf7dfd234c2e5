// Vector unit throughput beyond the per-class latencies (LatencyConfig).
// Ownership: the engineer who owns this unit may add a field here. Add it with
// its key, unit, one-line doc and limits in visit(), give it a value and a
// "sources" entry in every sim/chips/*.json (non-extending presets must list
// every field), then regenerate docs/presets.md with
// `build/bin/tpusim-config --doc > docs/presets.md`.
#pragma once

#include "isa/target/Params.h"

namespace tpusim::target {

struct VpuConfig {
  int64_t transcendental_interval = 4;

  template <class V>
  void visit(V& v) {
    v.field("transcendental_interval", transcendental_interval, "cycles",
            "cycles the transcendental unit (EUP) stays busy per op (exp, log, rsqrt, tanh, ...)",
            1, 256);
  }

  void check(ConfigProblems&) const {}
};

}  // namespace tpusim::target
