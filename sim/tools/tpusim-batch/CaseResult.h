// What one case's run produced, reduced from tpusim's stats JSON to what a
// sweep table and a golden need. Host-independent (no host time), so a run
// spread over MPI ranks gives the same results as a local one.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tpusim::batch {

struct CaseResult {
  std::string name;
  // "halted", "fault: KIND", or "error" (tpusim wrote no stats: a compile or
  // input error; `error` has its message).
  std::string status;
  std::string error;
  int64_t cycles = 0;
  double simulatedSeconds = 0;
  double mxuUtilization = 0;
  double hbmBytesPerSecond = 0;  // achieved
  double hbmUtilization = 0;     // of the preset's peak
  int64_t dmaBytes = 0;
  std::vector<std::pair<std::string, int64_t>> topOps;  // most cycles first
  // The golden record: status, cycles, per-core bundles and stalls, per-op
  // cycles, MXU utilization, DMA bytes (nlohmann::json: keys sorted).
  nlohmann::json record;
  std::vector<std::string> warnings;  // tpusim's warnings of a halted run
  double hostSeconds = 0;             // wall time of the run; shown in progress, never in tables

  bool ran() const { return status != "error"; }
};

// The fault kind of a "fault: KIND" status, "" otherwise.
std::string faultKind(const std::string& status);

// Builds a result from tpusim's stats JSON.
CaseResult resultFromStats(const std::string& name, const nlohmann::json& stats);

// Round trip through JSON (MPI ranks send results this way).
nlohmann::json resultToJson(const CaseResult& r);
CaseResult resultFromJson(const nlohmann::json& j);

}  // namespace tpusim::batch
