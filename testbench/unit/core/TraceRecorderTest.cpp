// The trace recorder: adjacent intervals merge, the per-track cap coarsens
// instead of growing without bound, and the output is valid trace-event JSON.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "sim/trace/TraceRecorder.h"

using tpusim::sim::TraceRecorder;

TEST_CASE("adjacent busy intervals with one name become one event", "[trace]") {
  TraceRecorder t(1e9);
  int mxu = t.track("core0", "mxu0");
  for (int i = 0; i < 100; ++i) t.interval(mxu, "mm", 8 * i, 8 * i + 8);
  CHECK(t.eventCount() == 1);
  t.interval(mxu, "wpush", 800, 808);  // another name: a new event
  t.interval(mxu, "mm", 900, 908);     // a gap: a new event
  CHECK(t.eventCount() == 3);
}

TEST_CASE("a track over its budget is coarsened, not truncated", "[trace]") {
  const size_t cap = 1000;
  TraceRecorder t(1e9, cap);
  int vpu = t.track("core0", "vpu");
  for (int64_t i = 0; i < 1000000; ++i) t.interval(vpu, "vadd", 3 * i, 3 * i + 1);
  CHECK(t.eventCount() < cap);
  CHECK(t.mergeGap(vpu) > 1);
  nlohmann::json j = nlohmann::json::parse(t.toJson());
  int64_t merged = 0, lastEnd = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    merged += e["args"]["merged"].get<int64_t>();
    lastEnd = std::max(lastEnd, e["args"]["cycles"][1].get<int64_t>());
  }
  // Every interval is still accounted for and the last one is still there.
  CHECK(merged == 1000000);
  CHECK(lastEnd == 3 * 999999 + 1);
}

TEST_CASE("trace JSON has named processes and threads and counters", "[trace]") {
  TraceRecorder t(2e9);
  int a = t.track("core0", "ops"), b = t.track("chip", "HBM GB/s");
  CHECK(t.track("core0", "ops") == a);
  t.interval(a, "matmul", 0, 2000);
  t.counter(b, 0, 12.5);
  t.instant(a, "fault", 2000);
  nlohmann::json j = nlohmann::json::parse(t.toJson());
  int names = 0, x = 0, c = 0, i = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M") ++names;
    if (e["ph"] == "X") {
      ++x;
      CHECK(e["dur"].get<double>() == Approx(1.0));  // 2000 cycles at 2 GHz = 1 us
    }
    if (e["ph"] == "C") ++c;
    if (e["ph"] == "i") ++i;
  }
  CHECK(names == 4);
  CHECK(x == 1);
  CHECK(c == 1);
  CHECK(i == 1);
}

TEST_CASE("flow arrows join a DMA's issue to where its completion lands", "[trace]") {
  TraceRecorder t(1e9, 16);  // room for 16 / 4 = 4 flows
  int dma = t.track("chip0/core0", "dma q0");
  int sync = t.track("chip0/core0", "sync waits");
  for (int i = 0; i < 6; ++i) t.flow(dma, 10 * i, sync, 10 * i + 7, "dma -> f0");
  CHECK(t.droppedFlows() == 2);
  nlohmann::json j = nlohmann::json::parse(t.toJson());
  int starts = 0, ends = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "s") {
      ++starts;
      CHECK(e["tid"] == 1);  // the DMA queue's track
    }
    if (e["ph"] == "f") {
      ++ends;
      CHECK(e["tid"] == 2);  // the sync waits track
      CHECK(e["bp"] == "e");
    }
  }
  CHECK(starts == 4);
  CHECK(ends == 4);
}
