// The grid reduce-scatter's plan (compiler/lower/collectives/GridReduceScatter.h):
// what it takes, the scratch it needs and its estimate against the links.
#include <catch2/catch.hpp>

#include <numeric>

#include "compiler/lower/collectives/GridAllGather.h"
#include "compiler/lower/collectives/GridReduceScatter.h"
#include "compiler/lower/collectives/HamiltonianRing.h"
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
  CHECK(choice({2, 4}, 16 << 20) == GridReduceAlgorithm::HamiltonianRing);
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

TEST_CASE("grid collectives: one ring over a Hamiltonian cycle of a non-square slice", "[spmd]") {
  // Measured on v5e 2x4 (docs/performance.md, branch tpucring): the grid
  // rings load the 4-chip lines' end links with 9/16 of V, the ring of all 8
  // chips every link with 7/16; reduce-scatter of 1 MiB 50,339 -> 27,746
  // cycles, 16 MiB 427,788 -> 286,619; below 1 MiB the grid keeps its fewer hops.
  target::ChipConfig v5e = target::loadChip("v5e");
  const target::IciConfig& ici = v5e.ici;
  std::vector<int> order = hamiltonianCycle({2, 4}, {0, 1}, ici);
  CHECK(order == std::vector<int>{0, 1, 2, 3, 7, 6, 5, 4});
  CHECK(hamiltonianCycle({4, 2}, {0, 1}, ici).size() == 8);
  CHECK(hamiltonianCycle({3, 3}, {0, 1}, ici).empty());    // both sides odd
  CHECK(hamiltonianCycle({2, 4}, {1}, ici).empty());       // row groups: the grid's line
  CHECK(hamiltonianCycle({16, 16}, {0, 1}, ici).empty());  // wraps: the grid's rings
  CHECK(gridBusiestLinkShare({2, 4}, {0, 1}, ici) == Approx(9.0 / 16));
  CHECK(ringBusiestLinkShare(8) == Approx(7.0 / 16));
  // Square slices: both the same, so they keep the grid.
  CHECK(gridBusiestLinkShare({2, 2}, {0, 1}, ici) == Approx(ringBusiestLinkShare(4)));
  CHECK(gridBusiestLinkShare({4, 4}, {0, 1}, ici) == Approx(ringBusiestLinkShare(16)));
  auto choice = [&](std::vector<int> slice, uint64_t operand) {
    int64_t n = 1;
    for (int d : slice) n *= d;
    return chooseGridReduce(
        everyDevice(slice, operand / uint64_t(n), hlo::PrimitiveType::F32, hlo::HloOpcode::Add),
        v5e);
  };
  const auto ring = GridReduceAlgorithm::HamiltonianRing;
  CHECK(choice({2, 4}, 256 << 10) != ring);
  CHECK(choice({2, 4}, 1 << 20) == ring);
  CHECK(choice({2, 4}, 4 << 20) == ring);
  CHECK(choice({2, 2}, 16 << 20) == GridReduceAlgorithm::Rings);
  CHECK(choice({4, 4}, 16 << 20) == GridReduceAlgorithm::Rings);
  // Its estimate is the ring's: 7 one-hop steps each way, at least 7/16 of V
  // over one link and 7 hop latencies.
  GridReduce g = everyDevice({2, 4}, 2 << 20, hlo::PrimitiveType::F32, hlo::HloOpcode::Add);
  const double link = 16.0 * (1 << 20) / (ici.link_bytes_per_second / v5e.core.clock_hz);
  CHECK(gridReduceScatterCycles(g, v5e) >= 7.0 / 16 * link + 7.0 * double(ici.latency_cycles));
  CHECK(gridReduceScatterCycles(g, v5e) <= 0.6 * link);
  // The all-gather takes it too where it wins, and its estimate then beats
  // the 9/16 of V the grid's busiest link carries.
  GridGather ag{g.groups, g.slice, g.gridDims, 2 << 20, 0, 16 << 20, {}};
  CHECK(gridAllGatherCycles(ag, v5e) < 9.0 / 16 * link);
}

TEST_CASE("grid reduce-scatter: rings on a 3-D slice whose share splits into odd thirds",
          "[spmd]") {
  // v4 4x4x4 (branch icirs): a share of 2^k f32 elements cut into three
  // exact parts gave streams whose bytes split into at most 2 pieces, too
  // large for a VMEM slot, so the rings did not fit and the line exchange ran
  // (16 MiB: 165,885 cycles; 64 MiB: 2,211,114, 12% of the bound). The parts
  // now start on multiples of 128 elements.
  target::ChipConfig v4 = target::loadChip("v4");
  for (uint64_t operand : {uint64_t(16) << 20, uint64_t(64) << 20}) {
    GridReduce g =
        everyDevice({4, 4, 4}, operand / 64, hlo::PrimitiveType::F32, hlo::HloOpcode::Add);
    CHECK(chooseGridReduce(g, v4) == GridReduceAlgorithm::Rings);
  }
}
