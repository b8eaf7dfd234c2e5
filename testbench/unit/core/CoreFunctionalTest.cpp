// Functional numerics of whole programs generated here, each checked bit for
// bit against a plain C++ reference: tiled matmul (bf16 and int8), element-wise
// vector ops, and a row softmax through the XLU.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "isa/support/Numerics.h"
#include "testbench/unit/core/CoreHarness.h"
#include "testbench/unit/core/MatmulProgram.h"

using namespace tpusim;
using namespace tpusim::testing;

namespace {

RunSpec realDma() {
  RunSpec s;
  s.dma = sim::makeChipDma;
  return s;
}

npy::Array randomBf16(std::vector<int64_t> shape, uint32_t seed) {
  npy::Array a = npy::makeArray(npy::DType::U16, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  for (int64_t i = 0; i < a.numElements(); ++i) a.as<uint16_t>()[i] = f32ToBf16Bits(d(rng));
  return a;
}
npy::Array randomS8(std::vector<int64_t> shape, uint32_t seed) {
  npy::Array a = npy::makeArray(npy::DType::S8, shape);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-128, 127);
  for (int64_t i = 0; i < a.numElements(); ++i) a.as<int8_t>()[i] = int8_t(d(rng));
  return a;
}

}  // namespace

TEST_CASE("tiled bf16 matmul is bit-exact with per-K-tile f32 accumulation", "[core][functional]") {
  MatmulShape s;  // 16 x 256 x 256 on 2 MXUs, 2 K-tiles
  target::ChipConfig chip = preset("v5e");
  npy::Array a = randomBf16({s.m, s.k}, 1), b = randomBf16({s.k, s.n}, 2);
  auto r = runProgram(chip, assembleOrFail(matmulProgram(s)), realDma(), {{"a", a}, {"b", b}});
  INFO((r.fault ? r.fault->report() : ""));
  REQUIRE(r.halted);
  const npy::Array& c = r.outputs.at("c");
  REQUIRE(c.dtype == npy::DType::F32);
  int mismatches = 0;
  for (int m = 0; m < s.m; ++m)
    for (int n = 0; n < s.n; ++n) {
      // isa/README.md: r = +0; r = r + a*w over the tile, RNE each step; mma adds to the slot.
      float acc = 0.0f;
      for (int t = 0; t < s.k / 128; ++t) {
        float part = 0.0f;
        for (int k = t * 128; k < (t + 1) * 128; ++k)
          part = part + bf16BitsToF32(a.as<uint16_t>()[m * s.k + k]) *
                            bf16BitsToF32(b.as<uint16_t>()[k * s.n + n]);
        acc = t == 0 ? part : acc + part;
      }
      if (bitsOf(c.as<float>()[m * s.n + n]) != bitsOf(acc)) ++mismatches;
    }
  CHECK(mismatches == 0);
  // 2 * M * N * K FLOPs in the matmul op.
  REQUIRE(r.ops.size() >= 2);
  CHECK(r.ops[1].name == "matmul");
  CHECK(r.ops[1].stats.flops == 2.0 * s.m * s.n * s.k);
}

TEST_CASE("tiled int8 matmul accumulates in wrapping s32", "[core][functional]") {
  MatmulShape s;
  s.int8 = true;
  s.m = 8;
  target::ChipConfig chip = preset("v5e");
  npy::Array a = randomS8({s.m, s.k}, 3), b = randomS8({s.k, s.n}, 4);
  auto r = runProgram(chip, assembleOrFail(matmulProgram(s)), realDma(), {{"a", a}, {"b", b}});
  REQUIRE(r.halted);
  const npy::Array& c = r.outputs.at("c");
  REQUIRE(c.dtype == npy::DType::S32);
  int mismatches = 0;
  for (int m = 0; m < s.m; ++m)
    for (int n = 0; n < s.n; ++n) {
      int32_t acc = 0;
      for (int k = 0; k < s.k; ++k)
        acc += int32_t(a.as<int8_t>()[m * s.k + k]) * int32_t(b.as<int8_t>()[k * s.n + n]);
      if (c.as<int32_t>()[m * s.n + n] != acc) ++mismatches;
    }
  CHECK(mismatches == 0);
}

