// What a trace asks of a machine, read off the generated module: instruction
// and dot counts, dot FLOPs, and the bytes of weights, KV caches, other inputs
// and outputs. Architects use it for roofline bounds (a decode step cannot be
// faster than weight + cache bytes / HBM bandwidth).
#pragma once

#include <cstdint>
#include <string>

#include "traces/tracegen/LlamaGraph.h"

namespace tpusim::traces {

struct TraceSummary {
  int64_t instructions = 0;  // in every computation, regions included
  int64_t dots = 0;
  int64_t dotFlops = 0;        // 2 * result elements * contracted size, summed over dots
  int64_t weightBytes = 0;     // parameters named params[...]
  int64_t cacheBytes = 0;      // parameters named cache[...]
  int64_t optimizerBytes = 0;  // parameters named opt_state... (train step)
  int64_t inputBytes = 0;      // the other parameters (tokens or x, pos, step)
  int64_t outputBytes = 0;
};

TraceSummary summarize(const LlamaTrace& trace);
// "key value" lines, one per field, stable order; optimizer_state_bytes only
// when there is optimizer state.
std::string formatSummary(const TraceSummary& s);

}  // namespace tpusim::traces
