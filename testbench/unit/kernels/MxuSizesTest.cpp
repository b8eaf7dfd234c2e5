// Matmuls on MXUs other than 128x128, run on the simulator (functional,
// --strict) against interpret mode bit for bit: v6e's 256x256 arrays (every
// MXU row a register pair) and the tiny presets' 16x16 and 8x8 arrays (K
// chunks and column tiles at lane offsets, rotated on the XLU). Shapes cover
// whole tiles, ragged M/N/K (partial chunks, a chunk whose upper half is all
// padding, edge column tiles of one half), bf16 and s8, the accumulating and
// the plain form, a transposed RHS and a transposed LHS. Also the register pairs themselves:
// allocation to adjacent registers under pressure and the hazard check of the
// upper half.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <tuple>

#include "kernels/codegen/Compile.h"
#include "kernels/codegen/HazardCheck.h"
#include "kernels/codegen/RegAlloc.h"
#include "kernels/codegen/Scheduler.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/lib/Matmul.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

// Compiles `k` for `chip`, runs it and compares every output with interpret
// mode using the chip's MXU size (its k-order accumulation in chunks).
void checkAgainstInterpret(const llo::Kernel& k, const std::string& chip, uint64_t seed) {
  testing::checkSimAgainstInterpret(k, chip, seed);
}

void checkLibMatmul(const std::string& chip, int64_t m, int64_t n, int64_t k, llo::DType dt,
                    lib::MatmulBlocks b) {
  INFO(chip << " " << isa::dtypeName(dt) << " " << m << "x" << n << "x" << k << " blocks " << b.bm
            << "x" << b.bn << "x" << b.bk);
  auto call = lib::matmulCall(m, n, k, dt, b);
  checkAgainstInterpret(*call.trace({{{m, k}, dt, "x"}, {{k, n}, dt, "y"}}), chip,
                        uint64_t(m * 7 + n * 3 + k));
}

// out = x @ y^T with y given as (N, K), written by a plain (non-accumulating) dot.
void checkTransposedRhs(const std::string& chip, int64_t m, int64_t n, int64_t k, llo::DType dt) {
  INFO(chip << " transposed rhs " << isa::dtypeName(dt) << " " << m << "x" << n << "x" << k);
  CallConfig c;
  c.name = "matmul_nt";
  c.out_shapes = {{{m, n}, dt == BF16 ? F32 : S32, "out"}};
  c.grid = {1};
  auto whole = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({m, k}, whole), BlockSpec({n, k}, whole)};
  c.out_specs = {BlockSpec({m, n}, whole)};
  auto call = pallas_call(
      [](Ref x, Ref y, Ref o) {
        o.store(dot(x.load(), y.load(), DotOptions{false, true}));
      },
      c);
  checkAgainstInterpret(*call.trace({{{m, k}, dt, "x"}, {{n, k}, dt, "y"}}), chip,
                        uint64_t(m + n + k));
}

// out = x^T @ y with x given as (K, M): the LHS goes through the transpose
// unit into VMEM (128 x 128 blocks) before the MXU reads it; `rhsT` also
// gives y as (N, K).
void checkTransposedLhs(const std::string& chip, int64_t m, int64_t n, int64_t k, llo::DType dt,
                        bool rhsT = false) {
  INFO(chip << " transposed lhs " << isa::dtypeName(dt) << " " << m << "x" << n << "x" << k
            << (rhsT ? " (rhs transposed too)" : ""));
  CallConfig c;
  c.name = "matmul_tn";
  c.out_shapes = {{{m, n}, dt == BF16 ? F32 : S32, "out"}};
  c.grid = {1};
  auto whole = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  std::vector<int64_t> yShape = rhsT ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
  c.in_specs = {BlockSpec({k, m}, whole), BlockSpec(yShape, whole)};
  c.out_specs = {BlockSpec({m, n}, whole)};
  auto call = pallas_call(
      [rhsT](Ref x, Ref y, Ref o) {
        o.store(dot(x.load(), y.load(), DotOptions{true, rhsT}));
      },
      c);
  checkAgainstInterpret(*call.trace({{{k, m}, dt, "x"}, {yShape, dt, "y"}}), chip,
                        uint64_t(m * 5 + n + k));
}

}  // namespace

