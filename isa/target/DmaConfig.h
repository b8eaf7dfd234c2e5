// DMA engines: queues per core, how descriptors are split into requests and
// how many requests may be in flight.
// Ownership: the engineer who owns this unit may add a field here. Add it with
// its key, unit, one-line doc and limits in visit(), give it a value and a
// "sources" entry in every sim/chips/*.json (non-extending presets must list
// every field), then regenerate docs/presets.md with
// `build/bin/tpusim-config --doc > docs/presets.md`.
#pragma once

#include <string>

#include "isa/Isa.h"
#include "isa/target/Params.h"

namespace tpusim::target {

struct DmaConfig {
  int64_t queues = 4;
  int64_t queue_depth = 8;
  int64_t request_bytes = 512;
  int64_t max_outstanding_requests = 64;
  int64_t issue_latency = 32;
  int64_t vmem_bytes_per_cycle = 512;
  std::string model = "fast";

  template <class V>
  void visit(V& v) {
    v.field("queues", queues, "count",
            "DMA queues per core (q0..); descriptors of one queue complete in order", 1,
            isa::kMaxDmaQueues);
    v.field("queue_depth", queue_depth, "descriptors",
            "outstanding descriptors per queue before a dma op stalls (DMA queue full)", 1, 1024);
    v.field("request_bytes", request_bytes, "bytes",
            "size of the memory requests a descriptor is split into (power of two)", 32, 65536);
    v.field("max_outstanding_requests", max_outstanding_requests, "requests",
            "memory requests one core's DMA engine may have in flight", 1, 65536);
    v.field("issue_latency", issue_latency, "cycles",
            "core cycles from dma issue until its first memory request", 0, 100000);
    v.field("vmem_bytes_per_cycle", vmem_bytes_per_cycle, "bytes/cycle",
            "VMEM-side DMA bandwidth per core (separate ports from vector loads/stores)", 1,
            1 << 20);
    v.field("model", model, "-",
            "simulator implementation, not hardware: \"fast\" counts a descriptor's requests "
            "from the start of their writes on and finishes them in bulk; \"detailed\" keeps "
            "one event per request (same cycles and stats, slower)");
  }

  void check(ConfigProblems& p) const {
    p.require(isPowerOfTwo(request_bytes), "request_bytes", "must be a power of two");
    p.require(model == "fast" || model == "detailed", "model", "must be \"fast\" or \"detailed\"");
  }
};

}  // namespace tpusim::target
