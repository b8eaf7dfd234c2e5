// What the graph compiler needs to know about a chip: MXUs, VMEM, HBM capacity
// and bandwidth, peak FLOP/s, clock, vector registers. Read from a chip preset
// (sim/chips/<name>.json) by its keys, without linking sim/ (layering:
// compiler -> kernels -> isa). The simulator validates presets fully; here a
// missing or ill-typed field the compiler needs is an error naming file and key.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim::lower {

class TargetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TargetDescription {
  std::string name;        // the preset's "name"
  std::string sourcePath;  // the file it was read from ("" if built in memory)
  int64_t cores = 1;       // TensorCores per chip (core.cores)
  double clockHz = 0;      // core clock (core.clock_hz)
  int64_t vectorRegs = 0;  // vregs per core (core.vector_regs)
  int64_t mxuCount = 0;    // MXUs per core (mxu.count)
  int64_t mxuSize = 0;     // MXU rows = columns (mxu.size)
  int64_t int8Rate = 1;    // int8 MACs per bf16 MAC (mxu.int8_rate)
  int64_t vmemBytes = 0;   // per core (vmem.bytes)
  int64_t smemBytes = 0;   // per core (core.smem_bytes)
  int64_t hbmBytes = 0;    // per chip (hbm.capacity_bytes)
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

// `nameOrPath` is a path when it contains '/' or ends in ".json"; otherwise a
// preset name looked up as <dir>/<name>.json in every directory of
// $TPUSIM_CHIPS_DIR (':'-separated), then the source tree's sim/chips, as
// `tpusim --chip` does. "extends" in a file starts from the named preset.
// Throws TargetError ("file: error: key: message").
TargetDescription loadTarget(const std::string& nameOrPath);
// Parses preset JSON text; `what` names it in errors; `extendsDir` is where an
// "extends" is looked for first ("" = the search directories only).
TargetDescription parseTarget(const std::string& jsonText, const std::string& what,
                              const std::string& extendsDir = "");
// The directories searched for preset names, in order.
std::vector<std::string> targetSearchDirs();

}  // namespace tpusim::lower
