// tpusim-batch goldens: what check calls a change, how tolerances apply per
// metric, and that reports escape what they embed.
#include <catch2/catch.hpp>

#include "isa/support/MarkupEscape.h"
#include "sim/tools/tpusim-batch/Golden.h"
#include "sim/tools/tpusim-batch/Reports.h"

using namespace tpusim::batch;
using nlohmann::json;

namespace {

CaseResult result(int64_t cycles, int64_t opA, int64_t opB, int64_t syncWait) {
  CaseResult r;
  r.name = "c";
  r.status = "halted";
  r.cycles = cycles;
  r.record = {
      {"status", "halted"},
      {"cycles", cycles},
      {"mxu_utilization", 0.25},
      {"dma_bytes", 4096},
      {"cores",
       {{"core0", {{"bundles", 10}, {"dma_bytes", 4096}, {"stalls", {{"sync_wait", syncWait}}}}}}},
      {"ops", {{"a", opA}, {"b", opB}}}};
  return r;
}

Case named() {
  Case c;
  c.name = "c";
  return c;
}

}  // namespace

TEST_CASE("check is exact by default and names the ops that moved", "[batch]") {
  Case c = named();
  json golden = result(1000, 600, 400, 50).record;
  CHECK(checkCase(c, result(1000, 600, 400, 50), &golden).pass());
  CaseCheck k = checkCase(c, result(1001, 601, 400, 50), &golden);
  REQUIRE(k.verdict == CaseCheck::Verdict::Changed);
  std::vector<const MetricChange*> ops = k.opChanges();
  REQUIRE(ops.size() == 1);
  CHECK(ops[0]->path == "ops/a");
  CHECK(ops[0]->before == "600");
  CHECK(ops[0]->after == "601");
  CHECK(percent(ops[0]->relative) == "+0.17%");
  CHECK(checkText(k).find("a") != std::string::npos);
}

TEST_CASE("a tolerance applies to its metric only", "[batch]") {
  Case c = named();
  json golden = result(1000, 600, 400, 50).record;
  c.tolerance.byMetric["cycles"] = 0.01;
  c.tolerance.byMetric["ops"] = 0.01;
  CHECK(checkCase(c, result(1010, 605, 400, 50), &golden).pass());   // 1.0%, 0.8%
  CHECK(!checkCase(c, result(1011, 605, 400, 50), &golden).pass());  // 1.1%
  // Stalls have no tolerance: one more cycle of sync wait is a change.
  CaseCheck k = checkCase(c, result(1000, 600, 400, 51), &golden);
  REQUIRE(!k.pass());
  CHECK(k.changes[0].path == "cores/core0/stalls/sync_wait");
  CHECK(k.changes[0].metric == "stalls");
  // "all" covers every metric without its own bound.
  c.tolerance = {};
  c.tolerance.all = 0.05;
  CHECK(checkCase(c, result(1040, 620, 410, 52), &golden).pass());
}

TEST_CASE("an op or stall cause that appears or goes is a change", "[batch]") {
  Case c = named();
  json golden = result(1000, 600, 400, 50).record;
  CaseResult now = result(1000, 600, 400, 50);
  now.record["ops"].erase("b");
  now.record["ops"]["c"] = 400;
  CaseCheck k = checkCase(c, now, &golden);
  REQUIRE(k.verdict == CaseCheck::Verdict::Changed);
  REQUIRE(k.opChanges().size() == 2);
  // Even a large tolerance does not hide a status change.
  c.tolerance.all = 10;
  CaseResult faulted = result(1000, 600, 400, 50);
  faulted.record["status"] = "fault: deadlock";
  faulted.status = "fault: deadlock";
  CHECK(checkCase(c, faulted, &golden).verdict == CaseCheck::Verdict::Failed);
}

TEST_CASE("a golden records a fault only when the case expects it", "[batch]") {
  Case c = named();
  CaseResult r = result(10, 5, 5, 0);
  r.status = "fault: invalid-bundle";
  CHECK(goldenProblem(c, r).find("must not record a fault") != std::string::npos);
  c.expectFault = "invalid-bundle";
  c.faultReason = "why";
  CHECK(goldenProblem(c, r).empty());
  c.expectFault = "deadlock";
  CHECK(goldenProblem(c, r).find("expects fault 'deadlock'") != std::string::npos);
  CHECK(checkCase(named(), result(1, 1, 1, 1), nullptr).verdict == CaseCheck::Verdict::NoGolden);
}

TEST_CASE("JUnit and Markdown escape names", "[batch]") {
  CHECK(tpusim::support::escapeMarkup("a<b>&\"c'\x01") == "a&lt;b&gt;&amp;&quot;c&#39;");
  Manifest m;
  m.path = "m.json";
  CaseCheck k;
  k.name = "x|<y>";
  k.verdict = CaseCheck::Verdict::Failed;
  k.message = "broke | badly";
  std::string xml = checkJunit(m, {k});
  CHECK(xml.find("name=\"x|&lt;y&gt;\"") != std::string::npos);
  CHECK(xml.find("failures=\"1\"") != std::string::npos);
  CHECK(checkMarkdown(m, {k}).find("broke \\| badly") != std::string::npos);
}
