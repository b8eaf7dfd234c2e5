#include "sim/mem/MemFault.h"

#include <fmt/format.h>

namespace tpusim::sim::mem {

std::string MemFault::describe() const {
  std::string where = isa::memorySpaceName(space);
  if (core >= 0) where += fmt::format(" (core {})", core);
  return fmt::format("{} {} of {} bytes at {:#x} is out of bounds (capacity {:#x} bytes)", where,
                     write ? "write" : "read", size, address, capacity);
}

}  // namespace tpusim::sim::mem
