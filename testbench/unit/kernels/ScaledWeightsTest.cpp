// int8 weights dequantized per output column in the dot's operand,
// dot(x, bf16(w) * s) in bf16: the kernel DSL hands the matmul the s8 block and
// the scale row (a "scaled rhs", kernels/llo/Ops.def) and the matmul scales
// each widened weight vreg in registers. The weights entering the MXU must be
// bf16(f32(w) * f32(s)), the HLO's rounding, on the machine and in interpret
// mode alike.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <random>

#include "isa/support/Numerics.h"
#include "kernels/codegen/PairPack.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/PallasCall.h"
#include "kernels/llo/Printer.h"
#include "kernels/llo/TileMath.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

constexpr int64_t kM = 8, kK = 384, kN = 256;

PallasCall scaledDot(int64_t kK = ::kK) {
  CallConfig c;
  c.name = "scaled_dot";
  c.out_shapes = {{{kM, kN}, BF16, "out"}};
  c.grid = {1};
  auto whole = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({kM, kK}, whole), BlockSpec({kK, kN}, whole), BlockSpec({1, kN}, whole)};
  c.out_specs = {BlockSpec({kM, kN}, whole)};
  return pallas_call(
      [](Ref x, Ref w, Ref s, Ref o) {
        o.store(dot(x.load(), w.load().astype(BF16) * s.load()).astype(BF16));
      },
      c);
}

std::unique_ptr<llo::Kernel> traced(int64_t kK = ::kK) {
  return scaledDot(kK).trace({{{kM, kK}, BF16, "x"}, {{kK, kN}, S8, "w"}, {{1, kN}, BF16, "s"}});
}

// The `vunpack.s8` byte selects of a compiled program, counted by byte.
std::map<int64_t, int> unpackBytes(const isa::Program& p) {
  std::map<int64_t, int> n;
  for (const isa::Bundle& b : p.code)
    for (const isa::Instruction& i : b.slots)
      if (i.op == isa::Opcode::VUnpackS8) ++n[i.operands.at(2)];
  return n;
}

}  // namespace

TEST_CASE("scaled s8 weights reach the matmul as the s8 block and its scale row") {
  std::string text = llo::printKernel(*traced());
  INFO(text);
  // The matmul reads the s8 input and the scale row (printed "x w * s").
  CHECK(text.find("matmul") != std::string::npos);
  CHECK(text.find(" * ") != std::string::npos);
}

TEST_CASE("scaled s8 weights: interpret mode rounds each scaled weight as the HLO does") {
  auto k = traced();
  std::mt19937_64 rng(5);
  HostArray x = randomArray({kM, kK}, llo::DType::Bf16, rng);
  HostArray w = randomArray({kK, kN}, llo::DType::S8, rng);
  HostArray s = randomArray({1, kN}, llo::DType::Bf16, rng);
  InterpretOptions io;
  io.mxuSize = 128;
  HostArray got = interpret(*k, {x, w, s}, io).outputs.at(0);
  int64_t bad = 0;
  std::vector<uint32_t> a(kK), b(kK);
  for (int64_t n = 0; n < kN; ++n) {
    for (int64_t kk = 0; kk < kK; ++kk)
      b[kk] = f32ToBf16Bits(float(w.intAt(kk * kN + n)) * s.floatAt(n));
    for (int64_t m = 0; m < kM; ++m) {
      for (int64_t kk = 0; kk < kK; ++kk) a[kk] = x.words[size_t(m * kK + kk)];
      uint32_t sum = llo::mxuDotBf16(a.data(), b.data(), kK, 128);
      float f;
      std::memcpy(&f, &sum, 4);
      bad += got.words[size_t(m * kN + n)] != f32ToBf16Bits(f);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("scaled s8 weights: the machine equals interpret mode bit for bit") {
  for (const char* chip : {"v5e", "v6e"}) {
    INFO(chip);
    testing::checkSimAgainstInterpret(*traced(), chip, 9);
  }
}

// Paired weights (codegen/PairPack.h, docs/performance.md `int8pack2`): a VMEM
// word holds rows k and k + S of each 2S-row chunk, and the push of chunk kc
// unpacks byte kc % 2. K = 512 is two whole chunks on v5e (S = 128) and one
// on v6e (S = 256); K = 384 leaves v5e a last chunk without a partner.
TEST_CASE("scaled s8 weights copied paired: each push unpacks its byte, bit for bit") {
  for (int64_t k : {int64_t(512), int64_t(384)}) {
    for (const char* chip : {"v5e", "v6e"}) {
      INFO(chip << " K=" << k);
      auto kernel = traced(k);
      const auto target = testing::kernelTarget(chip);
      CHECK(codegen::pairedRows(*kernel, 1, target) == target.mxuSize);
      testing::SimCheck r = testing::checkSimAgainstInterpret(*kernel, chip, 11);
      std::map<int64_t, int> bytes = unpackBytes(r.compiled.program);
      CHECK(bytes[1] > 0);  // the upper rows of a pair
      CHECK(bytes[0] > 0);
    }
  }
}

TEST_CASE("scaled s8 weights stored in the packed HBM layout") {
  auto kernel = traced(512);
  const auto target = testing::kernelTarget("v5e");
  REQUIRE(codegen::packedLayoutFits(*kernel, 1, target));
  // tpuc's layout choice (PackedLayouts.cpp) and its buffer table entry; the
  // simulator's host side converts the dense input into the layout.
  kernel->inputs[1].pairRows = target.mxuSize;
  std::mt19937_64 rng(13);
  std::vector<HostArray> ins;
  std::map<std::string, HostArray> named;
  for (const llo::ArrayOperand& a : kernel->inputs) {
    ins.push_back(randomArray(a.shape, a.dtype, rng));
    named[a.name] = ins.back();
  }
  InterpretOptions io;
  io.mxuSize = target.mxuSize;
  HostArray want = interpret(*kernel, ins, io).outputs.at(0);
  codegen::CompiledKernel c = codegen::compileKernel(*kernel, target);
  for (isa::BufferDesc& b : c.program.buffers)
    if (b.name == "w") b.pairRows = uint32_t(target.mxuSize);
  sim::SimResult r = testing::simulate("v5e", c.program, named);
  CHECK(testing::bitDifferences(want, testing::simOutput(r, "out", want)) == 0);
  // A K that is not whole chunks cannot be stored so.
  CHECK_FALSE(codegen::packedLayoutFits(*traced(384), 1, target));
}
