// Whole-program cosimulation: a tiled bf16 matmul program (DMA in, weight
// pushes, latches, mm/mma, pops, DMA out) run by tpusim on the small test
// presets with the fast MXU model and with the RTL MXU must give the same
// total cycles, the same stats JSON and the same output tensor.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/mxu/MxuRegistry.h"
#include "sim/tools/tpusim/TpusimDriver.h"

namespace {

// C[M][N] = A[M][2N] @ B[2N][N] for an N x N MXU: two weight tiles (mm, then
// mma into the same slots), M / 8 LHS blocks per tile. Straight-line code:
// the core's interlocks do the scheduling.
std::string matmulProgram(int n, int m) {
  const int k = 2 * n, bRow = 2 * m, cRow = bRow + k;
  std::string p;
  p += fmt::format(".buffer a, shape=[{},{}], dtype=f32, space=hbm, addr=0x0, role=input\n", m, k);
  p += fmt::format(".buffer b, shape=[{},{}], dtype=f32, space=hbm, addr=0x10000, role=input\n", k,
                   n);
  p += fmt::format(".buffer c, shape=[{},{}], dtype=f32, space=hbm, addr=0x20000, role=output\n", m,
                   n);
  // A column tile t, row r -> VMEM row t*M + r (lanes 0..N-1)
  p += fmt::format(
      ".dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner={}, counts=[{}, 2], "
      "src_strides=[{}, {}], dst_strides=[512, {}]\n",
      4 * n, m, 4 * k, 4 * n, 512 * m);
  // B row r -> VMEM row 2M + r
  p += fmt::format(
      ".dma_descriptor 16, src=hbm:0x10000, dst=vmem:{:#x}, inner={}, counts=[{}], "
      "src_strides=[{}], dst_strides=[512]\n",
      512 * bRow, 4 * n, k, 4 * n);
  // C: VMEM rows 2M + K .. -> HBM
  p += fmt::format(
      ".dma_descriptor 32, src=vmem:{:#x}, dst=hbm:0x20000, inner={}, counts=[{}], "
      "src_strides=[512], dst_strides=[{}]\n",
      512 * cRow, 4 * n, m, 4 * n);
  p += ".symbol main\n.op matmul\nmain:\n";
  p += "    sli s0, 0 ;; sli s1, 16\n    sli s2, 32\n";
  p += "    dma s0, f0, q0\n    dma s1, f0, q1\n    sync.wait f0, 2\n";
  for (int t = 0; t < 2; ++t) {
    for (int q = 0; q < n / 8; ++q)
      p += fmt::format(
          "    vld v0, s0, {}, 1, 255\n    vcvt.bf16.f32 v1, v0\n    mxu.wpush.bf16 mxu0, v1\n",
          bRow + t * n + 8 * q);
    p += "    mxu.latch mxu0\n";
    for (int b = 0; b < m / 8; ++b)
      p += fmt::format(
          "    vld v{}, s0, {}, 1, 255\n    vcvt.bf16.f32 v{}, v{}\n    mxu.{}.bf16 mxu0, v{}, "
          "a{}\n",
          2 + b % 8, t * m + 8 * b, 10 + b % 8, 2 + b % 8, t ? "mma" : "mm", 10 + b % 8, b);
  }
  for (int b = 0; b < m / 8; ++b)
    p += fmt::format("    mxu.pop v{}, mxu0, a{}\n    vst v{}, s0, {}, 1, 255\n", 20 + b % 8, b,
                     20 + b % 8, cRow + 8 * b);
  p += "    dma s2, f1, q0\n    sync.wait f1, 1\n    halt\n.endop\n";
  return p;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("tpusim gives identical cycles, stats and outputs with the RTL MXU") {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/tpusim_mxu_program_cosim";
  for (int n : {8, 16}) {
    std::vector<int> built = tpusim::sim::registeredRtlMxuSizes();
    if (std::find(built.begin(), built.end(), n) == built.end()) continue;
    INFO("preset tiny" << n);
    const std::string prog = fmt::format("{}_n{}.s", dir, n);
    {
      std::ofstream out(prog);
      out << matmulProgram(n, 32);
    }
    std::string stats[2], outputs[2];
    for (int kind = 0; kind < 2; ++kind) {
      tpusim::sim::TpusimArgs a;
      a.program = prog;
      a.chip = fmt::format("tiny{}", n);
      a.mxuModel = kind ? "rtl" : "fast";
      a.quiet = true;
      a.force = true;
      a.outputDir = fmt::format("{}_n{}_{}", dir, n, a.mxuModel);
      a.statsPath = a.outputDir + ".stats.json";
      REQUIRE(tpusim::sim::runTpusim(a) == 0);
      stats[kind] = readFile(a.statsPath);
      outputs[kind] = readFile(a.outputDir + "/c.npy");
    }
    REQUIRE(stats[0].find("\"total_cycles\"") != std::string::npos);
    REQUIRE(!outputs[0].empty());
    REQUIRE(stats[0] == stats[1]);
    REQUIRE(outputs[0] == outputs[1]);
  }
}
