// mxu-cosim: random MXU command streams run on MxuModel and on the Verilated
// RTL through the same MxuUnit calls; every ready cycle, issue cycle, fault,
// result-row write (cycle, slot, row, values), popped vreg and statistic must
// be identical. Prints the seeds; on a mismatch prints the first difference
// and the command line that replays the failing stream alone.
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include <chrono>
#include <cstdlib>

#include "isa/target/MxuConfig.h"
#include "sim/mxu/MxuRegistry.h"
#include "testbench/cosim/mxu/MxuStream.h"

using namespace tpusim;
namespace cl = llvm::cl;

static cl::opt<int> optSize("size", cl::desc("MXU array size N (an RTL size that was built)"),
                            cl::init(8));
static cl::opt<int> optStreams("streams", cl::desc("number of random streams"), cl::init(100));
static cl::opt<uint64_t> optSeed("seed", cl::desc("base seed; stream i uses seed + i"),
                                 cl::init(1));
static cl::opt<int> optSlots("slots", cl::desc("result-buffer slots (mxu.acc_slots), 1..64"),
                             cl::init(16));
static cl::opt<int> optCommands("commands", cl::desc("commands per stream"), cl::init(60));
static cl::opt<bool> optVerbose("v", cl::desc("print every stream"));

int main(int argc, char** argv) {
  cl::ParseCommandLineOptions(argc, argv, "cosimulate the MXU model against the RTL\n");
  target::MxuConfig config;
  config.size = optSize;
  config.acc_slots = optSlots;
  if (optSlots < 1 || optSlots > isa::kMaxAccSlots) {
    fmt::print(stderr, "mxu-cosim: error: --slots {}: outside 1..{}\n", int(optSlots),
               isa::kMaxAccSlots);
    return 1;
  }
  std::string error;
  auto probe = sim::makeMxu(config, sim::MxuModelKind::Rtl, true, &error);
  if (!probe) {
    fmt::print(stderr, "mxu-cosim: error: {}\n", error);
    return 1;
  }
  probe.reset();
  fmt::print("mxu-cosim: N={} slots={} streams={} seeds {}..{} commands/stream={}\n", int(optSize),
             int(optSlots), int(optStreams), uint64_t(optSeed), optSeed + optStreams - 1,
             int(optCommands));
  auto start = std::chrono::steady_clock::now();
  uint64_t rows = 0, cycles = 0, faults = 0;
  for (int i = 0; i < optStreams; ++i) {
    const uint64_t seed = optSeed + uint64_t(i);
    cosim::StreamShape shape;
    shape.commands = optCommands;
    shape.slots = int(config.acc_slots);
    shape.specialValues = seed % 3 == 0;  // a third of the streams: subnormals, inf, NaN
    shape.faults = seed % 5 == 0;
    // Most streams on an MXU with the packed int8 mode (v5e's), every seventh without.
    shape.packedInt8 = seed % 7 != 0;
    config.int8_rate = shape.packedInt8 ? 2 : 1;
    cosim::MxuStream stream = cosim::randomMxuStream(optSize, seed, shape);
    auto model = sim::makeMxu(config, sim::MxuModelKind::Model, true, &error);
    auto rtl = sim::makeMxu(config, sim::MxuModelKind::Rtl, true, &error);
    cosim::MxuRunRecord a = cosim::runMxuStream(*model, stream);
    cosim::MxuRunRecord b = cosim::runMxuStream(*rtl, stream);
    std::string diff = cosim::compareMxuRuns(stream, a, b);
    if (optVerbose)
      fmt::print("  {} cycles={} rows={} {}\n", stream.describe(), a.endCycle, a.rows.size(),
                 diff.empty() ? "ok" : "MISMATCH");
    if (!diff.empty()) {
      fmt::print(stderr, "mxu-cosim: MISMATCH in stream {} ({})\n  {}\n", i, stream.describe(),
                 diff);
      fmt::print(
          stderr,
          "  replay: mxu-cosim --size {} --slots {} --seed {} --streams 1 --commands {} -v\n",
          int(optSize), int(optSlots), seed, int(optCommands));
      return 1;
    }
    rows += a.rows.size();
    cycles += a.endCycle;
    for (const std::string& f : a.faults) faults += !f.empty();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(
      "mxu-cosim: N={}: {} streams identical ({} result rows, {} cycles, {} faults) in {:.1f} s\n",
      int(optSize), int(optStreams), rows, cycles, faults, secs);
  return 0;
}
