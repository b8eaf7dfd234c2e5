// The SPMD plan (compiler/lower/collectives/SpmdPlan.h): the slice a program
// for N devices runs on, hop counts with and without wraparound, ring orders,
// collective groups, and the choice between the one-shot and the ring
// algorithm from the preset's ICI fields.
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/lower/buffers/LoweringOrder.h"
#include "compiler/lower/collectives/CollectiveLowering.h"
#include "compiler/lower/collectives/SpmdPlan.h"
#include "isa/target/ChipLoader.h"
#include "testbench/unit/HloTestUtil.h"

using namespace tpusim;
using lower::CollectiveAlgorithm;

namespace {

std::unique_ptr<hlo::HloModule> parse(const std::string& text) { return testing::parseHlo(text); }

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("the slice of an SPMD program is the most square one that fits", "[spmd]") {
  target::ChipConfig v5e = target::loadChip("v5e");
  CHECK(lower::spmdSlice(2, v5e.ici) == std::vector<int>{1, 2});
  CHECK(lower::spmdSlice(4, v5e.ici) == std::vector<int>{2, 2});
  CHECK(lower::spmdSlice(8, v5e.ici) == std::vector<int>{2, 4});
  CHECK(lower::spmdSlice(6, v5e.ici) == std::vector<int>{2, 3});
  CHECK(lower::sliceText({2, 4}) == "2x4");
  target::ChipConfig tiny = target::loadChip("tiny8");  // pod 4x4
  CHECK_THROWS_WITH(lower::spmdSlice(32, tiny.ici), Catch::Contains("do not fit in the pod 4x4"));
}

TEST_CASE("hops and ring orders follow the slice's links", "[spmd]") {
  target::ChipConfig tiny = target::loadChip("tiny8");   // wrap_multiple 4
  target::ChipConfig v5e = target::loadChip("v5e");      // wrap_multiple 16
  CHECK(lower::sliceHops(0, 3, {1, 4}, tiny.ici) == 1);  // around the wrap
  CHECK(lower::sliceHops(0, 3, {1, 4}, v5e.ici) == 3);   // no wraparound in a 1x4 of 16x16
  CHECK(lower::sliceHops(0, 3, {2, 2}, v5e.ici) == 2);
  // Snake orders: every step, the closing one too, is one hop on a 2xK slice.
  CHECK(lower::ringOrder(iota(4), {2, 2}) == std::vector<int64_t>{0, 1, 3, 2});
  std::vector<int64_t> ring = lower::ringOrder(iota(8), {2, 4});
  CHECK(ring == std::vector<int64_t>{0, 1, 2, 3, 7, 6, 5, 4});
  for (size_t i = 0; i < ring.size(); ++i)
    CHECK(lower::sliceHops(ring[i], ring[(i + 1) % ring.size()], {2, 4}, v5e.ici) == 1);
  // A group keeps its members, in ring order.
  CHECK(lower::ringOrder({2, 0, 3, 1}, {2, 2}) == std::vector<int64_t>{0, 1, 3, 2});
}

TEST_CASE("collective groups: list and iota forms, devices of the module", "[spmd]") {
  auto m = parse(R"(HloModule g, num_partitions=4
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }
ENTRY e { p = f32[8] parameter(0)
  a = f32[8] all-reduce(p), channel_id=1, replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add
  b = f32[8] all-reduce(a), replica_groups={{3,1},{0,2}}, to_apply=add
  ROOT c = f32[8] all-reduce(b), replica_groups={}, to_apply=add })");
  CHECK(lower::spmdDeviceCount(*m) == 4);
  const hlo::HloComputation* e = m->entry();
  CHECK(lower::collectiveGroups(*e->findInstruction("a"), 4) ==
        lower::DeviceGroups{{0, 2}, {1, 3}});
  CHECK(lower::collectiveGroups(*e->findInstruction("b"), 4) ==
        lower::DeviceGroups{{3, 1}, {0, 2}});
  CHECK(lower::collectiveGroups(*e->findInstruction("c"), 4) == lower::DeviceGroups{iota(4)});
  CHECK_THROWS_WITH(lower::collectiveGroups(*e->findInstruction("b"), 3),
                    Catch::Contains("replica_groups name device 3 of 3 devices"));
  auto both = parse(
      "HloModule b, replica_count=2, num_partitions=2\n"
      "ENTRY e { ROOT p = f32[8] parameter(0) }");
  CHECK_THROWS_WITH(lower::spmdDeviceCount(*both), Catch::Contains("both replicas and partitions"));
}

