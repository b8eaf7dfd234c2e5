// A multi-chip run as stats JSON (one group per device, one entry per link;
// stable key order, nothing host-dependent) and as the summary tpusim prints:
// the step (slowest chip), each chip's cycles, the links' bytes and
// utilization.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/chip/RunReport.h"
#include "sim/system/System.h"

namespace tpusim::sim {

nlohmann::ordered_json systemStatsJson(const SystemResult& r, const target::ChipConfig& chip,
                                       const RunInfo& info);
std::string systemSummaryText(const SystemResult& r, const target::ChipConfig& chip,
                              const RunInfo& info);

}  // namespace tpusim::sim