TEST_CASE("transposed LHS (the transpose unit): matmuls equal interpret mode") {
  // Whole 128 blocks; ragged M, N, K (a block with rows past K pushed as
  // zeros, rows of the transpose past M not stored); several blocks per K
  // chunk and per row group; an MXU's items chunk by chunk; both operands
  // transposed; s8.
  checkTransposedLhs("v6e", 256, 256, 256, BF16);
  checkTransposedLhs("v6e", 100, 300, 300, BF16);
  checkTransposedLhs("v6e", 520, 256, 384, BF16);
  // Two items per MXU in disjoint result slots: they go through the K chunks together.
  checkTransposedLhs("v6e", 256, 2048, 512, BF16);
  checkTransposedLhs("v6e", 64, 512, 400, BF16, true);
  checkTransposedLhs("v6e", 72, 130, 200, S8);
  checkTransposedLhs("v5e", 136, 128, 260, BF16);
  checkTransposedLhs("tiny16", 12, 44, 60, BF16);
  checkTransposedLhs("tiny8", 16, 24, 140, BF16, true);
}

TEST_CASE("v6e (256x256 MXUs): matmuls equal interpret mode on the simulator") {
  SECTION("whole 256 tiles, one K block (accumulating into the output)") {
    checkLibMatmul("v6e", 256, 512, 512, BF16, {256, 512, 512});
    checkLibMatmul("v6e", 256, 512, 512, S8, {256, 512, 512});
  }
  SECTION("ragged M, N, K: partial chunks and half-empty column tiles") {
    // K 300: chunk 1 has 44 valid rows (only its lower half); N 300: column
    // tile 1 has 44 columns (its upper half is absent); M 100: a 4-row tile.
    checkLibMatmul("v6e", 100, 300, 300, BF16, {100, 300, 300});
    checkLibMatmul("v6e", 100, 300, 300, S8, {100, 300, 300});
    // K 400: chunk 1 has 144 rows (lower half full, upper half 16 lanes).
    checkLibMatmul("v6e", 72, 130, 400, BF16, {72, 130, 400});
  }
  SECTION("several K blocks through a scratch accumulator, masked K tail") {
    // bk 384 = one full chunk + a chunk whose upper half is padding; the last
    // K block holds 216 valid rows.
    checkLibMatmul("v6e", 64, 384, 600, BF16, {64, 384, 384});
    checkLibMatmul("v6e", 64, 384, 600, S8, {64, 384, 384});
  }
  SECTION("more row tiles than result slots, several items per MXU") {
    checkLibMatmul("v6e", 520, 1024, 256, BF16, {520, 1024, 256});  // 65 row tiles, 64 slots
  }
  SECTION("transposed RHS") {
    checkTransposedRhs("v6e", 64, 512, 512, BF16);
    checkTransposedRhs("v6e", 40, 300, 400, BF16);
    checkTransposedRhs("v6e", 40, 300, 400, S8);
  }
}

TEST_CASE("tiny16 and tiny8 (16x16 and 8x8 MXUs): matmuls equal interpret mode") {
  for (const char* chip : {"tiny16", "tiny8"}) {
    // Whole 128-lane tiles hold 128 / N chunks and column tiles at lane offsets.
    checkLibMatmul(chip, 16, 128, 128, BF16, {16, 128, 128});
    checkLibMatmul(chip, 16, 128, 128, S8, {16, 128, 128});
    // Ragged: K 60 ends in a partial chunk, N 44 in a partial column tile, M 12.
    checkLibMatmul(chip, 12, 44, 60, BF16, {12, 44, 60});
    checkLibMatmul(chip, 12, 44, 60, S8, {12, 44, 60});
    checkTransposedRhs(chip, 12, 44, 60, BF16);
  }
}

