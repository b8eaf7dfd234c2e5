// Multi-chip systems (sim/system over sim/ici): timing derived from the
// preset (k hops cost k hop latencies plus bytes / bandwidth; two flows on one
// link take twice as long; wraparound only where the slice wraps), a ring
// all-reduce checked numerically on 2, 4 and 8 chips with equal cycles in
// timing mode, barriers, and deadlocks and bad devices as clear faults.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "isa/Assembler.h"
#include "isa/target/ChipLoader.h"
#include "sim/chip/Chip.h"
#include "sim/system/System.h"

using namespace tpusim;

namespace {

isa::Program assemble(const std::string& text, const std::string& file = "test.s") {
  isa::Program p;
  std::vector<isa::Diagnostic> diags;
  bool ok = isa::assemble(text, file, &p, &diags);
  std::string all;
  for (const auto& d : diags) all += isa::formatDiagnostic(d);
  INFO(all);
  REQUIRE(ok);
  return p;
}

sim::SystemResult runSystem(const target::ChipConfig& chip, const std::string& topology,
                            const isa::Program& p, bool functional = true,
                            const std::map<int, npy::Array>& xs = {}, int hostThreads = 1) {
  sim::SimOptions o;
  o.functional = functional;
  o.dmaFactory = sim::makeChipDma;
  o.hostThreads = hostThreads;
  sim::SystemSimulation s(chip, p, o, sim::ici::Torus::parse(topology, chip.ici));
  for (const auto& [device, array] : xs) s.setInput("x", array, "x", device);
  return s.run();
}

sim::SystemResult runSystem(const std::string& preset, const std::string& topology,
                            const isa::Program& p, bool functional = true,
                            const std::map<int, npy::Array>& xs = {}) {
  return runSystem(target::loadChip(preset), topology, p, functional, xs);
}

// Device d sends `bytes` (HBM to HBM) to sends[d] (or nobody: -1), waits
// until the last byte has left, then waits for arrivals[d] arrivals and halts.
isa::Program pointToPoint(const std::vector<int>& sends, const std::vector<int>& arrivals,
                          uint32_t bytes) {
  std::string s =
      fmt::format(".dma_descriptor 0, src=hbm:0x0, dst=hbm:0x100000, inner={}\n", bytes);
  s += ".data smem, 128, words ";
  for (size_t d = 0; d < sends.size(); ++d) s += fmt::format("{}{}", d ? ", " : "", sends[d]);
  s += "\n.data smem, 256, words ";
  for (size_t d = 0; d < arrivals.size(); ++d) s += fmt::format("{}{}", d ? ", " : "", arrivals[d]);
  s += R"(
    chip.id s1 ;; sli s0, 0
    sld s5, s1, 32 ;; sli s7, -1
    sld s6, s1, 64
    scmp.eq s4, s5, s7
    br.nz s4, recv
    dma.remote s0, s5, f2, f1, q0
    sync.wait f2, 1
recv:
    br.z s6, done
more:
    sync.wait f1, 1
    loop s6, more
done:
    halt
)";
  return assemble(s);
}

// Cycles of device d (its last halt + 1).
int64_t cyclesOf(const sim::SystemResult& r, int d) { return r.chips.at(size_t(d)).cycles; }

std::string readSample(const std::string& name) {
  const char* root = std::getenv("TPUSIM_SOURCE_DIR");
  std::string path = std::string(root ? root : TPUSIM_SOURCE_DIR_DEFAULT) + "/isa/samples/" + name;
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

npy::Array filled(float value) {
  npy::Array a;
  a.dtype = npy::DType::F32;
  a.shape = {8, 128};
  a.data.resize(8 * 128 * 4);
  for (int i = 0; i < 8 * 128; ++i) {
    float v = value + float(i % 7);
    std::memcpy(a.data.data() + 4 * i, &v, 4);
  }
  return a;
}

float at(const npy::Array& a, int i) {
  float v;
  std::memcpy(&v, a.data.data() + 4 * i, 4);
  return v;
}

}  // namespace

