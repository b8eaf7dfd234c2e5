// Input blocks that arrive in parts (CopyPlan.h arrivalParts, Lowerer::Arrival):
// which streams are split, how a block's copy is cut into row ranges, and a
// matmul whose LHS arrives in parts computing what interpret mode does, bit for
// bit, on the simulator (functional mode: each part's data lands when its
// descriptor completes, so a read before its wait would see stale rows).
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "kernels/codegen/Compile.h"
#include "kernels/codegen/CopyPlan.h"
#include "kernels/codegen/FirstRead.h"
#include "kernels/codegen/RegAlloc.h"
#include "kernels/codegen/Scheduler.h"
#include "kernels/dsl/PallasCall.h"
#include "kernels/lib/FlashAttention.h"
#include "kernels/lib/Matmul.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::codegen;
using isa::Opcode;

namespace {

auto matmul(int64_t m, int64_t n, int64_t k, lib::MatmulBlocks b) {
  return lib::matmulCall(m, n, k, dsl::BF16, b).trace({{{m, k}, dsl::BF16}, {{k, n}, dsl::BF16}});
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

MOperand I(int64_t v) { return MOperand::imm(v); }

}  // namespace

TEST_CASE("only blocks that stay for several steps arrive in parts") {
  // Grid 2 x 4: x's block stays for a row of 4 N blocks, y's changes every step.
  auto k = matmul(1024, 1024, 1024, {512, 256, 1024});
  const llo::Type x = k->inputs[0].hbmType(), y = k->inputs[1].hbmType();
  CHECK(arrivalParts(*k, k->inMaps[0], x, 8) == 2);  // 1 MiB: two parts of 512 KiB
  CHECK(arrivalParts(*k, k->inMaps[1], y, 8) == 1);
  CHECK(arrivalParts(*k, k->inMaps[0], x, 2) == 1);  // half a queue of 2: one part
  auto big = matmul(4096, 4096, 4096, {2048, 1024, 4096});
  CHECK(arrivalParts(*big, big->inMaps[0], big->inputs[0].hbmType(), 8) == kMaxArrivalParts);
  // One block per step and a single step: nothing to gain.
  auto one = matmul(1024, 1024, 1024, {1024, 1024, 1024});
  CHECK(arrivalParts(*one, one->inMaps[0], one->inputs[0].hbmType(), 8) == 1);
}

TEST_CASE("a block copied in parts moves the same bytes, a row range per part") {
  const llo::Type hbm = llo::Type::ref(llo::MemSpace::Hbm, llo::DType::Bf16, {4096, 4096});
  const llo::Type block = llo::Type::ref(llo::MemSpace::Vmem, llo::DType::Bf16, {2048, 4096});
  CopyPlan whole = planBlockCopy(hbm, block, false, {2048, 4096});
  CopyPlan parts = planBlockCopy(hbm, block, false, {2048, 4096}, /*pairRows=*/0, /*parts=*/4);
  CHECK(parts.bytes == whole.bytes);
  CHECK(parts.partRowEnd == std::vector<int64_t>{512, 1024, 1536, 2048});
  REQUIRE(parts.descriptors.size() == 4);
  CHECK(parts.srcOffset[1] == 512 * 4096 * 2);            // dense bf16 rows in HBM
  CHECK(parts.dstOffset[1] == 512 * isa::kVmemRowBytes);  // row 512 of each column tile
  CHECK_THROWS_AS(planBlockCopy(hbm, block, true, {2048, 4096}, 0, 4), CodegenError);
}

TEST_CASE("a chunk wait orders only its region's accesses") {
  TargetInfo t = testing::kernelTarget("v5e");
  MFunction fn;
  MBlock b;
  auto load = [&](MOperand base, int region, int64_t row) {
    MInstr mi = makeInstr(Opcode::VLd, {fn.newReg(RegClass::Vector), base, I(0), I(1), I(0xFF)});
    mi.mem = {MemAccess::Space::Vmem, region, false, row, 8};
    b.instrs.push_back(mi);
  };
  MOperand base = fn.newReg(RegClass::Scalar), late = base;
  b.instrs.push_back(makeInstr(Opcode::SLi, {base, I(0)}));
  for (int i = 0; i < 6; ++i) {  // a chain: the first part's read issues late
    MOperand next = fn.newReg(RegClass::Scalar);
    b.instrs.push_back(makeInstr(Opcode::SAddI, {next, late, I(0)}));
    late = next;
  }
  load(late, 7, 0);  // 7: a read of the part before
  MInstr wait = makeInstr(Opcode::SyncWait, {I(0), I(1)});
  wait.waitRegion = 7;
  b.instrs.push_back(wait);  // 8
  load(base, 3, 0);          // 9: another region
  load(base, 7, 64);         // 10: the part waited for
  BlockSchedule s = scheduleBlock(b, t);
  CHECK(s.cycle[8] >= s.cycle[7]);
  CHECK(s.cycle[10] > s.cycle[8]);
  CHECK(s.cycle[9] < s.cycle[8]);  // moves above the wait
  b.instrs[8].waitRegion = -1;     // a plain sync.wait is a barrier
  BlockSchedule plain = scheduleBlock(b, t);
  CHECK(plain.cycle[9] > plain.cycle[8]);
}

TEST_CASE("a matmul whose LHS arrives in parts equals interpret mode bit for bit") {
  // v6e: x blocks of 512 x 1024 in two parts; grid 2 x 2 in serpentine order,
  // so steps 1 and 3 keep their x block (signalled) and step 2 keeps y.
  auto k = matmul(1024, 512, 1024, {512, 256, 1024});
  testing::SimCheck r = testing::checkSimAgainstInterpret(*k, "v6e", 5);
  const std::string& text = r.compiled.machineText;
  CHECK(count(text, "sync.signal f0, 2") == 1);
  CHECK(count(text, "sync.wait f0, 1") == 2);  // one per part, inside the body
  // v5e: the same with 128-wide MXUs (x blocks of 1024 x 512, two parts).
  auto k5 = matmul(2048, 256, 512, {1024, 128, 512});
  testing::SimCheck r5 = testing::checkSimAgainstInterpret(*k5, "v5e", 6);
  CHECK(count(r5.compiled.machineText, "sync.signal f0, 2") == 1);
}

namespace {

auto flash(int64_t bh, int64_t seq, bool causal = false, bool pairQ = false) {
  lib::FlashAttentionParams p;  // as tpu-kernel builds it for v5e, blocks 512 x 512
  p.causal = causal;
  p.pairQ = pairQ;
  p.blockQ = p.blockK = 512;
  p.latchV = true;
  p.mxuSize = 128;
  p.mxuCount = 4;
  p.scoreNext = p.scoreNextQ = true;
  return lib::flashAttentionCall(bh, seq, seq, 128, p)
      .trace(lib::flashAttentionInputs(bh, seq, seq, 128, 1));
}

}  // namespace

TEST_CASE("a block copied once for the grid arrives in smaller parts, leading unit dims too") {
  // One head: q's and K's whole-head blocks (1 x 2048 x 128 bf16, 512 KiB)
  // are copied once; V's block changes every step.
  auto k = flash(1, 2048);
  auto parts = [&](const std::unique_ptr<llo::Kernel>& kk, size_t i) {
    return arrivalParts(*kk, kk->inMaps.at(i), kk->inputs.at(i).hbmType(), 8);
  };
  CHECK(parts(k, 0) == kMaxArrivalParts);
  CHECK(parts(k, 1) == kMaxArrivalParts);
  CHECK(parts(k, 2) == 1);
  // Two heads: a new whole-head block per head, under kMinArrivalPartBytes.
  auto two = flash(2, 2048);
  CHECK(parts(two, 0) == 1);
  CHECK(parts(two, 1) == 1);
  // Causal, q blocks not paired: the step's first read of q and K is in a
  // one-sided `if` (steps above the diagonal compute nothing), which waits
  // for every block still arriving (FirstRead.h): the heads arrive whole.
  auto causal = flash(1, 2048, true);
  CHECK_FALSE(firstReadByRows(*causal, causal->inMaps[0], true));
  CHECK(parts(causal, 0) == 1);
  CHECK(parts(causal, 1) == 1);
  // Paired: every step computes (no such `if`), and the init `if` before the
  // first reads writes only scratch, so it waits for none: the heads arrive
  // in parts (were whole: a one-sided `if` waited for all).
  auto paired = flash(1, 2048, true, true);
  CHECK(firstReadByRows(*paired, paired->inMaps[0], true));
  CHECK(firstReadByRows(*paired, paired->inMaps[1], true));
  CHECK(parts(paired, 0) == kMaxArrivalParts);
  CHECK(parts(paired, 1) == kMaxArrivalParts);
  CHECK(firstReadByRows(*k, k->inMaps[0], true));
  CHECK(firstReadByRows(*k, k->inMaps[1], true));
  const llo::Type hbm = llo::Type::ref(llo::MemSpace::Hbm, llo::DType::Bf16, {1, 2048, 128});
  const llo::Type block = llo::Type::ref(llo::MemSpace::Vmem, llo::DType::Bf16, {1, 2048, 128});
  CopyPlan cp = planBlockCopy(hbm, block, false, {1, 2048, 128}, 0, 4);
  CHECK(cp.partRowEnd == std::vector<int64_t>{512, 1024, 1536, 2048});
  REQUIRE(cp.descriptors.size() == 4);
  CHECK(cp.srcOffset[1] == 512 * 128 * 2);
  CHECK(cp.dstOffset[1] == 512 * isa::kVmemRowBytes);
}

TEST_CASE("flash attention's first step waits only for the rows its score dots read") {
  // Seq 1024, blocks 512: q and K whole heads (256 KiB) in 4 parts of 128
  // rows. The first step's dots read q rows [0, 512) and K rows [0, 1024):
  // it waits for q's first 4 parts where they are read, and for the rest
  // at the end of its branch; outputs equal interpret mode bit for bit.
  auto k = flash(1, 1024);
  testing::SimCheck r = testing::checkSimAgainstInterpret(*k, "v5e", 7);
  const std::string& text = r.compiled.machineText;
  // A whole-block wait of q or K would be "sync.wait fN, 4" before any mm.
  const size_t firstMm = text.find("mxu.mm");
  REQUIRE(firstMm != std::string::npos);
  CHECK(count(text.substr(0, firstMm), "sync.wait") >= 1);
  CHECK(count(text, "sync.wait f0, 1") + count(text, "sync.wait f1, 1") >= 2);
  // No pipeline code per step for the heads: each step's end signals their
  // parts' count for the next (the loop runs them all), the epilogue waits
  // for the last step's.
  const size_t epilogue = text.rfind("epilogue");
  REQUIRE(epilogue != std::string::npos);
  CHECK(count(text, "sync.signal f0, 4") == 1);
  CHECK(count(text, "sync.signal f1, 4") == 1);
  CHECK(count(text.substr(epilogue), "sync.wait f0, 4") == 1);
  CHECK(count(text.substr(epilogue), "sync.wait f1, 4") == 1);
}

TEST_CASE("causal flash attention's heads arrive in parts; the init waits for none of them") {
  // Seq 1024, blocks 512, q blocks paired: q's and K's whole heads (256 KiB)
  // in 4 parts of 256 rows. The first step (q block 0's diagonal) first runs
  // the init (a one-sided `if` on scratch only), then reads q and K rows
  // [0, 512): K's first 2 parts, where its dot reads them (were whole
  // heads: no part waits at all); outputs equal interpret mode bit for bit.
  auto k = flash(1, 1024, true, true);
  testing::SimCheck r = testing::checkSimAgainstInterpret(*k, "v5e", 8);
  const std::string& text = r.compiled.machineText;
  CHECK(count(text, "sync.signal f0, 4") == 1);  // q's and K's heads: 4 parts
  CHECK(count(text, "sync.signal f1, 4") == 1);
  CHECK(count(text, "sync.wait f1, 2") >= 1);
  CHECK(count(text, "sync.wait f0, 1") + count(text, "sync.wait f0, 2") >= 1);
}

TEST_CASE("a 2-D block copied once keeps whole-block parts; read whole first, one part") {
  using namespace dsl;
  // x (512 KiB f32) copied once for a grid of 2; out[i] = x[0:8] + y[i].
  auto kernel = [](auto body) {
    CallConfig c;
    c.name = "once";
    c.out_shapes = {{{16, 256}, F32, "out"}};
    c.grid = {2};
    auto zero = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
    auto row = [](const GridIndex& g) { return std::vector<Scalar>{g[0], 0}; };
    c.in_specs = {BlockSpec({512, 256}, zero), BlockSpec({8, 256}, row)};
    c.out_specs = {BlockSpec({8, 256}, row)};
    c.compiler_params.dimension_semantics = {ARBITRARY};
    return pallas_call(body, c).trace({{{512, 256}, F32, "x"}, {{16, 256}, F32, "y"}});
  };
  auto byRows =
      kernel([](Ref x, Ref y, Ref o) { o.store(x.load(ds(0, 8), ds(0, 256)) + y.load()); });
  CHECK(firstReadByRows(*byRows, byRows->inMaps[0], true));
  // 2-D: parts of kMinArrivalPartBytes, so 512 KiB is one (were 4 of 128 KiB:
  // the tiny prefill's SwiGLU x then shared HBM with the weights' first copies).
  CHECK(arrivalParts(*byRows, byRows->inMaps[0], byRows->inputs[0].hbmType(), 8) == 1);
  // The first op a one-sided `if` on the step: it waits for all of x first.
  auto whole = kernel([](Ref x, Ref y, Ref o) {
    when(program_id(0) == 0, [&] { o.store(y.load()); });
    o.store(x.load(ds(0, 8), ds(0, 256)) + y.load());
  });
  CHECK_FALSE(firstReadByRows(*whole, whole->inMaps[0], true));
  // A one-sided `if` that reads no input block waits for none: x's first
  // read is still the load of its first rows.
  auto outOnly = kernel([](Ref x, Ref y, Ref o) {
    when(program_id(0) == 0, [&] { o.store(zeros(8, 256)); });
    o.store(x.load(ds(0, 8), ds(0, 256)) + y.load());
  });
  CHECK(firstReadByRows(*outOnly, outOnly->inMaps[0], true));
}

TEST_CASE("a block in parts that is not copied once keeps its first copy on its own queue") {
  // out[i] = x + y[min(i, 1)], grid 3: x (1 MiB f32) is copied once, y's
  // block (1 MiB) changes at step 1 and stays at step 2; both arrive in two
  // parts. y's next block is started on y's queue before step 0's body waits
  // for y's first block: had that first block gone on x's queue (behind x's
  // parts), the next one could count on y's flag first and step 0 would read
  // rows still in flight.
  using namespace dsl;
  CallConfig c;
  c.name = "two_streams_in_parts";
  c.out_shapes = {{{1536, 512}, F32, "out"}};
  c.grid = {3};
  c.in_specs = {BlockSpec({512, 512},
                          [](const GridIndex&) {
                            return std::vector<Scalar>{0, 0};
                          }),
                BlockSpec({512, 512}, [](const GridIndex& g) {
                  return std::vector<Scalar>{min(g[0], Scalar(1)), 0};
                })};
  c.out_specs = {BlockSpec({512, 512}, [](const GridIndex& g) {
    return std::vector<Scalar>{g[0], 0};
  })};
  c.compiler_params.dimension_semantics = {ARBITRARY};
  auto k = pallas_call([](Ref x, Ref y, Ref o) { o.store(x.load() + y.load()); }, c)
               .trace({{{512, 512}, F32, "x"}, {{1024, 512}, F32, "y"}});
  CHECK(copiedOnce(*k, k->inMaps[0]));
  CHECK_FALSE(copiedOnce(*k, k->inMaps[1]));
  CHECK(arrivalParts(*k, k->inMaps[0], k->inputs[0].hbmType(), 8) == 2);
  CHECK(arrivalParts(*k, k->inMaps[1], k->inputs[1].hbmType(), 8) == 2);
  testing::SimCheck r = testing::checkSimAgainstInterpret(*k, "v5e", 8);
  // y's copies all on its own queue (flag 1).
  CHECK(count(r.compiled.machineText, "f1, q0") == 0);
}

TEST_CASE("a batched step's block is copied in parts of whole entries") {
  // Decode attention's q.K step: 32 heads x 256 keys x 128 of a [32, 1024, 128]
  // key array (2 MiB) in 4 parts of 8 heads; each part its own descriptors,
  // at the part's first head in HBM and in VMEM.
  const llo::Type hbm = llo::Type::ref(llo::MemSpace::Hbm, llo::DType::Bf16, {32, 1024, 128});
  const llo::Type block = llo::Type::ref(llo::MemSpace::Vmem, llo::DType::Bf16, {32, 256, 128});
  CHECK(entriesBlock(block.shape));
  CHECK_FALSE(entriesBlock({1, 256, 128}));
  CHECK_FALSE(entriesBlock({256, 128}));
  CopyPlan whole = planBlockCopy(hbm, block, false, {32, 256, 128});
  CopyPlan parts = planBlockCopy(hbm, block, false, {32, 256, 128}, /*pairRows=*/0, /*parts=*/4);
  CHECK(parts.partsByEntry);
  CHECK(parts.bytes == whole.bytes);
  CHECK(parts.partRowEnd == std::vector<int64_t>{8, 16, 24, 32});
  REQUIRE(parts.partDescriptors.size() == 4);
  const size_t second = size_t(parts.partDescriptors[0]);
  REQUIRE(second < parts.descriptors.size());
  CHECK(parts.srcOffset[second] == 8 * 1024 * 128 * 2);
  CHECK(parts.dstOffset[second] ==
        8 * llo::tiledLayout({256, 128}).totalRows() * isa::kVmemRowBytes);
}

// The prologue's copies, in issue order (flags and queues of the DMAs before
// the first wait).
std::vector<std::string> prologueCopies(const std::string& machineText) {
  std::vector<std::string> out;
  const std::string head = machineText.substr(0, machineText.find("sync.wait"));
  std::regex dma(R"(dma s\d+, (f\d+, q\d+))");
  for (auto it = std::sregex_iterator(head.begin(), head.end(), dma); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1]);
  return out;
}

