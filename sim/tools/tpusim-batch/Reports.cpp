#include "sim/tools/tpusim-batch/Reports.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "isa/support/MarkupEscape.h"

namespace tpusim::batch {
using nlohmann::ordered_json;

namespace {

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// "name (share%)" of the top ops; shares of the sum of op cycles.
std::vector<std::string> topOps(const CaseResult& r) {
  int64_t total = 0;
  for (const auto& [n, c] : r.topOps) total += c;
  std::vector<std::string> out;
  for (size_t i = 0; i < r.topOps.size() && i < kTableTopOps; ++i)
    out.push_back(fmt::format("{} ({:.1f}%)", r.topOps[i].first,
                              total ? 100.0 * double(r.topOps[i].second) / double(total) : 0.0));
  return out;
}

}  // namespace

std::string percent(double relative) {
  if (std::isinf(relative)) return "new";
  return fmt::format("{:+.2f}%", 100 * relative);
}

std::string tableCsv(const std::vector<const Case*>& cases,
                     const std::vector<CaseResult>& results) {
  std::string out =
      "case,program,chip,set,mode,status,cycles,simulated_us,mxu_utilization,hbm_gb_per_s,"
      "hbm_utilization,dma_bytes,top_ops\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = *cases[i];
    const CaseResult& r = results[i];
    out += fmt::format("{},{},{},{},{},{},{},{:.6f},{:.6f},{:.3f},{:.6f},{},{}\n", csvField(c.name),
                       csvField(c.programLabel), csvField(c.chip), csvField(joined(c.sets, " ")),
                       c.mode, csvField(r.status), r.cycles, r.simulatedSeconds * 1e6,
                       r.mxuUtilization, r.hbmBytesPerSecond / 1e9, r.hbmUtilization, r.dmaBytes,
                       csvField(joined(topOps(r), "; ")));
  }
  return out;
}

std::string tableJson(const Manifest& m, const std::vector<const Case*>& cases,
                      const std::vector<CaseResult>& results) {
  ordered_json rows = ordered_json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = *cases[i];
    const CaseResult& r = results[i];
    ordered_json ops = ordered_json::array();
    for (size_t k = 0; k < r.topOps.size() && k < kTableTopOps; ++k)
      ops.push_back({{"name", r.topOps[k].first}, {"cycles", r.topOps[k].second}});
    ordered_json row = {{"case", c.name}, {"program", c.programLabel},
                        {"chip", c.chip}, {"set", c.sets},
                        {"mode", c.mode}, {"status", r.status}};
    if (!r.error.empty()) row["error"] = r.error;
    row["cycles"] = r.cycles;
    row["simulated_seconds"] = r.simulatedSeconds;
    row["mxu_utilization"] = r.mxuUtilization;
    row["hbm_bytes_per_second"] = r.hbmBytesPerSecond;
    row["hbm_utilization"] = r.hbmUtilization;
    row["dma_bytes"] = r.dmaBytes;
    row["top_ops"] = ops;
    rows.push_back(row);
  }
  ordered_json j = {{"manifest", m.path}, {"cases", rows}};
  return j.dump(1) + "\n";
}

std::string tableText(const std::vector<const Case*>& cases,
                      const std::vector<CaseResult>& results) {
  size_t width = 4;
  for (const Case* c : cases) width = std::max(width, c->name.size());
  std::string out = fmt::format("{:<{}}  {:>12}  {:>12}  {:>6}  {:>9}  {}\n", "case", width,
                                "cycles", "sim time us", "MXU %", "HBM GB/s", "top op / status");
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseResult& r = results[i];
    std::vector<std::string> ops = topOps(r);
    std::string last = r.status == "halted" ? (ops.empty() ? "" : ops[0]) : r.status;
    out += fmt::format("{:<{}}  {:>12}  {:>12.3f}  {:>6.1f}  {:>9.1f}  {}\n", cases[i]->name, width,
                       r.cycles, r.simulatedSeconds * 1e6, 100 * r.mxuUtilization,
                       r.hbmBytesPerSecond / 1e9, last);
  }
  return out;
}

