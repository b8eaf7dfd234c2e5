// The grid reduce-scatter's plan (compiler/lower/collectives/GridReduceScatter.h):
// what it takes, the scratch it needs and its estimate against the links.
#include <catch2/catch.hpp>

#include <numeric>

#include "compiler/lower/collectives/GridAllGather.h"
#include "compiler/lower/collectives/GridReduceScatter.h"
#include "compiler/lower/collectives/LineExchangeReduce.h"
#include "isa/target/ChipLoader.h"

using namespace tpusim;
using namespace tpusim::lower;

namespace {

// Every device of `slice` in one group, `bytes` per member's share.
GridReduce everyDevice(const std::vector<int>& slice, uint64_t share, hlo::PrimitiveType type,
                       hlo::HloOpcode op) {
  int64_t n = 1;
  for (int d : slice) n *= d;
  std::vector<int64_t> group(static_cast<size_t>(n));
  std::iota(group.begin(), group.end(), 0);
  GridReduce g;
  g.groups = {group};
  g.slice = slice;
  g.gridDims = *gridGatherDims(g.groups, slice);
  g.chunk = share;
  g.operand = 0;
  g.result = uint64_t(n) * share;
  g.type = type;
  g.op = op;
  return g;
}

}  // namespace

TEST_CASE("grid reduce-scatter: element types, ops and sizes it takes", "[spmd]") {
  target::ChipConfig v5e = target::loadChip("v5e");
  using hlo::HloOpcode;
  using hlo::PrimitiveType;
  CHECK(gridReduceSupports(PrimitiveType::F32, HloOpcode::Add));
  CHECK(gridReduceSupports(PrimitiveType::BF16, HloOpcode::Maximum));
  CHECK(gridReduceSupports(PrimitiveType::S32, HloOpcode::Minimum));
  CHECK_FALSE(gridReduceSupports(PrimitiveType::F16, HloOpcode::Add));
  CHECK_FALSE(gridReduceSupports(PrimitiveType::S32, HloOpcode::Xor));
  GridReduce g = everyDevice({4, 4}, 1 << 20, PrimitiveType::F32, HloOpcode::Add);
  CHECK(g.gridDims == std::vector<int>{0, 1});
  CHECK(gridReduceScatterFits(g, v5e));
  CHECK(gridReduceScratchBuffers(g) == 5);  // a work buffer, 2 phases x 2 directions
  g.type = PrimitiveType::F16;
  CHECK_FALSE(gridReduceScatterFits(g, v5e));
  // A share of one f32 element cannot be cut into one part per dimension.
  CHECK_FALSE(
      gridReduceScatterFits(everyDevice({4, 4}, 4, PrimitiveType::F32, HloOpcode::Add), v5e));
  // Addresses past 4 GiB cannot be patched into descriptors.
  GridReduce far = everyDevice({4, 4}, 1 << 20, PrimitiveType::F32, HloOpcode::Add);
  far.operand = uint64_t(5) << 30;
  CHECK_FALSE(gridReduceScatterFits(far, v5e));
}

TEST_CASE("grid reduce-scatter: the estimate follows the links", "[spmd]") {
  target::ChipConfig v5e = target::loadChip("v5e");  // 4x4: lines of 4, 30 B per cycle a link
  const double perCycle = v5e.ici.link_bytes_per_second / v5e.core.clock_hz;
  // 64 MiB over 16 chips: a corner chip sends 15/16 of it over its 2 links.
  GridReduce g = everyDevice({4, 4}, 4 << 20, hlo::PrimitiveType::F32, hlo::HloOpcode::Add);
  const double v = 64.0 * (1 << 20);
  const double link = v / perCycle;
  double cycles = gridReduceScatterCycles(g, v5e);
  CHECK(cycles >= 15.0 / 32.0 * link);
  CHECK(cycles <= 0.6 * link);
  // Smaller shares cost less, but not below the hops (3 per line, 2 phases).
  GridReduce small = everyDevice({4, 4}, 512, hlo::PrimitiveType::F32, hlo::HloOpcode::Add);
  double few = gridReduceScatterCycles(small, v5e);
  CHECK(few < cycles);
  CHECK(few >= 6.0 * double(v5e.ici.latency_cycles));
}

TEST_CASE("grid reduce-scatter: the line exchange where it wins", "[spmd]") {
  // Measured on v5e (docs/performance.md, "Sixth session"): on 4x4 the
  // exchange is faster from 256 KiB to 1 MiB of operand (one hop latency and
  // one combine per phase, instead of three in series), the rings below (the
  // exchange's handshake spans a whole line) and from 2 MiB (the exchange
  // carries more blocks over the middle links).
  target::ChipConfig v5e = target::loadChip("v5e");
  auto choice = [&](std::vector<int> slice, uint64_t operand) {
    int64_t n = 1;
    for (int d : slice) n *= d;
    return chooseGridReduce(
        everyDevice(slice, operand / uint64_t(n), hlo::PrimitiveType::F32, hlo::HloOpcode::Add),
        v5e);
  };
  const auto exchange = GridReduceAlgorithm::LineExchange, rings = GridReduceAlgorithm::Rings;
  CHECK(choice({4, 4}, 8 << 10) == rings);
  CHECK(choice({4, 4}, 64 << 10) == rings);
  CHECK(choice({4, 4}, 256 << 10) == exchange);
  CHECK(choice({4, 4}, 512 << 10) == exchange);
  CHECK(choice({4, 4}, 1 << 20) == exchange);
  CHECK(choice({4, 4}, 2 << 20) == rings);
  CHECK(choice({4, 4}, 16 << 20) == rings);
  CHECK(choice({2, 4}, 8 << 10) == rings);
  CHECK(choice({2, 4}, 512 << 10) == exchange);
  CHECK(choice({2, 4}, 16 << 20) == rings);
  CHECK(choice({4}, 32 << 10) == rings);
  CHECK(choice({4}, 128 << 10) == exchange);
  CHECK(choice({4}, 1 << 20) == rings);
  // Its estimate: the handshake and each phase's farthest hops (3 + 3 + 3 on
  // 4x4) at least, and close to what tpusim measured (25,431 cycles at 512 KiB).
  GridReduce g =
      everyDevice({4, 4}, (512 << 10) / 16, hlo::PrimitiveType::F32, hlo::HloOpcode::Add);
  CHECK(lineExchangeReduceFits(g, v5e));
  const double cycles = lineExchangeReduceCycles(g, v5e);
  CHECK(cycles >= 9.0 * double(v5e.ici.latency_cycles));
  CHECK(cycles == Approx(25431).epsilon(0.05));
  CHECK(gridReduceScatterCycles(g, v5e) == cycles);
}
