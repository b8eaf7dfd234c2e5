// Results and counters of the DMA engines (sim/dma/DmaEngine.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "isa/DmaDescriptor.h"
#include "sim/mem/MemFault.h"

namespace tpusim::sim::dma {

// What issue() says. Not ok: nothing was queued; `message` is a full sentence
// naming the core, queue, descriptor number, space and address.
struct DmaStatus {
  enum class Code { Ok, QueueFull, OutOfBounds, Malformed, Unsupported };
  Code code = Code::Ok;
  std::string message;
  std::optional<mem::MemFault> fault;  // for OutOfBounds: the range that does not fit

  bool ok() const { return code == Code::Ok; }
};

// A descriptor that completed: its flag is incremented at `cycle`.
struct DmaCompletion {
  int core = 0, queue = 0, flag = 0;
  uint64_t descriptor = 0;  // per-queue issue number, from 0
  uint64_t issueCycle = 0;
  uint64_t cycle = 0;  // completion: the flag increment happens at this cycle
  uint64_t bytes = 0;
};

struct DmaQueueStats {
  uint64_t descriptors = 0;  // completed
  uint64_t requests = 0;
  uint64_t bytes = 0;
  uint64_t busyCycles = 0;  // cycles with at least one descriptor issued and not completed
};

struct DmaSpaceBytes {
  uint64_t read = 0, written = 0;
};

struct DmaCoreStats {
  std::vector<DmaQueueStats> queues;
  // Bytes the DMA read from / wrote to each space, indexed by isa::MemorySpace.
  std::array<DmaSpaceBytes, isa::kNumMemorySpaces> spaces{};
};

}  // namespace tpusim::sim::dma
