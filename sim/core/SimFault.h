// A fault stops the run with a report naming the cycle, core, bundle, slot,
// op (debug map), unit and address (isa/README.md, "Faults"). The core throws
// it from inside its thread; the Simulation driver catches it, stops SystemC
// and still writes the stats and trace gathered so far.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tpusim::sim {

struct FaultInfo {
  std::string kind;     // "vmem-out-of-bounds", "deadlock", "max-cycles", ...
  std::string message;  // what went wrong, in a sentence
  int64_t cycle = -1;
  int core = -1;
  int64_t bundle = -1;   // bundle index (pc)
  std::string slot;      // "valu1", "misc0", "" when not tied to a slot
  std::string op;        // mnemonic
  std::string opName;    // debug-map op the bundle belongs to ("" if none)
  std::string unit;      // "vmem", "smem", "mxu2", "dma", "scalar", ...
  int64_t address = -1;  // bytes, or row for VMEM (see message); -1 when none

  // The multi-line report printed by tpusim ("error: fault: ...").
  std::string report() const;
};

class SimFault : public std::runtime_error {
 public:
  explicit SimFault(FaultInfo info) : std::runtime_error(info.message), info_(std::move(info)) {}
  const FaultInfo& info() const { return info_; }

 private:
  FaultInfo info_;
};

}  // namespace tpusim::sim
