// mxu-bench: simulation speed of the MXU implementations on one command stream
// (a dense tiled matmul: weights loaded behind the running mms, mm every 8
// cycles), in simulated cycles per host second, plus a plain host loop doing
// the same f32 arithmetic as the yardstick for functional mode.
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include <chrono>
#include <ctime>
#include <vector>

#include "isa/support/Numerics.h"
#include "isa/target/MxuConfig.h"
#include "sim/mxu/MxuRegistry.h"
#include "testbench/cosim/mxu/MxuStream.h"

using namespace tpusim;
namespace cl = llvm::cl;

static cl::opt<int> optSize("size", cl::desc("MXU array size N"), cl::init(16));
static cl::opt<int> optTiles("tiles", cl::desc("weight tiles in the stream"), cl::init(64));
static cl::opt<bool> optNoRtl("no-rtl", cl::desc("measure only the C++ model"));
static cl::opt<double> optMinSeconds("min-seconds", cl::desc("repeat each measurement this long"),
                                     cl::init(1.0));

namespace {

struct Speed {
  uint64_t cycles = 0;
  double seconds = 0;
  int runs = 0;
};

// Process CPU time, not wall time: the machines are shared, and a loaded
// machine would otherwise distort the ratios.
template <class Fn>
Speed measure(Fn once) {
  Speed s;
  const std::clock_t start = std::clock();
  do {
    s.cycles += once();
    ++s.runs;
    s.seconds = double(std::clock() - start) / CLOCKS_PER_SEC;
  } while (s.seconds < optMinSeconds);
  return s;
}

// The same multiply-adds as the stream's mms (rows x N x N per tile), in the
// plainest vectorizable f32 loop.
float hostLoop(int n, int rows, int tiles, const std::vector<float>& w, const std::vector<float>& a,
               std::vector<float>& out) {
  for (int t = 0; t < tiles; ++t)
    for (int r = 0; r < rows; ++r) {
      float* o = &out[size_t(r % 8) * n];
      for (int c = 0; c < n; ++c) o[c] = 0;
      for (int k = 0; k < n; ++k) {
        const float ak = a[size_t(r % 8) * n + k];
        const float* wk = &w[size_t(k) * n];
        for (int c = 0; c < n; ++c) o[c] = o[c] + ak * wk[c];
      }
    }
  return out[0];
}

}  // namespace

int main(int argc, char** argv) {
  cl::ParseCommandLineOptions(argc, argv, "MXU simulation speed: model vs RTL\n");
  const int n = optSize, rows = 2 * n;
  target::MxuConfig config;
  config.size = n;
  cosim::MxuStream stream = cosim::matmulMxuStream(n, optTiles, rows, 1);
  std::string error;
  auto report = [&](const char* what, const Speed& s) {
    double rate = double(s.cycles) / s.seconds;
    fmt::print("N={} {:<16} {:>12.0f} cycles/CPU-s  ({} runs, {} cycles each, {:.3f} CPU s)\n", n,
               what, rate, s.runs, s.cycles / s.runs, s.seconds);
    return rate;
  };
  auto runKind = [&](sim::MxuModelKind kind, bool functional) {
    return measure([&] {
      auto unit = sim::makeMxu(config, kind, functional, &error);
      return cosim::runMxuStream(*unit, stream, false).endCycle;
    });
  };
  double timing = report("model-timing", runKind(sim::MxuModelKind::Model, false));
  double functional = report("model-functional", runKind(sim::MxuModelKind::Model, true));
  std::vector<float> w(size_t(n) * n), a(size_t(8) * n), out(size_t(8) * n);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 7) * 0.25f;
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 5) * 0.5f;
  volatile float sink = 0;
  const uint64_t streamCycles =
      cosim::runMxuStream(*sim::makeMxu(config, sim::MxuModelKind::Model, false, &error), stream,
                          false)
          .endCycle;
  Speed host = measure([&] {
    sink = sink + hostLoop(n, rows, optTiles, w, a, out);
    return streamCycles;
  });
  double hostRate = report("host-loop", host);
  fmt::print("N={} functional model time / plain host loop time = {:.2f}\n", n,
             hostRate / functional);
  if (!optNoRtl) {
    if (!sim::makeMxu(config, sim::MxuModelKind::Rtl, true, &error)) {
      fmt::print(stderr, "mxu-bench: {}\n", error);
      return 1;
    }
    double rtl = report("rtl", runKind(sim::MxuModelKind::Rtl, true));
    fmt::print("N={} model-functional / rtl speed = {:.0f}x, model-timing / rtl = {:.0f}x\n", n,
               functional / rtl, timing / rtl);
  }
  return 0;
}
