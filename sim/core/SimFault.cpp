#include "sim/core/SimFault.h"

#include <fmt/format.h>

namespace tpusim::sim {

std::string FaultInfo::report() const {
  std::string out = fmt::format("fault [{}]: {}\n", kind, message);
  if (cycle >= 0) out += fmt::format("  cycle:  {}\n", cycle);
  if (core >= 0) out += fmt::format("  core:   {}\n", core);
  if (bundle >= 0) out += fmt::format("  bundle: {}\n", bundle);
  if (!op.empty())
    out += fmt::format("  slot:   {} ({})\n", slot, op);
  else if (!slot.empty())
    out += fmt::format("  slot:   {}\n", slot);
  out += fmt::format("  op:     {}\n", opName.empty() ? "<none in the debug map>" : opName);
  if (!unit.empty()) out += fmt::format("  unit:   {}\n", unit);
  if (address >= 0) out += fmt::format("  address: {:#x}\n", address);
  return out;
}

}  // namespace tpusim::sim
