#include "sim/tools/tpusim-batch/Golden.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace tpusim::batch {
using nlohmann::json;

std::map<std::string, json> loadGoldens(const std::string& path) {
  std::map<std::string, json> out;
  std::ifstream in(path);
  if (!in) return out;
  std::stringstream ss;
  ss << in.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    throw std::runtime_error(
        fmt::format("{}: not valid JSON ({}); goldens are written by "
                    "`tpusim-batch update` only",
                    path, e.what()));
  }
  if (!j.is_object())
    throw std::runtime_error(fmt::format("{}: expected an object of cases", path));
  for (const auto& [k, v] : j.items()) out[k] = v;
  return out;
}

void saveGoldens(const std::string& path, const std::map<std::string, json>& goldens) {
  json j = json::object();
  for (const auto& [k, v] : goldens) j[k] = v;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", tmp));
    out << j.dump(1) << "\n";
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", tmp));
  }
  std::filesystem::rename(tmp, path);
}

std::vector<const MetricChange*> CaseCheck::opChanges() const {
  std::vector<const MetricChange*> ops;
  for (const MetricChange& m : changes)
    if (m.metric == "ops") ops.push_back(&m);
  return ops;
}

namespace {

std::string text(const json& j) {
  return j.is_null() ? "absent" : j.is_string() ? j.get<std::string>() : j.dump();
}

// The metric class of a record path (what its tolerance is looked up by).
std::string metricOf(const std::string& path) {
  if (path.rfind("ops/", 0) == 0) return "ops";
  if (path.rfind("cores/", 0) == 0) {
    if (path.find("/stalls/") != std::string::npos) return "stalls";
    if (path.size() >= 8 && path.compare(path.size() - 8, 8, "/bundles") == 0) return "bundles";
    return "dma_bytes";
  }
  return path;  // cycles, mxu_utilization, dma_bytes, status
}

// Every leaf of a record as path -> value.
void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "/" + k, out);
    return;
  }
  if (j.is_object()) return;  // an empty object (no stalls) has no leaves
  out[prefix] = j;
}

}  // namespace

std::string goldenProblem(const Case& c, const CaseResult& r) {
  if (!r.ran()) return fmt::format("the run failed: {}", r.error);
  std::string kind = faultKind(r.status);
  if (c.expectFault.empty()) {
    if (kind.empty()) return "";
    return fmt::format(
        "it faulted ({}); a golden must not record a fault unless the case says "
        "it exists to show one (\"expect_fault\": {{\"kind\", \"reason\"}}): {}",
        kind, r.error);
  }
  if (kind == c.expectFault) return "";
  return fmt::format("the case expects fault '{}' ({}), but the run {}", c.expectFault,
                     c.faultReason, kind.empty() ? "halted" : "faulted with " + kind);
}

CaseCheck checkCase(const Case& c, const CaseResult& r, const json* golden) {
  CaseCheck check;
  check.name = c.name;
  check.hostSeconds = r.hostSeconds;
  if (std::string problem = goldenProblem(c, r); !problem.empty()) {
    check.verdict = CaseCheck::Verdict::Failed;
    check.message = problem;
    return check;
  }
  if (!golden) {
    check.verdict = CaseCheck::Verdict::NoGolden;
    check.message = "no golden for this case: run `tpusim-batch update MANIFEST --case NAME`";
    return check;
  }
  std::map<std::string, json> want, got;
  flatten(*golden, "", want);
  flatten(r.record, "", got);
  std::vector<std::string> paths;
  for (const auto& [p, v] : want) paths.push_back(p);
  for (const auto& [p, v] : got)
    if (!want.count(p)) paths.push_back(p);
  for (const std::string& p : paths) {
    json before = want.count(p) ? want[p] : json(), after = got.count(p) ? got[p] : json();
    if (before == after) continue;
    MetricChange m;
    m.metric = metricOf(p);
    m.path = p;
    m.before = text(before);
    m.after = text(after);
    if (before.is_number() && after.is_number()) {
      double b = before.get<double>(), a = after.get<double>();
      m.relative = b != 0 ? (a - b) / std::fabs(b) : std::numeric_limits<double>::infinity();
      m.beyond = std::fabs(a - b) > c.tolerance.of(m.metric) * std::fabs(b);
    } else {
      // A status, or a stall cause / op that appeared or went: a missing count is 0.
      double b = before.is_number() ? before.get<double>() : 0;
      double a = after.is_number() ? after.get<double>() : 0;
      m.relative = b != 0 ? (a - b) / std::fabs(b) : std::numeric_limits<double>::infinity();
      bool numeric =
          (before.is_number() || before.is_null()) && (after.is_number() || after.is_null());
      m.beyond = !numeric || std::fabs(a - b) > c.tolerance.of(m.metric) * std::fabs(b);
    }
    check.changes.push_back(m);
  }
  std::stable_sort(check.changes.begin(), check.changes.end(),
                   [](const MetricChange& a, const MetricChange& b) {
                     if (a.beyond != b.beyond) return a.beyond;
                     return std::fabs(a.relative) > std::fabs(b.relative);
                   });
  for (const MetricChange& m : check.changes)
    if (m.beyond) check.verdict = CaseCheck::Verdict::Changed;
  return check;
}

}  // namespace tpusim::batch