TEST_CASE("MXU register pairs get adjacent registers and both halves are hazard-checked") {
  using namespace codegen;
  using isa::Opcode;
  TargetInfo t = testing::kernelTarget("v6e");
  auto I = [](int64_t v) { return MOperand::imm(v); };
  // Four MXUs each push a 256x256 tile (32 pairs) while single values stay
  // live across the pushes: more vector values than registers at once unless
  // the pairs reuse registers, and singles mixed in between them.
  MFunction fn;
  fn.name = "pairs";
  fn.blocks.resize(1);
  auto& ins = fn.blocks[0].instrs;
  MOperand base = fn.newReg(RegClass::Scalar);
  ins.push_back(makeInstr(Opcode::SLi, {base, I(0)}));
  std::vector<MOperand> singles;
  for (int s = 0; s < 12; ++s) {
    singles.push_back(fn.newReg(RegClass::Vector));
    ins.push_back(makeInstr(Opcode::VImm, {singles.back(), I(s)}));
  }
  for (int p = 0; p < 32; ++p)
    for (int m = 0; m < 4; ++m) {
      MOperand half[2];
      for (int h = 0; h < 2; ++h) {
        half[h] = fn.newReg(RegClass::Vector);
        int64_t row = (m * 2 + h) * 256 + p * 8;
        MInstr ld = makeInstr(Opcode::VLd, {half[h], base, I(row), I(1), I(0xFF)});
        ld.mem = {MemAccess::Space::Vmem, 0, false, row, 8};
        ins.push_back(ld);
      }
      MInstr push = makeInstr(Opcode::MxuWPushBf16, {I(m), half[0]});
      push.pairHi = half[1];
      ins.push_back(push);
    }
  for (int s = 0; s < 12; ++s) {
    MInstr st = makeInstr(Opcode::VSt, {singles[size_t(s)], base, I(4096 + 8 * s), I(1), I(0xFF)});
    st.mem = {MemAccess::Space::Vmem, 1, true, 4096 + 8 * s, 8};
    ins.push_back(st);
  }
  CHECK(printInstr(ins[15]).find(":%v") != std::string::npos);  // a pair prints both halves
  std::vector<BlockSchedule> sched{scheduleBlock(fn.blocks[0], t)};
  allocateRegisters(fn, sched, {}, t);
  int pairs = 0;
  for (const MInstr& mi : ins)
    if (mi.pairHi.isReg()) {
      ++pairs;
      INFO(printInstr(mi));
      CHECK(mi.ops[1].kind == MOperand::Kind::PhysReg);
      CHECK(mi.ops[1].value % 2 == 0);
      CHECK(mi.pairHi.value == mi.ops[1].value + 1);
    }
  CHECK(pairs == 128);
  std::vector<isa::Bundle> bundles = assembleBundles(fn, sched, t);
  auto problems = checkBlockTiming(bundles, t);
  for (const auto& p : problems) UNSCOPED_INFO(p);
  CHECK(problems.empty());

  // The check itself: a wpush / mm reading v2 reads v3 too on a 256 array,
  // and a pop into v4 writes v5.
  std::vector<isa::Bundle> code(3);
  isa::Instruction& ld = code[0].slot(isa::SlotKind::VectorLoad, 0);
  ld.op = Opcode::VLd;
  ld.operands[0] = 3;
  ld.operands[4] = 0xFF;
  isa::Instruction& push = code[1].slot(isa::SlotKind::MatrixPush, 0);
  push.op = Opcode::MxuWPushBf16;
  push.operands[1] = 2;
  std::vector<isa::Bundle> popThenLoad(2);
  isa::Instruction& pop = popThenLoad[0].slot(isa::SlotKind::MatrixPop, 0);
  pop.op = Opcode::MxuPop;
  pop.operands[0] = 4;
  isa::Instruction& ld5 = popThenLoad[1].slot(isa::SlotKind::VectorLoad, 0);
  ld5.op = Opcode::VLd;
  ld5.operands[0] = 5;
  ld5.operands[4] = 0xFF;
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += x + "\n";
    return s;
  };
  CHECK_THAT(joined(checkBlockTiming(code, t)), Catch::Contains("v3 is not ready"));
  CHECK_THAT(joined(checkBlockTiming(popThenLoad, t)), Catch::Contains("v5 has a write in flight"));
  TargetInfo v5e = testing::kernelTarget("v5e");
  CHECK_THAT(joined(checkBlockTiming(code, v5e)), !Catch::Contains("v3"));
  CHECK_THAT(joined(checkBlockTiming(popThenLoad, v5e)), !Catch::Contains("v5"));
}

