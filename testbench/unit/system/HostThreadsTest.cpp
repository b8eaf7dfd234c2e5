// Host threads (sim/systemc/HostThreads.h, tpusim --host-threads): a run
// whose cores' stretches and DMA/HBM advances are handed to a pool gives
// exactly the cycles, stats JSON and outputs of the run on SystemC's thread
// alone, with 1, 2 and 3 host threads, on 8 chips of a 1-core preset (v5e
// 2x4), 8 chips of a 2-core preset (v4 2x2x2) and one 2-core chip.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdlib>

#include "isa/Assembler.h"
#include "isa/target/ChipLoader.h"
#include "sim/chip/RunReport.h"
#include "sim/system/System.h"
#include "sim/system/SystemReport.h"

using namespace tpusim;

namespace {

isa::Program assemble(const std::string& text) {
  isa::Program p;
  std::vector<isa::Diagnostic> diags;
  bool ok = isa::assemble(text, "mixed.s", &p, &diags);
  std::string all;
  for (const auto& d : diags) all += isa::formatDiagnostic(d);
  INFO(all);
  REQUIRE(ok);
  return p;
}

// An SPMD program with every kind of stretch: an MXU-bound loop of 1 + (chip
// id & 3) iterations (long stretches; chips drift apart in time), an HBM
// stream of 4 queues (DMA advances, short stretches between DMA bundles),
// then, on several chips, a ring all-reduce over ICI (remote DMAs and flags).
std::string mixedProgram(bool ring) {
  std::string s = R"(
.buffer x, shape=[8, 128], dtype=f32, space=hbm, addr=0x0, role=input
.buffer out, shape=[8, 128], dtype=f32, space=hbm, addr=0x1000, role=output
)";
  for (int k = 0; k < 8; ++k)
    s += fmt::format(".dma_descriptor {}, src={}:{:#x}, dst=vmem:{:#x}, inner=4096\n", 16 * k,
                     k == 0 ? "hbm" : "vmem", k == 0 ? 0 : 0x1000 * (k - 1), 0x1000 * k);
  s += ".dma_descriptor 128, src=vmem:0x8000, dst=hbm:0x1000, inner=4096\n";
  const int queues = 4, size = 16384;
  for (int q = 0; q < queues; ++q)
    s += fmt::format(".dma_descriptor {}, src=hbm:{:#x}, dst=vmem:{:#x}, inner={}\n", 256 + 16 * q,
                     0x100000 + q * size, 0x400000 + q * size, size);
  s += ".op mixed\nmain:\n  chip.id s1 ;; sli s2, 3\n  sand s1, s1, s2\n";
  s += "  saddi s1, s1, 1 ;; sli s0, 0\n  vld v30, s0, 4096, 1, 255\n";
  s += "  mxu.latch mxu0\n  mxu.latch mxu1\ntop:\n";
  const int mxus = 2, groups = 32;
  for (int tile = 0; tile < 2; ++tile)
    for (int g = 0; g < groups; ++g) {
      int cur = 20 + 4 * (g % 2), nxt = 20 + 4 * ((g + 1) % 2);
      for (int b = 0; b < 8; ++b) {
        std::vector<std::string> ops;
        if (b < mxus) {
          ops.push_back(fmt::format("mxu.mma.bf16 mxu{}, v{}, a{}", b, cur + b, tile));
          ops.push_back(fmt::format("vld v{}, s0, {}, 1, 255", nxt + b, 8 * ((g * 4 + b) % 64)));
          if (g == 20) ops.push_back(fmt::format("mxu.pop v{}, mxu{}, a{}", 10 + b, b, 1 - tile));
        } else if (b >= 4 && b < 4 + mxus && g < 16) {
          ops.push_back(fmt::format("mxu.wpush.bf16 mxu{}, v30", b - 4));
        } else if (b >= 4 && b < 4 + mxus && g == groups - 1) {
          ops.push_back(fmt::format("mxu.latch mxu{}", b - 4));
        }
        if (tile == 1 && g == groups - 1 && b == 7) ops.push_back("loop s1, top");
        s += "  " + (ops.empty() ? std::string("nop") : fmt::format("{}", fmt::join(ops, " ;; "))) +
             "\n";
      }
    }
  s += "  mxu.pop v10, mxu0, a0\n  mxu.pop v11, mxu1, a0\n";
  // HBM stream: 2 + chip id iterations.
  s += "  chip.id s1 ;; sli s9, " + std::to_string(queues * size) + "\n  saddi s1, s1, 2\n";
  for (int q = 0; q < queues; ++q) s += fmt::format("  sli s{}, {}\n", 2 + q, 256 + 16 * q);
  for (int q = 0; q < queues; ++q) s += fmt::format("  dma s{}, f{}, q{}\n", 2 + q, q, q);
  s += "stream:\n";
  for (int q = 0; q < queues; ++q)
    s += fmt::format(
        "  sld s10, s{0}, 1\n  sadd s10, s10, s9\n  sli s11, 0x3fffffff\n  sand s10, s10, s11\n"
        "  sst s10, s{0}, 1\n  sync.wait f{1}, 1\n  dma s{0}, f{1}, q{1}\n",
        2 + q, q);
  s += "  loop s1, stream\n";
  for (int q = 0; q < queues; ++q) s += fmt::format("  sync.wait f{}, 1\n", q);
  if (ring)
    s += R"(
    sli s0, 0 ;; chip.id s1
    dma s0, f0, q0
    chip.count s2
    saddi s3, s1, 1 ;; sli s5, 0
    scmp.eq s4, s3, s2 ;; saddi s6, s2, -1
    ssel s3, s4, s5, s3 ;; sli s7, 16
    sync.wait f0, 1 ;; sli s8, 8
    vld v0, s5, 0, 1, 255
step:
    dma.remote s7, s3, f2, f1, q1
    sync.wait f1, 1
    vld v1, s8, 0, 1, 255
    vadd.f32 v0, v0, v1
    saddi s7, s7, 16 ;; saddi s8, s8, 8
    loop s6, step
    vst v0, s5, 64, 1, 255 ;; sli s9, 128
    fence
    dma s9, f0, q0
    sync.wait f0, 1
)";
  s += "  halt\n.endop\n";
  return s;
}

