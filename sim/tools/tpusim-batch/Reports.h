// What tpusim-batch writes: the sweep table (CSV, JSON), and the results of
// `check` as text (stdout), JUnit XML (for CI systems) and Markdown (for a CI
// bot to post).
#pragma once

#include <string>
#include <vector>

#include "sim/tools/tpusim-batch/CaseResult.h"
#include "sim/tools/tpusim-batch/Golden.h"
#include "sim/tools/tpusim-batch/Manifest.h"

namespace tpusim::batch {

// How many ops the table lists per case.
constexpr size_t kTableTopOps = 3;

std::string tableCsv(const std::vector<const Case*>& cases, const std::vector<CaseResult>& results);
std::string tableJson(const Manifest& m, const std::vector<const Case*>& cases,
                      const std::vector<CaseResult>& results);
// The table for a terminal: aligned columns.
std::string tableText(const std::vector<const Case*>& cases,
                      const std::vector<CaseResult>& results);

// One case's check result as text lines (what changed, the ops first by size).
std::string checkText(const CaseCheck& c);
std::string checkJunit(const Manifest& m, const std::vector<CaseCheck>& checks);
std::string checkMarkdown(const Manifest& m, const std::vector<CaseCheck>& checks);

// A percentage change for people: "+1.2%", "-0.4%", "new" (from 0).
std::string percent(double relative);

}  // namespace tpusim::batch