TEST_CASE("k hops cost k hop latencies on top of bytes / bandwidth", "[system][timing]") {
  target::ChipConfig chip = target::loadChip("tiny8");
  const int64_t lat = chip.ici.latency_cycles;
  // tiny8: 45 B/cycle at 1 GHz; 4500 bytes take 100 cycles on one link.
  REQUIRE(chip.ici.link_bytes_per_second / chip.core.clock_hz == 45.0);
  auto oneHop = runSystem("tiny8", "1x3", pointToPoint({1, -1, -1}, {0, 1, 0}, 4500));
  auto twoHops = runSystem("tiny8", "1x3", pointToPoint({2, -1, -1}, {0, 0, 1}, 4500));
  REQUIRE(oneHop.halted);
  REQUIRE(twoHops.halted);
  CHECK(cyclesOf(twoHops, 2) - cyclesOf(oneHop, 1) == lat);
  // The sender's flag: the last byte has left, whatever the distance.
  CHECK(cyclesOf(twoHops, 0) == cyclesOf(oneHop, 0));
  // The receiver hears of it one hop latency per hop after the sender.
  CHECK(cyclesOf(oneHop, 1) - cyclesOf(oneHop, 0) ==
        cyclesOf(twoHops, 2) - cyclesOf(twoHops, 0) - lat);

  auto twice = runSystem("tiny8", "1x3", pointToPoint({1, -1, -1}, {0, 1, 0}, 9000));
  CHECK(cyclesOf(twice, 0) - cyclesOf(oneHop, 0) == 100);
  CHECK(cyclesOf(twice, 1) - cyclesOf(oneHop, 1) == 100);
  // Absolute: from issue to the last byte leaving is bytes / bandwidth.
  auto tiny = runSystem("tiny8", "1x3", pointToPoint({1, -1, -1}, {0, 1, 0}, 45));
  CHECK(cyclesOf(oneHop, 0) - cyclesOf(tiny, 0) == 99);
  CHECK(oneHop.links.size() > 0);
  double used = 0;
  for (const auto& l : oneHop.links) used += l.bytes;
  CHECK(used == Approx(4500));
}

TEST_CASE("two flows on one link take twice as long", "[system][timing]") {
  // 1x3 line: 0 -> 2 crosses 0->1 and 1->2, 1 -> 2 crosses 1->2: they share 1->2.
  auto alone = runSystem("tiny8", "1x3", pointToPoint({-1, 2, -1}, {0, 0, 1}, 4500));
  auto shared = runSystem("tiny8", "1x3", pointToPoint({2, 2, -1}, {0, 0, 2}, 4500));
  REQUIRE(alone.halted);
  REQUIRE(shared.halted);
  CHECK(cyclesOf(shared, 1) - cyclesOf(alone, 1) == 100);  // 200 cycles instead of 100
  CHECK(cyclesOf(shared, 0) == cyclesOf(shared, 1));
  for (const auto& l : shared.links)
    if (l.chip == 1 && l.to == 2) CHECK(l.bytes == Approx(9000));
}