TEST_CASE("one-shot or ring: the cost estimate from the preset", "[spmd]") {
  target::ChipConfig tiny = target::loadChip("tiny8");  // 1000 cycles per hop, 45 B per cycle
  // 2x2: no wraparound, 2 links out of a chip, diameter 2. 1 MiB per device:
  // one-shot = 2 x 1000 (sync) + 3 x 2^20 / (2 x 45) + 2 x 1000 (farthest member);
  // ring = 3 x (2000 + 2^20 / 4 / 45 + 1000) + one-shot of 2^20 / 4.
  const double b = 1 << 20;
  lower::AlgorithmChoice c =
      lower::chooseReductionAlgorithm(uint64_t(b), iota(4), {2, 2}, true, tiny);
  CHECK(c.oneShotCycles == Approx(4000 + 3 * b / 90));
  CHECK(c.ringCycles == Approx(3 * (3000 + b / 180) + 4000 + 3 * (b / 4) / 90));
  CHECK(c.algorithm == CollectiveAlgorithm::OneShot);  // the 2 links make one-shot win here
  // 1x8 on a 16x16 pod (no wraparound) vs v5e's 2x4: small messages are
  // latency-bound (one-shot), large ones bandwidth-bound (ring).
  target::ChipConfig v5e = target::loadChip("v5e");
  CHECK(lower::chooseReductionAlgorithm(8 << 10, iota(8), {2, 4}, true, v5e).algorithm ==
        CollectiveAlgorithm::OneShot);
  CHECK(lower::chooseReductionAlgorithm(64 << 20, iota(8), {2, 4}, true, v5e).algorithm ==
        CollectiveAlgorithm::Ring);
  // Not splittable into n chunks, or 2 members: always one-shot.
  CHECK(lower::chooseReductionAlgorithm(64 << 20, iota(8), {2, 4}, false, v5e).algorithm ==
        CollectiveAlgorithm::OneShot);
  CHECK(lower::chooseReductionAlgorithm(64 << 20, iota(2), {1, 2}, true, v5e).algorithm ==
        CollectiveAlgorithm::OneShot);
}

TEST_CASE("the collectives reserve the flags the module's primitives need", "[spmd]") {
  target::ChipConfig v5e = target::loadChip("v5e");
  target::ChipConfig v4 = target::loadChip("v4");
  // No collective (a device id is a local DMA on a kernel flag): none.
  auto id = parse(R"(HloModule m, num_partitions=8
ENTRY e {
  ROOT d = s32[] custom-call(), custom_call_target="tpusim$device-id"
})");
  CHECK(lower::spmdReservedFlags(*id, v5e) == 0);
  // A permute: the barrier, arrival, sent and ready flags.
  auto permute = parse(R"(HloModule m, num_partitions=8
ENTRY e {
  x = f32[8] parameter(0)
  ROOT p = f32[8] collective-permute(x), source_target_pairs={{0,1},{1,0}}
})");
  CHECK(lower::spmdReservedFlags(*permute, v5e) == lower::kSpmdBaseFlags);
  // An all-gather over a 2-D slice (v5e 2x4): plus 2 x 2^2 stream flags;
  // over a 3-D one (v4 2x2x2): plus 2 x 3^2.
  auto gather = parse(R"(HloModule m, num_partitions=8
ENTRY e {
  x = f32[8] parameter(0)
  ROOT g = f32[64] all-gather(x), replica_groups={}, dimensions={0}
})");
  CHECK(lower::spmdReservedFlags(*gather, v5e) == lower::kSpmdBaseFlags + 8);
  CHECK(lower::spmdReservedFlags(*gather, v4) == lower::kSpmdBaseFlags + 18);
  // Groups along one dimension of the slice (the rows of 2x4): one grid dimension.
  auto rows = parse(R"(HloModule m, num_partitions=8
ENTRY e {
  x = f32[8] parameter(0)
  ROOT g = f32[32] all-gather(x), replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={0}
})");
  CHECK(lower::spmdReservedFlags(*rows, v5e) == lower::kSpmdBaseFlags + 2);
  // Over a slice whose dimensions all wrap (v4 4x4x4): plus a sent flag per
  // dimension and direction, the paced links of the rings' pieces.
  auto rings = parse(R"(HloModule m, num_partitions=64
ENTRY e {
  x = f32[64] parameter(0)
  ROOT g = f32[4096] all-gather(x), replica_groups={}, dimensions={0}
})");
  CHECK(lower::spmdReservedFlags(*rings, v4) == lower::kSpmdBaseFlags + 18 + 6);
}