TEST_CASE("a K-resident v6e matmul block is within 25% of its MXU port bound") {
  // With N = 256 a weight tile takes 32 pushes (256 cycles of the weight port)
  // and an item streams its group's LHS tiles of 8 cycles through it, so each
  // K chunk of an item costs the busier of the two ports: items per MXU x K
  // chunks x max(256, 8 x tiles). Two column tiles of 64 row tiles (v6e's 64
  // slots) would be two items for four MXUs: the row groups split to 32 tiles
  // (LowerMatmul: at least P = 32), four items, and then the bundles' one
  // matrix-push slot (a push and an mm per MXU every 8 cycles) is as busy as
  // the ports.
  codegen::TargetInfo t = testing::kernelTarget("v6e");
  const int64_t m = 512, n = 512, k = 4096;
  auto call = lib::matmulCall(m, n, k, BF16, {m, n, k});
  auto kernel = call.trace({{{m, k}, BF16, "x"}, {{k, n}, BF16, "y"}});
  codegen::CompiledKernel ck = codegen::compileKernel(*kernel, t);
  const int64_t rowTiles = m / 8, nTiles = n / 256, pushes = 256 / 8;
  int64_t group = std::min<int64_t>(t.accSlots, rowTiles);
  if ((rowTiles + group - 1) / group * nTiles < t.mxuCount) {
    int64_t groups = (t.mxuCount + nTiles - 1) / nTiles;
    group = std::min<int64_t>(t.accSlots, std::max(pushes, (rowTiles + groups - 1) / groups));
  }
  int64_t items = (rowTiles + group - 1) / group * nTiles;
  int64_t itemsPerMxu = (items + t.mxuCount - 1) / t.mxuCount;
  int64_t bound = itemsPerMxu * (k / 256) * std::max<int64_t>(256, 8 * group);
  INFO("bundles " << ck.stats.bundles << ", MXU port bound " << bound);
  CHECK(t.accSlots == 64);
  CHECK(group == 32);
  CHECK(ck.stats.bundles >= bound);
  CHECK(double(ck.stats.bundles) <= 1.25 * double(bound));
}

TEST_CASE("the hazard check times the transpose unit apart from the XLUs") {
  using namespace codegen;
  using isa::Opcode;
  TargetInfo t = testing::kernelTarget("v6e");
  // Two pushes a cycle apart: the unit is held 8 cycles (xlu.transpose_push_interval);
  // a rotate beside the second push uses an XLU, which is free.
  std::vector<isa::Bundle> code(2);
  code[0].slot(isa::SlotKind::Xlu, 0).op = Opcode::XluTrPush;
  code[1].slot(isa::SlotKind::Xlu, 0).op = Opcode::XluTrPush;
  std::string all;
  for (const auto& p : checkBlockTiming(code, t)) all += p + "\n";
  CHECK_THAT(all, Catch::Contains("transpose unit busy until 8"));
  std::vector<isa::Bundle> spaced(9);
  spaced[0].slot(isa::SlotKind::Xlu, 0).op = Opcode::XluTrPush;
  spaced[8].slot(isa::SlotKind::Xlu, 0).op = Opcode::XluTrPush;
  CHECK(checkBlockTiming(spaced, t).empty());
}