TEST_CASE("a receiver that cannot absorb its links' bytes backs the senders up",
          "[system][timing]") {
  // 1x3 line: devices 0 and 2 send 4500 bytes each to device 1, over two
  // different links at 45 B/cycle (100 cycles alone).
  target::ChipConfig chip = target::loadChip("tiny8");
  const double link = chip.ici.link_bytes_per_second / chip.core.clock_hz;
  REQUIRE(link == 45.0);
  REQUIRE(chip.ici.linkBytesPerCycle(chip.core.clock_hz) == 45.0);
  // The preset's receiver takes every link at full rate.
  REQUIRE(chip.ici.ingress_bytes_per_second >= chip.iciPeakBytesPerSecond());
  isa::Program p = pointToPoint({1, -1, 1}, {0, 2, 0}, 4500);
  auto free = runSystem(chip, "1x3", p, false);
  REQUIRE(free.halted);
  CHECK(cyclesOf(free, 0) == cyclesOf(free, 2));
  for (double absorbs : {45.0, 67.5}) {
    INFO(absorbs << " B/cycle");
    target::ChipConfig slow = chip;
    slow.ici.ingress_bytes_per_second = absorbs * chip.core.clock_hz;
    // Each sender gets half of what the receiver absorbs: 4500 / (absorbs / 2)
    // cycles instead of 100, rounded up to a whole cycle.
    const int64_t backedUp = int64_t(std::ceil(4500 / (absorbs / 2))) - 100;
    for (bool functional : {false, true}) {
      auto r = runSystem(slow, "1x3", p, functional);
      REQUIRE(r.halted);
      CHECK(cyclesOf(r, 0) - cyclesOf(free, 0) == backedUp);
      CHECK(cyclesOf(r, 2) - cyclesOf(free, 2) == backedUp);
      CHECK(cyclesOf(r, 1) - cyclesOf(free, 1) == backedUp);
    }
    // Identical cycles on 2 host threads.
    auto threaded = runSystem(slow, "1x3", p, false, {}, 2);
    auto single = runSystem(slow, "1x3", p, false, {}, 1);
    for (int d = 0; d < 3; ++d) CHECK(cyclesOf(threaded, d) == cyclesOf(single, d));
  }
  // One sender alone is not held back by a receiver that absorbs a whole link.
  target::ChipConfig oneLink = chip;
  oneLink.ici.ingress_bytes_per_second = link * chip.core.clock_hz;
  isa::Program alone = pointToPoint({1, -1, -1}, {0, 1, 0}, 4500);
  CHECK(cyclesOf(runSystem(oneLink, "1x3", alone, false), 0) ==
        cyclesOf(runSystem(chip, "1x3", alone, false), 0));
}

TEST_CASE("an input buffer smaller than the credit round trip slows a link", "[system][timing]") {
  // Credit-based flow control: a link carries at most buffer_bytes per round
  // trip of 2 x latency_cycles. tiny8: 2 x 1000 cycles; 45000 bytes of buffer
  // give 22.5 B/cycle, half the link: 4500 bytes take 200 cycles, not 100.
  target::ChipConfig chip = target::loadChip("tiny8");
  REQUIRE(chip.ici.latency_cycles == 1000);
  REQUIRE(double(chip.ici.buffer_bytes) >= 2 * 1000 * 45.0);  // the preset covers it
  target::ChipConfig small = chip;
  small.ici.buffer_bytes = 45000;
  CHECK(small.ici.linkBytesPerCycle(chip.core.clock_hz) == 22.5);
  isa::Program p = pointToPoint({1, -1, -1}, {0, 1, 0}, 4500);
  auto full = runSystem(chip, "1x3", p, false);
  auto slowed = runSystem(small, "1x3", p, false);
  CHECK(cyclesOf(slowed, 0) - cyclesOf(full, 0) == 100);
  CHECK(cyclesOf(slowed, 1) - cyclesOf(full, 1) == 100);
}

TEST_CASE("wraparound only where the slice spans the torus dimension", "[system][timing]") {
  const int64_t lat = target::loadChip("v5e").ici.latency_cycles;
  // v5e wraps at 16: in a 1x4 slice device 0 reaches device 3 in 3 hops.
  auto near = runSystem("v5e", "1x4", pointToPoint({1, -1, -1, -1}, {0, 1, 0, 0}, 4096));
  auto far = runSystem("v5e", "1x4", pointToPoint({3, -1, -1, -1}, {0, 0, 0, 1}, 4096));
  CHECK(cyclesOf(far, 3) - cyclesOf(near, 1) == 2 * lat);
  // tiny8 wraps at 4: the same 1x4 slice is a ring, 0 -> 3 is one hop back.
  auto ringNear = runSystem("tiny8", "1x4", pointToPoint({1, -1, -1, -1}, {0, 1, 0, 0}, 4500));
  auto ringFar = runSystem("tiny8", "1x4", pointToPoint({3, -1, -1, -1}, {0, 0, 0, 1}, 4500));
  CHECK(cyclesOf(ringFar, 3) == cyclesOf(ringNear, 1));
  bool wrapUsed = false;
  for (const auto& l : ringFar.links) wrapUsed |= l.chip == 0 && l.to == 3 && l.bytes > 0;
  CHECK(wrapUsed);
}

