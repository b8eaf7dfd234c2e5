// Result latency of every isa::LatencyClass: cycles from issue until a later
// bundle may read the result. The fields are generated from
// isa/LatencyClasses.def (preset key "latency.<presetKey>"), so a new latency
// class appears here, in the reader, the writer and the docs by itself; every
// preset must then give it a value.
// Ownership: the ISA owner adds classes in isa/LatencyClasses.def; change only
// defaultLatency() here.
#pragma once

#include <array>

#include "isa/Isa.h"
#include "isa/target/Params.h"

namespace tpusim::target {

// A plausible default for structs built in code (tests); presets set every one.
constexpr int64_t defaultLatency(isa::LatencyClass c) {
  using L = isa::LatencyClass;
  switch (c) {
    case L::VectorAlu:
      return 2;
    case L::VectorTrans:
      return 8;
    case L::VectorLoad:
    case L::MxuPop:
    case L::ScalarMem:
      return 2;
    case L::XluShort:
    case L::XluReduce:
    case L::XluTranspose:
      return 8;
    default:
      return 1;
  }
}

struct LatencyConfig {
  std::array<int64_t, isa::kNumLatencyClasses> cycles = [] {
    std::array<int64_t, isa::kNumLatencyClasses> a{};
    for (int i = 0; i < isa::kNumLatencyClasses; ++i)
      a[i] = defaultLatency(static_cast<isa::LatencyClass>(i));
    return a;
  }();

  int64_t of(isa::LatencyClass c) const { return cycles[static_cast<int>(c)]; }
  int64_t& of(isa::LatencyClass c) { return cycles[static_cast<int>(c)]; }

  template <class V>
  void visit(V& v) {
    for (int i = 0; i < isa::kNumLatencyClasses; ++i) {
      const isa::LatencyInfo& info = isa::latencyInfo(static_cast<isa::LatencyClass>(i));
      v.field(std::string(info.presetKey), cycles[i], "cycles", std::string(info.doc), 0, 4096);
    }
  }

  void check(ConfigProblems&) const {}
};

}  // namespace tpusim::target