namespace {
// Element-wise programs on VMEM buffers: x at row 0, outputs from row 8 on.
const char* kElementwise = R"(
.buffer x, shape=[8,128], dtype=f32, space=vmem, addr=0x0, role=input
.buffer y1, shape=[8,128], dtype=f32, space=vmem, addr=0x1000, role=output
.buffer y2, shape=[8,128], dtype=f32, space=vmem, addr=0x2000, role=output
.buffer y3, shape=[8,128], dtype=f32, space=vmem, addr=0x3000, role=output
.buffer y4, shape=[8,128], dtype=s32, space=vmem, addr=0x4000, role=output
  vld v1, s0, 0, 1, 255 ;; vimm v9, 0.5 ;; vimm v8, 0.0 ;; vimm v7, 1.0
  vexp.f32 v2, v1 ;; vmax.f32 v3, v1, v8 ;; vabs.f32 v4, v1 ;; vcmp.lt.f32 m1, v1, v8
  vmul.f32 v2, v2, v9 ;; vadd.f32 v4, v4, v7 ;; vmul.f32 v5, v1, v1 ;; vneg.f32 v6, v1
  vadd.f32 v2, v2, v3 ;; vrsqrt.f32 v4, v4 ;; vsel v5, m1, v6, v5 ;; vcvt.bf16.f32 v10, v1
  vcvt.f32.bf16 v10, v10 ;; vcvt.s32.f32 v11, v5
  vst v2, s0, 8, 1, 255
  vst v4, s0, 16, 1, 255
  vsub.f32 v12, v10, v5
  vst v12, s0, 24, 1, 255
  vst v11, s0, 32, 1, 255
  halt
)";
}  // namespace

TEST_CASE("element-wise vector ops match a scalar C++ reference", "[core][functional]") {
  target::ChipConfig chip = preset("v5e");
  npy::Array x = npy::makeArray(npy::DType::F32, {8, 128});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-6.0f, 6.0f);
  for (int i = 0; i < 1024; ++i) x.as<float>()[i] = d(rng);
  auto r = runProgram(chip, assembleOrFail(kElementwise), realDma(), {{"x", x}});
  REQUIRE(r.halted);
  for (int i = 0; i < 1024; ++i) {
    float v = x.as<float>()[i];
    float y1 = std::exp(v) * 0.5f + std::max(v, 0.0f);
    float y2 = 1.0f / std::sqrt(std::fabs(v) + 1.0f);
    float sel = v < 0.0f ? -v : v * v;
    float y3 = roundToBf16(v) - sel;
    int32_t y4 = int32_t(sel);
    INFO(i << " x=" << v);
    REQUIRE(bitsOf(r.outputs.at("y1").as<float>()[i]) == bitsOf(y1));
    REQUIRE(bitsOf(r.outputs.at("y2").as<float>()[i]) == bitsOf(y2));
    REQUIRE(bitsOf(r.outputs.at("y3").as<float>()[i]) == bitsOf(y3));
    REQUIRE(r.outputs.at("y4").as<int32_t>()[i] == y4);
  }
}

TEST_CASE("row softmax through the XLU matches the reference tree", "[core][functional][xlu]") {
  target::ChipConfig chip = preset("v5e");
  const char* program = R"(
.buffer x, shape=[8,128], dtype=f32, space=vmem, addr=0x0, role=input
.buffer y, shape=[8,128], dtype=f32, space=vmem, addr=0x1000, role=output
  vld v1, s0, 0, 1, 255
  xlu.max.f32 v2, v1
  vsub.f32 v3, v1, v2
  vexp.f32 v4, v3
  xlu.sum.f32 v5, v4
  vrcp.f32 v6, v5
  vmul.f32 v7, v4, v6
  vst v7, s0, 8, 1, 255
  halt
)";
  npy::Array x = npy::makeArray(npy::DType::F32, {8, 128});
  std::mt19937 rng(6);
  std::normal_distribution<float> d(0.0f, 3.0f);
  for (int i = 0; i < 1024; ++i) x.as<float>()[i] = d(rng);
  auto r = runProgram(chip, assembleOrFail(program), realDma(), {{"x", x}});
  REQUIRE(r.halted);
  for (int s = 0; s < 8; ++s) {
    const float* row = x.as<float>() + s * 128;
    float m = row[0];
    for (int l = 1; l < 128; ++l) m = std::max(m, row[l]);
    std::vector<float> e(128);
    for (int l = 0; l < 128; ++l) e[l] = std::exp(row[l] - m);
    std::vector<float> t = e;  // the pairwise tree of isa/README.md
    for (int w = 64; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) t[l] = t[l] + t[l + w];
    float inv = 1.0f / t[0];
    float sum = 0;
    for (int l = 0; l < 128; ++l) {
      float y = r.outputs.at("y").as<float>()[s * 128 + l];
      REQUIRE(bitsOf(y) == bitsOf(e[l] * inv));
      sum += y;
    }
    CHECK(sum == Approx(1.0f).epsilon(1e-5));
  }
}
