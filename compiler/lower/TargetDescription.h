// What the graph compiler needs to know about a chip: MXUs, VMEM, HBM capacity
// and bandwidth, peak FLOP/s, clock, vector registers: a view of the one chip
// description (isa/target, target::ChipConfig) that the simulator and the code
// generator read too. The whole description travels along (`chip`), so a pass
// that needs another field reads it there instead of parsing the preset again.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/target/ChipConfig.h"

namespace tpusim::lower {

class TargetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TargetDescription {
  target::ChipConfig chip;  // every field of the preset, overrides applied
  std::string name;         // the preset's "name"
  std::string sourcePath;   // the file it was read from ("" if built in memory)
  int64_t cores = 1;        // TensorCores per chip (core.cores)
  double clockHz = 0;       // core clock (core.clock_hz)
  int64_t vectorRegs = 0;   // vregs per core (core.vector_regs)
  int64_t mxuCount = 0;     // MXUs per core (mxu.count)
  int64_t mxuSize = 0;      // MXU rows = columns (mxu.size)
  int64_t int8Rate = 1;     // int8 MACs per bf16 MAC (mxu.int8_rate)
  int64_t vmemBytes = 0;    // per core (vmem.bytes)
  int64_t smemBytes = 0;    // per core (core.smem_bytes)
  int64_t hbmBytes = 0;     // per chip (hbm.capacity_bytes)
  // Peak HBM bandwidth in bytes/s: hbm.clock_hz x channels x pseudo_channels x
  // bus_bytes_per_clock (what the simulator's HBM model can deliver at best).
  double hbmBytesPerSecond = 0;
  // Cycles between transcendental ops per VPU lane (vpu.transcendental_interval),
  // the fusion cost model's price of exp/log/divide relative to an add.
  int64_t transcendentalInterval = 1;

  // Peak bf16 FLOP/s: cores x MXUs x size^2 MACs x 2 x clock.
  double peakFlopsPerSecond() const;
  // FLOPs per HBM byte where a matmul turns compute-bound.
  double criticalIntensity() const { return peakFlopsPerSecond() / hbmBytesPerSecond; }
  // One line per field, for --help-like listings and tests.
  std::string summary() const;
};

// The compiler's view of a loaded (validated) chip.
TargetDescription describeTarget(const target::ChipConfig& chip,
                                 const std::string& sourcePath = "");
// `nameOrPath` as `tpusim --chip` takes it (target::loadChip: a path, or a
// preset name looked up in $TPUSIM_CHIPS_DIR, then the source tree's sim/chips),
// with `overrides` ("section.field=value", as --set) applied.
// Throws TargetError with isa/target's message ("file:line:col: error: key: ...").
TargetDescription loadTarget(const std::string& nameOrPath,
                             const std::vector<std::string>& overrides = {});
// Parses preset JSON text; `what` names it in errors and is where a relative
// "extends" is resolved from.
TargetDescription parseTarget(const std::string& jsonText, const std::string& what);

}  // namespace tpusim::lower
