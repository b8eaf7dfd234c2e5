// How far a metric may move from its golden before `tpusim-batch check`
// fails. Exact (0) unless the manifest says otherwise, per case or per
// metric: a relative bound, |now - golden| <= rel * |golden|.
#pragma once

#include <map>
#include <string>

namespace tpusim::batch {

// The metric classes a golden holds; a tolerance names one of them.
// cycles: total cycles; stalls: per-core stall counts; bundles: per-core
// bundles issued; ops: per-op cycles; mxu_utilization; dma_bytes.
const char* const kMetrics[] = {"cycles", "stalls",          "bundles",
                                "ops",    "mxu_utilization", "dma_bytes"};

struct Tolerance {
  double all = 0;                          // applies to every metric without its own
  std::map<std::string, double> byMetric;  // metric -> relative bound
  double of(const std::string& metric) const {
    auto it = byMetric.find(metric);
    return it == byMetric.end() ? all : it->second;
  }
  bool exact() const {
    if (all != 0) return false;
    for (const auto& [m, v] : byMetric)
      if (v != 0) return false;
    return true;
  }
};

}  // namespace tpusim::batch