TEST_CASE("ring all-reduce on 2, 4 and 8 chips", "[system][functional]") {
  isa::Program p = assemble(readSample("ici/ring_allreduce.s"), "ring_allreduce.s");
  for (const char* topology : {"1x2", "2x2", "2x4"}) {
    INFO(topology);
    sim::ici::Torus t = sim::ici::Torus::parse(topology, target::loadChip("tiny8").ici);
    std::map<int, npy::Array> xs;
    for (int d = 0; d < t.numChips(); ++d) xs[d] = filled(float(10 * (d + 1)));
    sim::SystemResult r = runSystem("tiny8", topology, p, true, xs);
    INFO((r.fault ? r.fault->report() : std::string()));
    REQUIRE(r.halted);
    for (int d = 0; d < t.numChips(); ++d) {
      const npy::Array& out = r.chips[size_t(d)].outputs.at("out");
      for (int i : {0, 1, 500, 1023}) {
        float want = 0;
        for (int k = 0; k < t.numChips(); ++k) want += float(10 * (k + 1)) + float(i % 7);
        CHECK(at(out, i) == want);
      }
    }
    sim::SystemResult timing = runSystem("tiny8", topology, p, false);
    REQUIRE(timing.halted);
    CHECK(timing.cycles == r.cycles);
    for (size_t d = 0; d < r.chips.size(); ++d) CHECK(timing.chips[d].cycles == r.chips[d].cycles);
    // Deterministic: a second run gives the same cycles.
    CHECK(runSystem("tiny8", topology, p, true, xs).cycles == r.cycles);
  }
}

TEST_CASE("a barrier of sync.remote", "[system]") {
  // Every chip signals every other chip's f3, then waits for n - 1 signals.
  isa::Program p = assemble(R"(
    chip.id s1
    chip.count s2
    sli s3, 0 ;; saddi s6, s2, -1
next:
    scmp.eq s4, s3, s1
    br.nz s4, skip
    sync.remote s3, f3, 1
skip:
    saddi s3, s3, 1
    scmp.lt s4, s3, s2
    br.nz s4, next
wait:
    sync.wait f3, 1
    loop s6, wait
    halt
)");
  auto r = runSystem("tiny8", "2x2", p);
  INFO((r.fault ? r.fault->report() : std::string()));
  REQUIRE(r.halted);
  CHECK(r.iciSignals == 12);
  // Nobody leaves before the farthest signal (2 hops) has arrived.
  for (const auto& c : r.chips) CHECK(c.cycles > 2 * target::loadChip("tiny8").ici.latency_cycles);
}

TEST_CASE("a flag no chip will signal is a deadlock naming chips, flags and values",
          "[system][fault][throws-in-systemc]") {
  isa::Program p = assemble(R"(
    chip.id s1
    br.z s1, done
    sync.signal f4, 1
    sync.wait f4, 3
done:
    halt
)");
  auto r = runSystem("tiny8", "2x2", p);
  REQUIRE(r.fault);
  CHECK(r.fault->kind == "deadlock");
  CHECK_THAT(r.fault->message, Catch::Contains("chip 1: core 0 waits at bundle 3"));
  CHECK_THAT(r.fault->message, Catch::Contains("sync.wait f4, 3: f4 is 1"));
  CHECK_THAT(r.fault->message, Catch::Contains("chip 3:"));
  CHECK(r.fault->cycle > 0);
  CHECK(r.chips[0].halted);
}

// The landing-slot protocol of the grid reduce-scatter (compiler/lower/
// collectives/GridReduceScatter.h) in small: chip 0 sends 4 pieces VMEM ->
// VMEM into 2 landing slots of chip 1 (arrival n in slot n mod 2, flag f2);
// chip 1 hands a slot back with a credit (sync.remote to chip 0, flag f5)
// once it has read it, and chip 0 waits for the credit of arrival n - 2
// before it sends arrival n. With `credit` false the receiver never returns
// one.
isa::Program creditProtocol(bool credit) {
  std::string s = R"(
.dma_descriptor 0, src=vmem:0x0, dst=vmem:0x10000, inner=4096
.dma_descriptor 64, src=vmem:0x0, dst=vmem:0x20000, inner=4096
    chip.id s1 ;; sli s3, 1
    br.nz s1, recv
    sli s0, 0 ;; sli s7, 64
    dma.remote s0, s3, f1, f2, q0
    dma.remote s7, s3, f1, f2, q1
    sync.wait f5, 1
    dma.remote s0, s3, f1, f2, q0
    sync.wait f5, 1
    dma.remote s7, s3, f1, f2, q1
    sync.wait f1, 4
    sync.wait f5, 2
    halt
recv:
    sli s6, 4 ;; sli s4, 0
next:
    sync.wait f2, 1
    vld v0, s4, 128, 1, 255
)";
  if (credit) s += "    sync.remote s4, f5, 1\n";
  s += R"(
    loop s6, next
    halt
)";
  return assemble(s);
}

