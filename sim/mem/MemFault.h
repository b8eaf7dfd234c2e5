// A memory access that falls outside a memory: what was accessed and where.
// Storage classes return one instead of crashing so that the simulator can
// turn it into a fault report (cycle, bundle, op) at the point of the access.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "isa/DmaDescriptor.h"

namespace tpusim::sim::mem {

struct MemFault {
  isa::MemorySpace space = isa::MemorySpace::Hbm;
  int core = -1;          // owning core for VMEM/SMEM, -1 for HBM
  uint64_t address = 0;   // bytes (SMEM word accesses report word * 4)
  uint64_t size = 0;      // bytes
  uint64_t capacity = 0;  // bytes
  bool write = false;

  // "vmem (core 0) write of 512 bytes at 0x8000000 is out of bounds (capacity 0x8000000 bytes)"
  std::string describe() const;
};

using MaybeFault = std::optional<MemFault>;

}  // namespace tpusim::sim::mem
