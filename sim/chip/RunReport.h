// What a run produced, as the stats JSON (stable key order, nothing
// host-dependent, so two runs diff clean) and the human summary tpusim prints.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/chip/Simulation.h"

namespace tpusim::sim {

struct RunInfo {
  std::string program;  // file name
  std::string mode;     // "functional" or "timing"
  // Rows of the summary's per-op table: the ops with the most cycles first
  // (ties: debug-map order); 0 shows every op in debug-map order.
  int topOps = 20;
};

nlohmann::ordered_json statsJson(const SimResult& r, const target::ChipConfig& chip,
                                 const RunInfo& info);

// The summary: cycles, simulated time, MXU utilization, HBM bandwidth, top
// stall causes, the per-op table. `hostSeconds` > 0 adds the simulation rate.
std::string summaryText(const SimResult& r, const target::ChipConfig& chip, const RunInfo& info);

}  // namespace tpusim::sim