sim::SimOptions options(bool functional, int threads, bool force) {
  sim::SimOptions o;
  o.functional = functional;
  o.dmaFactory = sim::makeChipDma;
  o.quantum = 2000;  // more synchronisations, more batches
  o.hostThreads = threads;
  o.forceHostJobs = force;
  return o;
}

struct Run {
  std::vector<int64_t> cycles;
  std::string stats;
  std::map<std::string, std::vector<uint8_t>> outputs;  // "device/name"
  int64_t jobs = 0;
};

Run runSystem(const std::string& preset, const std::string& topology, const isa::Program& p,
              bool functional, int threads, bool force) {
  target::ChipConfig chip = target::loadChip(preset);
  sim::SystemSimulation s(chip, p, options(functional, threads, force),
                          sim::ici::Torus::parse(topology, chip.ici));
  sim::SystemResult r = s.run();
  INFO((r.fault ? r.fault->report() : std::string()));
  REQUIRE(r.halted);
  Run out;
  for (const sim::SimResult& c : r.chips) out.cycles.push_back(c.cycles);
  for (size_t d = 0; d < r.chips.size(); ++d)
    for (const auto& [name, a] : r.chips[d].outputs)
      out.outputs[fmt::format("{}/{}", d, name)] = a.data;
  sim::RunInfo info{"mixed.s", functional ? "functional" : "timing"};
  out.stats = sim::systemStatsJson(r, chip, info).dump(1);
  out.jobs = r.hostJobs;
  return out;
}

Run runChip(const std::string& preset, const isa::Program& p, bool functional, int threads,
            bool force) {
  sim::Simulation s(target::loadChip(preset), p, options(functional, threads, force));
  sim::SimResult r = s.run();
  INFO((r.fault ? r.fault->report() : std::string()));
  REQUIRE(r.halted);
  Run out;
  out.cycles.push_back(r.cycles);
  for (const auto& [name, a] : r.outputs) out.outputs[name] = a.data;
  sim::RunInfo info{"mixed.s", functional ? "functional" : "timing"};
  out.stats = statsJson(r, target::loadChip(preset), info).dump(1);
  out.jobs = r.hostJobs;
  return out;
}

