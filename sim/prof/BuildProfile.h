// Builds the profile of a finished run from its per-op counters
// (sim::SimResult::ops: cycles, stalls by cause, MXU/VPU FLOPs, HBM and VMEM
// bytes), the program's debug map and cost table, the chip preset's peaks,
// and what only the compiler knew (HLO opcodes, buffer assignment), which the
// tool passes in ProfileInputs.
#pragma once

#include <map>
#include <string>

#include "isa/Program.h"
#include "isa/target/ChipConfig.h"
#include "sim/chip/Simulation.h"
#include "sim/prof/OpCategory.h"
#include "sim/prof/Profile.h"
#include "sim/prof/Summarize.h"

namespace tpusim::prof {

struct ProfileInputs {
  std::string program;                       // file name, for the report
  std::map<std::string, HloOpFacts> hloOps;  // by HLO instruction name (empty: names decide)
  MemoryProfile memory;                      // steps + buffers + capacity, or !present
  PodProfile pod;                            // a multi-chip run, or !present
  std::string trace;                         // the trace file's name, if one is written
};

Profile buildProfile(const sim::SimResult& run, const isa::Program& program,
                     const target::ChipConfig& chip, const ProfileInputs& inputs);

}  // namespace tpusim::prof