TEST_CASE(
    "the prologue copies the heads' first parts, the whole blocks, then the parts read first") {
  // Seq 2048, blocks 512: q's and K's whole heads (f0, f1) in 4 parts of 512
  // rows, V's block (f2) whole. All on one queue (each completes in order):
  // the parts the first step reads first, V's first block behind them (was
  // first, on its own queue, sharing HBM with them), then the later parts of
  // the head the first step reads past its first part.
  const TargetInfo t = testing::kernelTarget("v5e");
  // Causal, paired: the first step (q block 0's diagonal) reads K rows
  // [0, 512) and q's block 0 and (the next q block's first scores) block 3.
  auto causal = flash(1, 2048, true, true);
  CHECK_FALSE(firstStepReadsWithin(*causal, causal->inMaps[0], 512));
  CHECK(firstStepReadsWithin(*causal, causal->inMaps[1], 512));
  CHECK(prologueCopies(compileKernel(*causal, t).machineText) ==
        std::vector<std::string>{"f0, q0", "f1, q0", "f2, q0", "f0, q0", "f0, q0", "f0, q0",
                                 "f1, q0", "f1, q0", "f1, q0"});
  // Not causal: the first step reads q's block 0 and K's blocks 0 and 1 (the
  // next step's scores).
  auto plain = flash(1, 2048);
  CHECK(firstStepReadsWithin(*plain, plain->inMaps[0], 512));
  CHECK_FALSE(firstStepReadsWithin(*plain, plain->inMaps[1], 512));
  CHECK(prologueCopies(compileKernel(*plain, t).machineText) ==
        std::vector<std::string>{"f0, q0", "f1, q0", "f2, q0", "f1, q0", "f1, q0", "f1, q0",
                                 "f0, q0", "f0, q0", "f0, q0"});
}