void requireSame(const Run& a, const Run& b) {
  CHECK(a.cycles == b.cycles);
  CHECK(a.outputs == b.outputs);
  // The stats JSON whole: a diff shows where they part.
  CHECK(a.stats == b.stats);
}

}  // namespace

TEST_CASE("host threads give the cycles of one thread on 8 chips", "[system][host-threads]") {
  isa::Program p = assemble(mixedProgram(true));
  for (auto [preset, topology] : {std::pair{"v5e", "2x4"}, std::pair{"v4", "2x2x2"}}) {
    for (bool functional : {false, true}) {
      INFO(fmt::format("{} {} {}", preset, topology, functional ? "functional" : "timing"));
      Run serial = runSystem(preset, topology, p, functional, 1, false);
      CHECK(serial.jobs == 0);
      // Chips drift apart: the MXU loop's length depends on the device.
      CHECK(serial.cycles.front() != serial.cycles.back());
      for (auto [threads, force] : {std::pair{1, true}, std::pair{2, false}, std::pair{3, false}}) {
        INFO(fmt::format("{} host thread(s)", threads));
        Run r = runSystem(preset, topology, p, functional, threads, force);
        CHECK(r.jobs > 0);
        requireSame(serial, r);
      }
    }
  }
}

TEST_CASE("host threads give the cycles of one thread on a 2-core chip", "[system][host-threads]") {
  isa::Program p = assemble(mixedProgram(false));
  for (bool functional : {false, true}) {
    INFO((functional ? "functional" : "timing"));
    Run serial = runChip("v4", p, functional, 1, false);
    for (int threads : {1, 2}) {
      Run r = runChip("v4", p, functional, threads, threads == 1);
      CHECK(r.jobs > 0);
      requireSame(serial, r);
    }
  }
}

TEST_CASE("a fault in a host-thread stretch is the fault of one thread",
          "[system][host-threads][throws-in-systemc]") {
  // Device 3 loads from past the end of VMEM in the middle of a long stretch
  // (the fault is raised on a pool thread and rethrown in its process); the
  // others are still looping.
  isa::Program p = assemble(R"(
.op faulty
    chip.id s1 ;; sli s2, 3
    scmp.eq s3, s1, s2 ;; sli s4, 20000
    br.z s3, spin
    sli s4, 4000
spin:
    saddi s5, s5, 1 ;; loop s4, spin
    br.z s3, done
    sli s6, 0x7fffffff
    vld v1, s6, 0, 1, 255
done:
    halt
.endop
)");
  for (bool functional : {false, true}) {
    INFO((functional ? "functional" : "timing"));
    target::ChipConfig chip = target::loadChip("v5e");
    auto run = [&](int threads, bool force) {
      sim::SystemSimulation s(chip, p, options(functional, threads, force),
                              sim::ici::Torus::parse("2x4", chip.ici));
      return s.run();
    };
    sim::SystemResult serial = run(1, false), one = run(1, true), two = run(2, false);
    REQUIRE(serial.fault);
    CHECK(serial.faultChip == 3);
    CHECK(one.hostJobs > 0);
    for (const sim::SystemResult* r : {&one, &two}) {
      REQUIRE(r->fault);
      CHECK(r->faultChip == serial.faultChip);
      CHECK(r->fault->report() == serial.fault->report());
    }
    // The job schedule is the same for any thread count: so is every chip's state.
    sim::RunInfo info{"faulty.s", "timing"};
    CHECK(sim::systemStatsJson(one, chip, info).dump(1) ==
          sim::systemStatsJson(two, chip, info).dump(1));
  }
}

TEST_CASE("a trace or reference stepping keeps a run on one host thread",
          "[system][host-threads]") {
  sim::SimOptions o = options(false, 4, false);
  CHECK(sim::hostThreadsOf(o) == 4);
  o.trace = true;
  CHECK(sim::hostThreadsOf(o) == 0);
  o.trace = false;
  o.referenceStepping = true;
  CHECK(sim::hostThreadsOf(o) == 0);
  CHECK(sim::hostThreadsOf(options(false, 1, false)) == 0);
  CHECK(sim::hostThreadsOf(options(false, 1, true)) == 1);
}
