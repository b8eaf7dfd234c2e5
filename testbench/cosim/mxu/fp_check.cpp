// The RTL's f32 arithmetic (hw/mxu/mxu_fp_pkg.sv) against the host's IEEE unit:
// bf16 x bf16 -> f32 and f32 + f32, round to nearest even, subnormals kept,
// NaN canonical. Edge-case operands crossed with each other, then millions of
// random pairs biased towards the exponent extremes.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "Vmxu_fp_check.h"
#include "isa/support/Numerics.h"

namespace {

uint32_t refMul(uint16_t a, uint16_t b) {
  return tpusim::bitsOf(
      tpusim::canonicalizeNan(tpusim::bf16BitsToF32(a) * tpusim::bf16BitsToF32(b)));
}
uint32_t refAdd(uint32_t a, uint32_t b) {
  return tpusim::bitsOf(tpusim::canonicalizeNan(tpusim::floatOf(a) + tpusim::floatOf(b)));
}

uint32_t randomF32(std::mt19937_64& rng) {
  uint32_t sign = rng() & 1, exp, mant = rng() & 0x7FFFFF;
  switch (rng() % 8) {
    case 0:
      exp = 0;
      break;
    case 1:
      exp = 255;
      break;
    case 2:
      exp = 1 + rng() % 4;
      break;
    case 3:
      exp = 250 + rng() % 5;
      break;
    default:
      exp = rng() % 256;
      break;
  }
  if (rng() % 4 == 0) mant &= ~0xFFFFu;  // few low bits: exact sums and ties
  return sign << 31 | exp << 23 | mant;
}

struct Fp {
  VerilatedContext ctx;
  Vmxu_fp_check top{&ctx};
  uint32_t mul(uint16_t a, uint16_t b) {
    top.mul_a = a;
    top.mul_b = b;
    top.eval();
    return top.mul_y;
  }
  uint32_t add(uint32_t a, uint32_t b) {
    top.add_a = a;
    top.add_b = b;
    top.eval();
    return top.add_y;
  }
};

const std::vector<uint32_t> kEdges = {
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x00800001,
    0x00400000, 0x3F800000, 0xBF800000, 0x3F800001, 0x3FFFFFFF, 0x7F7FFFFF, 0xFF7FFFFF,
    0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x4B000000, 0x4B000001,
    0x33800000, 0x34000000, 0x0C000000, 0x73000000, 0x00010000, 0x3F808000, 0x3F7F0000};

}  // namespace

TEST_CASE("RTL bf16 multiply matches IEEE f32 on every edge pair and random pairs") {
  Fp fp;
  for (uint32_t x : kEdges)
    for (uint32_t y : kEdges) {
      uint16_t a = uint16_t(x >> 16), b = uint16_t(y >> 16);
      INFO(fmt::format("{:04x} * {:04x}", a, b));
      REQUIRE(fp.mul(a, b) == refMul(a, b));
    }
  std::mt19937_64 rng(7);
  uint64_t bad = 0;
  for (int i = 0; i < 2000000; ++i) {
    uint16_t a = uint16_t(randomF32(rng) >> 16), b = uint16_t(randomF32(rng) >> 16);
    if (fp.mul(a, b) != refMul(a, b) && bad++ < 5)
      FAIL_CHECK(
          fmt::format("{:04x} * {:04x}: rtl {:08x} host {:08x}", a, b, fp.mul(a, b), refMul(a, b)));
  }
  REQUIRE(bad == 0);
}

TEST_CASE("RTL f32 add matches IEEE f32 on every edge pair and random pairs") {
  Fp fp;
  for (uint32_t x : kEdges)
    for (uint32_t y : kEdges) {
      INFO(fmt::format("{:08x} + {:08x}", x, y));
      REQUIRE(fp.add(x, y) == refAdd(x, y));
    }
  std::mt19937_64 rng(11);
  uint64_t bad = 0;
  for (int i = 0; i < 3000000; ++i) {
    uint32_t a = randomF32(rng), b = randomF32(rng);
    if (rng() % 3 == 0) b = (b & 0x807FFFFFu) | (((a >> 23) & 0xFF) + rng() % 5 - 2) % 256 << 23;
    if (fp.add(a, b) != refAdd(a, b) && bad++ < 5)
      FAIL_CHECK(
          fmt::format("{:08x} + {:08x}: rtl {:08x} host {:08x}", a, b, fp.add(a, b), refAdd(a, b)));
  }
  REQUIRE(bad == 0);
}
