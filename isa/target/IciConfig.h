// Inter-chip interconnect (used by the multi-chip system of a later issue).
// Ownership: the engineer who owns this unit may add a field here. Add it with
// its key, unit, one-line doc and limits in visit(), give it a value and a
// "sources" entry in every sim/chips/*.json (non-extending presets must list
// every field), then regenerate docs/presets.md with
// `build/bin/tpusim-config --doc > docs/presets.md`.
#pragma once

#include <string>

#include "isa/target/Params.h"

namespace tpusim::target {

struct IciConfig {
  int64_t links = 4;
  double link_bytes_per_second = 4.5e10;
  int64_t latency_cycles = 1500;
  std::string topology = "2d_torus";

  template <class V>
  void visit(V& v) {
    v.field("links", links, "count", "ICI links per chip", 0, 16);
    v.field("link_bytes_per_second", link_bytes_per_second, "B/s", "one-way bandwidth of one link",
            0, 1e13);
    v.field("latency_cycles", latency_cycles, "cycles",
            "core cycles for one hop (first byte out to first byte in)", 0, 1000000);
    v.field("topology", topology, "-", "\"2d_torus\" or \"3d_torus\"");
  }

  int64_t dimensions() const { return topology == "3d_torus" ? 3 : topology == "2d_torus" ? 2 : 0; }

  void check(ConfigProblems& p) const {
    p.require(dimensions() != 0, "topology", "must be \"2d_torus\" or \"3d_torus\"");
    if (dimensions() != 0)
      p.require(links == 2 * dimensions(), "links",
                "a " + topology + " needs " + std::to_string(2 * dimensions()) +
                    " links per chip (one per neighbour)");
  }
};

}  // namespace tpusim::target
