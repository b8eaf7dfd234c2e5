// Matrix units: how many per core, the array size N, result-buffer slots.
// The cycle behaviour of an MXU is fixed by isa/README.md; only these sizes vary.
// Ownership: the engineer who owns this unit may add a field here. Add it with
// its key, unit, one-line doc and limits in visit(), give it a value and a
// "sources" entry in every sim/chips/*.json (non-extending presets must list
// every field), then regenerate docs/presets.md with
// `build/bin/tpusim-config --doc > docs/presets.md`.
#pragma once

#include "isa/Isa.h"
#include "isa/target/Params.h"

namespace tpusim::target {

struct MxuConfig {
  int64_t count = 4;
  int64_t size = 128;
  int64_t acc_slots = 16;
  int64_t int8_rate = 1;

  template <class V>
  void visit(V& v) {
    v.field("count", count, "count", "MXUs per core", 1, isa::kMaxMxus);
    v.field("size", size, "elements", "MXU array size N: N x N MACs, power of two", 4, 256);
    v.field("acc_slots", acc_slots, "count", "result-buffer slots a0.. per MXU (8 x N f32 each)", 1,
            isa::kMaxAccSlots);
    v.field("int8_rate", int8_rate, "ratio",
            "int8 ops per bf16 FLOP at peak (2 where int8 is marketed at twice the bf16 peak): "
            "2 gives the MXU the packed int8 mode (mxu.*.s8x2, two int8 per 16-bit value along "
            "K), 1 runs int8 at the bf16 rate only",
            1, 2);
  }

  void check(ConfigProblems& p) const {
    p.require(isPowerOfTwo(size), "size", "must be a power of two");
  }
};

}  // namespace tpusim::target
