// Goldens: one record per case (CaseResult::record) in a JSON file beside the
// manifest, keys sorted so a change is a small, reviewable diff. `check`
// compares a run with them metric by metric, within the case's tolerance;
// `update` is the only writer.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/tools/tpusim-batch/CaseResult.h"
#include "sim/tools/tpusim-batch/Manifest.h"

namespace tpusim::batch {

// Case name -> record. A missing file is an empty map; a malformed one throws.
std::map<std::string, nlohmann::json> loadGoldens(const std::string& path);
// Writes every record (sorted keys, one field per line) atomically.
void saveGoldens(const std::string& path, const std::map<std::string, nlohmann::json>& goldens);

// One metric that moved.
struct MetricChange {
  std::string metric;         // cycles, stalls, bundles, ops, mxu_utilization, dma_bytes, status
  std::string path;           // "cycles", "cores/core0/stalls/sync_wait", "ops/elementwise", ...
  std::string before, after;  // as text ("absent" when one side lacks it)
  double relative = 0;        // (after - before) / before; inf when before is 0
  bool beyond = false;        // outside the tolerance
};

struct CaseCheck {
  std::string name;
  enum class Verdict { Pass, Changed, NoGolden, Failed } verdict = Verdict::Pass;
  std::string message;  // for NoGolden and Failed (the run's error or unexpected fault)
  std::vector<MetricChange> changes;  // every metric that moved, those beyond tolerance first
  double hostSeconds = 0;
  bool pass() const { return verdict == Verdict::Pass; }
  // The ops whose cycles moved, the largest change first.
  std::vector<const MetricChange*> opChanges() const;
};

// Compares one case's result with its golden (nullptr: none yet).
CaseCheck checkCase(const Case& c, const CaseResult& r, const nlohmann::json* golden);

// Whether a result may become a golden: it halted, or it faulted as the case
// expects. Otherwise the reason it may not.
std::string goldenProblem(const Case& c, const CaseResult& r);

}  // namespace tpusim::batch
