// Inter-chip interconnect: the links of one chip and the pod they form
// (modelled by sim/ici; a system of chips is built with `tpusim --topology`).
// Ownership: the engineer who owns this unit may add a field here. Add it with
// its key, unit, one-line doc and limits in visit(), give it a value and a
// "sources" entry in every sim/chips/*.json (non-extending presets must list
// every field), then regenerate docs/presets.md with
// `build/bin/tpusim-config --doc > docs/presets.md`.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "isa/target/Params.h"

namespace tpusim::target {

struct IciConfig {
  int64_t links = 4;
  double link_bytes_per_second = 4.5e10;
  int64_t latency_cycles = 1500;
  std::string topology = "2d_torus";
  std::string pod_shape = "16x16";
  int64_t wrap_multiple = 16;
  double ingress_bytes_per_second = 8.192e11;
  int64_t buffer_bytes = 98304;

  template <class V>
  void visit(V& v) {
    v.field("links", links, "count", "ICI links per chip", 0, 16);
    v.field("link_bytes_per_second", link_bytes_per_second, "B/s", "one-way bandwidth of one link",
            0, 1e13);
    v.field("latency_cycles", latency_cycles, "cycles",
            "core cycles for one hop (first byte out to first byte in)", 0, 1000000);
    v.field("topology", topology, "-", "\"2d_torus\" or \"3d_torus\"");
    v.field(
        "pod_shape", pod_shape, "chips",
        "the largest slice, chips per torus dimension (\"16x16\"); a --topology must fit in it");
    v.field("wrap_multiple", wrap_multiple, "chips",
            "a slice dimension has wraparound links when its size is a multiple of this (a whole "
            "torus dimension, or whole cubes joined by optical switches)",
            1, 1024);
    v.field("ingress_bytes_per_second", ingress_bytes_per_second, "B/s",
            "rate at which a chip writes the bytes arriving over all its links into its HBM or "
            "VMEM; a receiver slower than its incoming flows backs them up to their senders",
            1, 1e14);
    v.field("buffer_bytes", buffer_bytes, "bytes",
            "input buffer of one link's receiving port: credit-based flow control lets a link "
            "carry at most this many bytes per credit round trip (2 x latency_cycles)",
            1, int64_t(1) << 40);
  }

  // One link's sustained rate in bytes per core cycle: its bandwidth, or less
  // when the input buffer cannot cover the credit round trip.
  double linkBytesPerCycle(double clockHz) const {
    double rate = link_bytes_per_second / clockHz;
    if (latency_cycles > 0)
      rate = std::min(rate, double(buffer_bytes) / double(2 * latency_cycles));
    return rate;
  }

  // pod_shape as numbers; empty when it is malformed.
  std::vector<int64_t> podDims() const {
    std::vector<int64_t> dims;
    size_t pos = 0;
    while (pos <= pod_shape.size()) {
      size_t x = pod_shape.find('x', pos);
      std::string part =
          pod_shape.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
      if (part.empty() || part.size() > 6 ||
          part.find_first_not_of("0123456789") != std::string::npos)
        return {};
      dims.push_back(std::stoll(part));
      if (dims.back() < 1) return {};
      if (x == std::string::npos) break;
      pos = x + 1;
    }
    return dims;
  }

  int64_t dimensions() const { return topology == "3d_torus" ? 3 : topology == "2d_torus" ? 2 : 0; }

  void check(ConfigProblems& p) const {
    p.require(dimensions() != 0, "topology", "must be \"2d_torus\" or \"3d_torus\"");
    if (dimensions() != 0)
      p.require(links == 2 * dimensions(), "links",
                "a " + topology + " needs " + std::to_string(2 * dimensions()) +
                    " links per chip (one per neighbour)");
    if (dimensions() != 0)
      p.require(int64_t(podDims().size()) == dimensions(), "pod_shape",
                "must be " + std::to_string(dimensions()) +
                    " positive sizes joined by 'x' (\"16x16\", \"16x16x16\") for a " + topology);
  }
};

}  // namespace tpusim::target
