// The SystemC DmaSystem: two core threads issue descriptors (waiting on
// activity() when a queue is full, and on idle() at the end); the completion
// cycles seen through onComplete equal those of the plain engine replaying the
// same issues, and the DMA thread wakes far less often than once per cycle.
// SystemC elaborates once per process, so this binary has one test case.
#include <catch2/catch.hpp>

#include <systemc>

#include <vector>

#include "isa/target/ChipLoader.h"
#include "sim/dma/DmaSystem.h"
#include "sim/systemc/StartSystemC.h"

using namespace tpusim;
using namespace tpusim::sim;
using namespace tpusim::sim::dma;

namespace {

struct Issue {
  int core, queue, flag;
  isa::DmaDescriptor d;
  uint64_t cycle;
};

isa::DmaDescriptor block(int i) {
  isa::DmaDescriptor d;
  d.src = i % 3 == 2 ? isa::MemorySpace::Vmem : isa::MemorySpace::Hbm;
  d.dst = i % 3 == 2 ? isa::MemorySpace::Hbm : isa::MemorySpace::Vmem;
  d.srcAddr = uint64_t(i) * 65536;
  d.dstAddr = uint64_t(i) * 32768;
  d.innerBytes = 2048;
  d.counts = {8, 1, 1};
  d.srcStrides = {4096, 0, 0};
  d.dstStrides = {2048, 0, 0};
  d.numDims = 2;
  return d;
}

struct CoreDriver : sc_core::sc_module {
  SC_HAS_PROCESS(CoreDriver);
  CoreDriver(sc_core::sc_module_name n, DmaSystem& dma, int core, std::vector<Issue>& log)
      : sc_module(n), dma(dma), core(core), log(log) {
    SC_THREAD(run);
  }
  void run() {
    for (int i = 0; i < 60; ++i) {
      int q = (i / 3) % 2;  // bursts on one queue, so it fills up (queue_depth)
      while (!dma.canIssue(core, q)) {
        ++queueFullWaits;
        wait(dma.activity(core));
      }
      uint64_t cycle = dma.currentCycle();
      isa::DmaDescriptor d = block(i + 100 * core);
      DmaStatus s = dma.issue(core, q, d, i % 4, cycle);
      REQUIRE(s.ok());
      log.push_back(Issue{core, q, i % 4, d, cycle});
      wait(dma.timeOf(cycle + 1 + uint64_t(i % 7) * 3) - sc_core::sc_time_stamp());
    }
    while (!dma.idle(core)) wait(dma.activity(core));
    finished = dma.currentCycle();
  }
  DmaSystem& dma;
  int core;
  std::vector<Issue>& log;
  uint64_t finished = 0;
  int queueFullWaits = 0;
};

}  // namespace

TEST_CASE("DmaSystem matches the plain engine and sleeps between events", "[dma][systemc]") {
  target::ChipConfig chip = target::loadChip("v4");  // two cores sharing HBM
  REQUIRE(chip.core.cores == 2);
  DmaSystem dma("dma", chip, nullptr);
  std::vector<Issue> log;
  std::vector<DmaCompletion> seen;
  dma.onComplete = [&](const DmaCompletion& c) {
    CHECK(dma.currentCycle() == c.cycle);
    seen.push_back(c);
  };
  CoreDriver core0("core0", dma, 0, log), core1("core1", dma, 1, log);
  sim::startSystemC();

  REQUIRE(seen.size() == 120);
  CHECK(core0.finished >= seen.back().cycle);
  // Replay the same issues, in cycle order, on a plain engine.
  std::stable_sort(log.begin(), log.end(),
                   [](const Issue& a, const Issue& b) { return a.cycle < b.cycle; });
  DmaEngine engine(chip, nullptr);
  std::vector<DmaCompletion> expect;
  for (const Issue& i : log) {
    // The cores saw completions of their issue cycle (they wait on activity()).
    engine.advanceTo(i.cycle + 1, expect);
    REQUIRE(engine.issue(i.core, i.queue, i.d, i.flag, i.cycle).ok());
  }
  while (!engine.idle()) engine.advanceTo(engine.nextEventCycle() + 1, expect);
  REQUIRE(expect.size() == seen.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i].cycle == expect[i].cycle);
    CHECK(seen[i].core == expect[i].core);
    CHECK(seen[i].queue == expect[i].queue);
    CHECK(seen[i].descriptor == expect[i].descriptor);
  }
  // The pattern overfills the queues, so the cores had to wait for space.
  CHECK(core0.queueFullWaits > 0);
  CHECK(core1.queueFullWaits > 0);
  INFO("cycles " << seen.back().cycle << ", DMA thread wakeups " << dma.wakeups());
  CHECK(dma.wakeups() * 8 < seen.back().cycle);
}