std::string checkText(const CaseCheck& c) {
  std::string out;
  switch (c.verdict) {
    case CaseCheck::Verdict::Pass:
      out = fmt::format("PASS {}{}\n", c.name,
                        c.changes.empty() ? ""
                                          : fmt::format(" ({} metrics moved within tolerance)",
                                                        c.changes.size()));
      return out;
    case CaseCheck::Verdict::NoGolden:
      return fmt::format("NEW  {}: {}\n", c.name, c.message);
    case CaseCheck::Verdict::Failed:
      return fmt::format("FAIL {}: {}\n", c.name, c.message);
    case CaseCheck::Verdict::Changed:
      break;
  }
  out = fmt::format("FAIL {}: differs from its golden\n", c.name);
  for (const MetricChange& m : c.changes) {
    if (m.metric == "ops") continue;
    out += fmt::format("  {:<40} {} -> {} ({}){}\n", m.path, m.before, m.after, percent(m.relative),
                       m.beyond ? "" : " within tolerance");
  }
  std::vector<const MetricChange*> ops = c.opChanges();
  if (!ops.empty()) {
    out += "  ops whose cycles changed:\n";
    for (const MetricChange* m : ops)
      out += fmt::format("    {:<38} {} -> {} ({}){}\n", m->path.substr(4), m->before, m->after,
                         percent(m->relative), m->beyond ? "" : " within tolerance");
  }
  return out;
}

std::string checkJunit(const Manifest& m, const std::vector<CaseCheck>& checks) {
  size_t failures = 0;
  double seconds = 0;
  for (const CaseCheck& c : checks) {
    failures += c.pass() ? 0 : 1;
    seconds += c.hostSeconds;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites>\n<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
      "time=\"{:.3f}\">\n",
      support::escapeMarkup(m.path), checks.size(), failures, seconds);
  for (const CaseCheck& c : checks) {
    out += fmt::format("  <testcase classname=\"tpusim-batch\" name=\"{}\" time=\"{:.3f}\"",
                       support::escapeMarkup(c.name), c.hostSeconds);
    if (c.pass()) {
      out += "/>\n";
      continue;
    }
    std::string summary = c.verdict == CaseCheck::Verdict::Changed
                              ? "differs from its golden beyond tolerance"
                              : c.message;
    out += fmt::format(">\n    <failure message=\"{}\">{}</failure>\n  </testcase>\n",
                       support::escapeMarkup(summary), support::escapeMarkup(checkText(c)));
  }
  out += "</testsuite>\n</testsuites>\n";
  return out;
}

std::string checkMarkdown(const Manifest& m, const std::vector<CaseCheck>& checks) {
  size_t failures = 0;
  for (const CaseCheck& c : checks) failures += c.pass() ? 0 : 1;
  std::string out = fmt::format("## Cycle regression: {}\n\n", m.path);
  out += failures == 0 ? fmt::format("All {} cases match their goldens.\n", checks.size())
                       : fmt::format("**{} of {} cases differ from their goldens.**\n", failures,
                                     checks.size());
  // Markdown tables: a '|' in a name must not split a cell.
  auto cell = [](std::string s) {
    for (size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
    for (char& ch : s)
      if (ch == '\n') ch = ' ';
    return s;
  };
  for (const CaseCheck& c : checks) {
    if (c.pass()) continue;
    out += fmt::format("\n### `{}`\n\n", c.name);
    if (c.verdict != CaseCheck::Verdict::Changed) {
      out += cell(c.message) + "\n";
      continue;
    }
    out += "| metric | golden | now | change |\n|---|---:|---:|---:|\n";
    for (const MetricChange& mc : c.changes)
      if (mc.metric != "ops")
        out += fmt::format("| {}{} | {} | {} | {} |\n", cell(mc.path),
                           mc.beyond ? "" : " (within tolerance)", cell(mc.before), cell(mc.after),
                           percent(mc.relative));
    std::vector<const MetricChange*> ops = c.opChanges();
    if (!ops.empty()) {
      out +=
          "\nOps whose cycles changed:\n\n| op | golden | now | change |\n|---|---:|---:|---:|\n";
      for (const MetricChange* mc : ops)
        out += fmt::format("| {} | {} | {} | {} |\n", cell(mc->path.substr(4)), mc->before,
                           mc->after, percent(mc->relative));
    }
  }
  return out;
}

}  // namespace tpusim::batch