TEST_CASE("a receiver that never returns a credit is a deadlock naming chips, flags and values",
          "[system][fault][throws-in-systemc]") {
  // With the credits the protocol runs through, in both modes.
  for (bool functional : {true, false}) {
    auto ok = runSystem("tiny8", "1x2", creditProtocol(true), functional);
    INFO((ok.fault ? ok.fault->report() : std::string()));
    CHECK(ok.halted);
    CHECK(ok.iciSignals == 4);
  }
  // Without them: the sender waits for the first credit, the receiver for
  // the third arrival; reported (not hung) on 1 and 2 host threads.
  for (bool functional : {true, false}) {
    for (int threads : {1, 2}) {
      INFO("functional " << functional << ", host threads " << threads);
      auto r = runSystem(target::loadChip("tiny8"), "1x2", creditProtocol(false), functional, {},
                         threads);
      REQUIRE(r.fault);
      CHECK(r.fault->kind == "deadlock");
      CHECK(!r.halted);
      CHECK(r.iciSignals == 0);
      CHECK_THAT(r.fault->message, Catch::Contains("0 ICI message(s) in flight"));
      CHECK_THAT(r.fault->message,
                 Catch::Contains("chip 0: core 0 waits at bundle 5 (stalled since cycle "));
      CHECK_THAT(r.fault->message,
                 Catch::Contains("in sync.wait f5, 1: f5 is 0 with 0 local DMA(s) outstanding"));
      CHECK_THAT(r.fault->message,
                 Catch::Contains("chip 1: core 0 waits at bundle 13 (stalled since cycle "));
      CHECK_THAT(r.fault->message, Catch::Contains("in sync.wait f2, 1: f2 is 0"));
      CHECK(r.fault->cycle > 0);
    }
  }
}

TEST_CASE("remote DMA to a device that does not exist is a fault",
          "[system][fault][throws-in-systemc]") {
  isa::Program p = assemble(R"(
.dma_descriptor 0, src=hbm:0x0, dst=hbm:0x1000, inner=64
    sli s0, 0 ;; sli s5, 9
    dma.remote s0, s5, f2, f1, q0
    halt
)");
  auto r = runSystem("tiny8", "1x2", p);
  REQUIRE(r.fault);
  CHECK(r.fault->kind == "ici-fault");
  CHECK_THAT(r.fault->message,
             Catch::Contains("dma.remote to device 9: the system has devices 0..1"));
  // On one chip, the ICI ops say what they need.
  target::ChipConfig chip = target::loadChip("tiny8");
  sim::SimOptions o;
  o.dmaFactory = sim::makeChipDma;
  sim::Simulation single(chip, p, o);
  auto s = single.run();
  REQUIRE(s.fault);
  CHECK_THAT(s.fault->message, Catch::Contains("needs a multi-chip system (tpusim --topology"));
}

TEST_CASE("chip.id and chip.count on one chip", "[system]") {
  isa::Program p = assemble(R"(
.buffer o, shape=[2], dtype=s32, space=smem, addr=0x40, role=output
    chip.id s1
    chip.count s2
    sli s0, 0
    sst s1, s0, 16
    sst s2, s0, 17
    halt
)");
  target::ChipConfig chip = target::loadChip("tiny8");
  sim::SimOptions o;
  o.dmaFactory = sim::makeChipDma;
  auto r = sim::Simulation(chip, p, o).run();
  REQUIRE(r.halted);
  const npy::Array& out = r.outputs.at("o");
  int32_t v[2];
  std::memcpy(v, out.data.data(), 8);
  CHECK(v[0] == 0);
  CHECK(v[1] == 1);
}