TEST_CASE("an async pair's done is lowered after the work that does not need it", "[spmd]") {
  auto m = parse(R"(HloModule m, num_partitions=2
ENTRY e {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  s = f32[16] custom-call(x), custom_call_target="tpusim$all-gather-start", replica_groups={}
  d = f32[16] custom-call(s, x), custom_call_target="tpusim$all-gather-done"
  r = f32[8] slice(d), slice={[0:8]}
  a = f32[8] add(r, x)
  e = f32[8] exponential(y)
  t = f32[8] tanh(e)
  ROOT o = (f32[8], f32[8]) tuple(a, t)
})");
  std::vector<std::string> names;
  for (const hlo::HloInstruction* i : lower::loweringOrder(*m->entry())) names.push_back(i->name());
  auto at = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) - names.begin();
  };
  // The post order would put e and t after the done's users; the schedule
  // moves the start first and the done after them.
  CHECK(at("s") < at("e"));
  CHECK(at("t") < at("d"));
  CHECK(at("d") < at("r"));
  CHECK(at("a") < at("o"));
  CHECK(names.size() == 9);
}

TEST_CASE("with several async pairs and a chip, the work is spread over their windows", "[spmd]") {
  // Two chained pairs (a ring's steps): s1 -> d1 -> s2 -> d2, and four
  // independent kernels. Without a chip every kernel lands in s1's window;
  // with v5e's estimates (32 KiB over one link: about 1.1k + 1.5k cycles of
  // hop; each 1 MiB kernel about 3.8k cycles of HBM) the first kernel covers
  // s1's transfer, so d1 and s2 follow it and the others overlap s2.
  auto m = parse(R"(HloModule m, num_partitions=2
ENTRY e {
  x = f32[8192] parameter(0)
  y = f32[262144] parameter(1)
  s1 = f32[8192] custom-call(x), custom_call_target="tpusim$permute-start", source_target_pairs={{0,1},{1,0}}
  d1 = f32[8192] custom-call(s1, x), custom_call_target="tpusim$permute-done"
  s2 = f32[8192] custom-call(d1), custom_call_target="tpusim$permute-start", source_target_pairs={{0,1},{1,0}}
  d2 = f32[8192] custom-call(s2, d1), custom_call_target="tpusim$permute-done"
  e1 = f32[262144] exponential(y)
  t1 = f32[262144] tanh(e1)
  e2 = f32[262144] exponential(t1)
  t2 = f32[262144] tanh(e2)
  ROOT o = (f32[8192], f32[262144]) tuple(d2, t2)
})");
  auto positions = [&](const target::ChipConfig* chip) {
    std::map<std::string, size_t> at;
    std::vector<hlo::HloInstruction*> order = lower::loweringOrder(*m->entry(), chip);
    for (size_t k = 0; k < order.size(); ++k) at[order[k]->name()] = k;
    return at;
  };
  auto plain = positions(nullptr);
  CHECK(plain.at("t2") < plain.at("d1"));
  const target::ChipConfig v5e = target::loadChip("v5e");
  auto spread = positions(&v5e);
  CHECK(spread.at("s1") < spread.at("e1"));
  CHECK(spread.at("e1") < spread.at("d1"));
  CHECK(spread.at("d1") < spread.at("s2"));
  CHECK(spread.at("s2") < spread.at("t1"));
  CHECK(spread.at("t2") < spread.at("d2"));
  // Deterministic.
  CHECK(positions(&v5e) == spread);
}

TEST_CASE("async slots: one per start in a computation, at most kMaxAsyncInFlight", "[spmd]") {
  auto two = parse(R"(HloModule m, num_partitions=2
ENTRY e {
  x = f32[8] parameter(0)
  s1 = f32[8] custom-call(x), custom_call_target="tpusim$permute-start", source_target_pairs={{0,1},{1,0}}
  s2 = f32[8] custom-call(x), custom_call_target="tpusim$permute-start", source_target_pairs={{0,1},{1,0}}
  d1 = f32[8] custom-call(s1, x), custom_call_target="tpusim$permute-done"
  d2 = f32[8] custom-call(s2, x), custom_call_target="tpusim$permute-done"
  ROOT o = (f32[8], f32[8]) tuple(d1, d2)
})");
  CHECK(lower::spmdAsyncSlots(*two) == 2);
  const target::ChipConfig v5e = target::loadChip("v5e");
  CHECK(lower::spmdReservedFlags(*two, v5e) == lower::kSpmdBaseFlags + lower::kAsyncSlotFlags);
}
