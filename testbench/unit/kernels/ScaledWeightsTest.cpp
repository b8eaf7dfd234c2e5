// int8 weights dequantized per output column in the dot's operand,
// dot(x, bf16(w) * s) in bf16: the kernel DSL hands the matmul the s8 block and
// the scale row (a "scaled rhs", kernels/llo/Ops.def) and the matmul scales
// each widened weight vreg in registers. The weights entering the MXU must be
// bf16(f32(w) * f32(s)), the HLO's rounding, on the machine and in interpret
// mode alike.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "isa/support/Numerics.h"
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

PallasCall scaledDot() {
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

std::unique_ptr<llo::Kernel> traced() {
  return scaledDot().trace({{{kM, kK}, BF16, "x"}, {{kK, kN}, S8, "w"}, {{1, kN}, BF16, "s"}});
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
