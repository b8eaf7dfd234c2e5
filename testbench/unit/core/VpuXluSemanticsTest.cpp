// Bit-exact semantics of the vector ALU and XLU opcodes, each against a
// plain scalar reference written independently of the implementation.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "isa/support/Numerics.h"
#include "sim/vpu/VpuSemantics.h"
#include "sim/xlu/XluSemantics.h"

using namespace tpusim;
using namespace tpusim::sim;
using isa::Opcode;

namespace {

VregData filled(uint32_t value) {
  VregData v;
  v.fill(value);
  return v;
}
VregData randomVreg(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  VregData v;
  for (auto& x : v) x = bitsOf(dist(rng));
  return v;
}
uint32_t runUnary(Opcode op, uint32_t x, uint32_t imm = 0) {
  VregData a = filled(x), d{};
  MaskData m{};
  VpuInputs in;
  in.a = &a;
  in.imm = imm;
  REQUIRE(executeVectorAlu(op, in, d, m));
  return d[517];
}
uint32_t runBinary(Opcode op, uint32_t x, uint32_t y) {
  VregData a = filled(x), b = filled(y), d{};
  MaskData m{};
  VpuInputs in;
  in.a = &a;
  in.b = &b;
  REQUIRE(executeVectorAlu(op, in, d, m));
  return d[3];
}
bool runCompare(Opcode op, float x, float y) {
  VregData a = filled(bitsOf(x)), b = filled(bitsOf(y)), d{};
  MaskData m{};
  VpuInputs in;
  in.a = &a;
  in.b = &b;
  REQUIRE(executeVectorAlu(op, in, d, m));
  return maskBit(m, 1000);
}

}  // namespace

TEST_CASE("every vector ALU and XLU opcode in Opcodes.def has semantics", "[vpu][xlu]") {
  VregData a = randomVreg(1), b = randomVreg(2), d{};
  MaskData ma{}, mb{}, m{};
  VpuInputs in{&a, &b, &ma, &mb, 7, 1};
  int checked = 0;
  for (const isa::OpcodeInfo& info : isa::kOpcodeTable) {
    if (info.slot == isa::SlotKind::VectorAlu && info.op != Opcode::Nop) {
      INFO(info.mnemonic);
      CHECK(executeVectorAlu(info.op, in, d, m));
      ++checked;
    } else if (info.slot == isa::SlotKind::Xlu) {
      INFO(info.mnemonic);
      bool transpose = info.op == Opcode::XluTrPush || info.op == Opcode::XluTrPop;
      CHECK((transpose || executeXluPermuteOrReduce(info.op, a, b, 3, 1, d)));
      ++checked;
    }
  }
  CHECK(checked > 60);
  // A non-vector opcode is refused, not silently computed.
  CHECK_FALSE(executeVectorAlu(Opcode::SAdd, in, d, m));
  CHECK_FALSE(executeXluPermuteOrReduce(Opcode::VAddF32, a, b, 0, 0, d));
}

TEST_CASE("f32 arithmetic rounds to nearest even and canonicalises NaN", "[vpu]") {
  // 1 + 2^-24 is a tie between 1 and 1 + 2^-23: even is 1.
  CHECK(runBinary(Opcode::VAddF32, bitsOf(1.0f), bitsOf(std::ldexp(1.0f, -24))) == bitsOf(1.0f));
  CHECK(runBinary(Opcode::VAddF32, bitsOf(1.0f + std::ldexp(1.0f, -23)),
                  bitsOf(std::ldexp(1.0f, -24))) == bitsOf(1.0f + std::ldexp(1.0f, -22)));
  CHECK(runBinary(Opcode::VSubF32, bitsOf(INFINITY), bitsOf(INFINITY)) == kCanonicalNanBits);
  CHECK(runBinary(Opcode::VMulF32, 0x7FA00001u, bitsOf(2.0f)) == kCanonicalNanBits);
  CHECK(runBinary(Opcode::VMaxF32, bitsOf(1.0f), 0xFFC00001u) == kCanonicalNanBits);
  CHECK(runBinary(Opcode::VMaxF32, bitsOf(-0.0f), bitsOf(0.0f)) == bitsOf(0.0f));
  CHECK(runBinary(Opcode::VMinF32, bitsOf(0.0f), bitsOf(-0.0f)) == bitsOf(-0.0f));
  // Subnormals are kept, not flushed.
  float tiny = std::ldexp(1.0f, -140);
  CHECK(runBinary(Opcode::VMulF32, bitsOf(tiny), bitsOf(0.5f)) == bitsOf(std::ldexp(1.0f, -141)));
  // abs/neg only touch the sign bit, even of a NaN.
  CHECK(runUnary(Opcode::VAbsF32, 0xFFA00001u) == 0x7FA00001u);
  CHECK(runUnary(Opcode::VNegF32, bitsOf(2.0f)) == bitsOf(-2.0f));
}

TEST_CASE("transcendental ops match the host C library on float", "[vpu]") {
  for (float x : {-3.5f, -0.25f, 0.0f, 0.5f, 1.0f, 7.75f}) {
    CHECK(runUnary(Opcode::VExpF32, bitsOf(x)) == bitsOf(expf(x)));
    CHECK(runUnary(Opcode::VTanhF32, bitsOf(x)) == bitsOf(tanhf(x)));
  }
  CHECK(runUnary(Opcode::VLogF32, bitsOf(-1.0f)) == kCanonicalNanBits);
  CHECK(runUnary(Opcode::VRsqrtF32, bitsOf(4.0f)) == bitsOf(0.5f));
  CHECK(runUnary(Opcode::VRcpF32, bitsOf(0.0f)) == bitsOf(INFINITY));
  CHECK(runUnary(Opcode::VSqrtF32, bitsOf(2.0f)) == bitsOf(sqrtf(2.0f)));
}

TEST_CASE("s32 ops wrap, shifts mask the count", "[vpu]") {
  CHECK(runBinary(Opcode::VAddS32, 0x7FFFFFFFu, 1) == 0x80000000u);
  CHECK(runBinary(Opcode::VMulS32, 0x10000u, 0x10000u) == 0u);
  CHECK(runUnary(Opcode::VAbsS32, 0x80000000u) == 0x80000000u);
  CHECK(runUnary(Opcode::VNegS32, 5) == uint32_t(-5));
  CHECK(runBinary(Opcode::VMaxS32, uint32_t(-3), 2) == 2u);
  CHECK(runBinary(Opcode::VMinS32, uint32_t(-3), 2) == uint32_t(-3));
  CHECK(runBinary(Opcode::VShl, 1, 33) == 2u);
  CHECK(runBinary(Opcode::VShr, 0x80000000u, 31) == 1u);
  CHECK(runBinary(Opcode::VSra, 0x80000000u, 31) == 0xFFFFFFFFu);
}

TEST_CASE("converts: saturation, NaN, bf16 rounding, packing", "[vpu]") {
  CHECK(runUnary(Opcode::VCvtS32F32, bitsOf(-2.75f)) == uint32_t(-2));
  CHECK(runUnary(Opcode::VCvtS32F32, bitsOf(3e9f)) == 0x7FFFFFFFu);
  CHECK(runUnary(Opcode::VCvtS32F32, bitsOf(-3e9f)) == 0x80000000u);
  CHECK(runUnary(Opcode::VCvtS32F32, kCanonicalNanBits) == 0u);
  // 2^24 + 1 is not an f32: ties to even gives 2^24.
  CHECK(runUnary(Opcode::VCvtF32S32, (1u << 24) + 1) == bitsOf(16777216.0f));
  // bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7; even is 1 (0x3F80).
  CHECK(runUnary(Opcode::VCvtBf16F32, bitsOf(1.0f + std::ldexp(1.0f, -8))) == 0x3F80u);
  CHECK(runUnary(Opcode::VCvtBf16F32, bitsOf(1.0f + 3 * std::ldexp(1.0f, -8))) == 0x3F82u);
  CHECK(runUnary(Opcode::VCvtF32Bf16, 0xABCD3FC0u) == bitsOf(1.5f));
  // vrnd.bf16.f32: the convert pair's value in one op, the f32 layout kept.
  for (uint32_t x : {bitsOf(1.0f + std::ldexp(1.0f, -8)), bitsOf(1.0f + 3 * std::ldexp(1.0f, -8)),
                     bitsOf(-1.5f), 0x7F812345u, 0x7F7FFFFFu, 0x00000001u, 0x80008000u}) {
    INFO(x);
    CHECK(runUnary(Opcode::VRndBf16F32, x) ==
          runUnary(Opcode::VCvtF32Bf16, runUnary(Opcode::VCvtBf16F32, x)));
  }
  CHECK(runUnary(Opcode::VRndBf16F32, bitsOf(1.0f + 3 * std::ldexp(1.0f, -8))) == 0x3F820000u);
  CHECK(runUnary(Opcode::VRndBf16F32, 0x7F812345u) == kCanonicalNanBits);
  CHECK(runUnary(Opcode::VCvtS8S32, uint32_t(-300)) == uint32_t(-128));
  CHECK(runUnary(Opcode::VCvtS8S32, 300) == 127u);
  CHECK(runBinary(Opcode::VPackB16, 0x11112222u, 0x33334444u) == 0x44442222u);
  CHECK(runBinary(Opcode::VPackB8, 0x123u, 0x456u) == 0x5623u);
  CHECK(runUnary(Opcode::VUnpackB16, 0xBEEF1234u, 1) == 0xBEEFu);
  CHECK(runUnary(Opcode::VUnpackB16, 0xBEEF1234u, 2) == 0x1234u);
  CHECK(runUnary(Opcode::VUnpackS8, 0x80FF7F01u, 3) == uint32_t(-128));
  CHECK(runUnary(Opcode::VUnpackS8, 0x80FF7F01u, 1) == 0x7Fu);
}

TEST_CASE("compares, select and mask logic", "[vpu]") {
  float nan = floatOf(kCanonicalNanBits);
  CHECK_FALSE(runCompare(Opcode::VCmpEqF32, nan, nan));
  CHECK(runCompare(Opcode::VCmpNeF32, nan, 1.0f));
  CHECK_FALSE(runCompare(Opcode::VCmpLtF32, nan, 1.0f));
  CHECK(runCompare(Opcode::VCmpLeF32, 1.0f, 1.0f));
  CHECK(runCompare(Opcode::VCmpGtF32, 2.0f, 1.0f));
  CHECK(runCompare(Opcode::VCmpEqF32, 0.0f, -0.0f));
  // Signed compare of s32 bit patterns.
  VregData a = filled(uint32_t(-1)), b = filled(1), d{};
  MaskData m{}, mk{}, m2{};
  VpuInputs in{&a, &b, nullptr, nullptr, 0, 0};
  REQUIRE(executeVectorAlu(Opcode::VCmpLtS32, in, d, m));
  CHECK(maskBit(m, 0));
  // vsel picks per element from the mask.
  VregData iota{};
  in = VpuInputs{};
  REQUIRE(executeVectorAlu(Opcode::VIotaLane, in, iota, m));
  VregData zero{};
  VregData limit = filled(5);
  in = VpuInputs{&iota, &limit, nullptr, nullptr, 0, 0};
  REQUIRE(executeVectorAlu(Opcode::VCmpLtS32, in, d, mk));
  in = VpuInputs{&iota, &zero, &mk, nullptr, 0, 0};
  REQUIRE(executeVectorAlu(Opcode::VSel, in, d, m));
  for (int s = 0; s < isa::kSublanes; ++s)
    for (int l = 0; l < isa::kLanes; ++l) CHECK(at(d, s, l) == (l < 5 ? uint32_t(l) : 0u));
  in = VpuInputs{nullptr, nullptr, &mk, nullptr, 0, 0};
  REQUIRE(executeVectorAlu(Opcode::MNot, in, d, m2));
  in = VpuInputs{nullptr, nullptr, &mk, &m2, 0, 0};
  REQUIRE(executeVectorAlu(Opcode::MOr, in, d, m));
  for (uint64_t w : m) CHECK(w == ~uint64_t(0));
  REQUIRE(executeVectorAlu(Opcode::MAnd, in, d, m));
  for (uint64_t w : m) CHECK(w == 0);
  CHECK(vectorAluWritesMask(Opcode::VCmpGeS32));
  CHECK_FALSE(vectorAluWritesMask(Opcode::VSel));
}

TEST_CASE("broadcast, immediate and iota", "[vpu]") {
  VregData d{};
  MaskData m{};
  VpuInputs in;
  in.scalar = 42;
  REQUIRE(executeVectorAlu(Opcode::VBcast, in, d, m));
  CHECK(d[1023] == 42u);
  in.imm = bitsOf(1.5f);
  REQUIRE(executeVectorAlu(Opcode::VImm, in, d, m));
  CHECK(d[0] == bitsOf(1.5f));
  REQUIRE(executeVectorAlu(Opcode::VIotaSub, in, d, m));
  CHECK(at(d, 6, 100) == 6u);
}

namespace {
// The tree of isa/README.md written recursively: sum(x, n) pairs x[i] with x[i + n/2].
float treeSum(std::vector<float> x) {
  while (x.size() > 1) {
    size_t half = x.size() / 2;
    for (size_t i = 0; i < half; ++i) x[i] = x[i] + x[i + half];
    x.resize(half);
  }
  return x[0];
}
}  // namespace

TEST_CASE("XLU lane sum uses the documented pairwise tree", "[xlu]") {
  VregData a = randomVreg(7), b{}, d{};
  // Values whose sum depends on the order: large cancelling terms.
  at(a, 2, 0) = bitsOf(1e8f);
  at(a, 2, 64) = bitsOf(-1e8f);
  at(a, 2, 1) = bitsOf(3.0f);
  REQUIRE(executeXluPermuteOrReduce(Opcode::XluSumF32, a, b, 0, 0, d));
  for (int s = 0; s < isa::kSublanes; ++s) {
    std::vector<float> row;
    for (int l = 0; l < isa::kLanes; ++l) row.push_back(floatOf(at(a, s, l)));
    float expect = treeSum(row);
    for (int l = 0; l < isa::kLanes; ++l) CHECK(at(d, s, l) == bitsOf(expect));
  }
  at(a, 5, 77) = bitsOf(100.0f);
  REQUIRE(executeXluPermuteOrReduce(Opcode::XluMaxF32, a, b, 0, 0, d));
  CHECK(at(d, 5, 3) == bitsOf(100.0f));
  at(a, 5, 9) = 0x7F800001u;
  REQUIRE(executeXluPermuteOrReduce(Opcode::XluMaxF32, a, b, 0, 0, d));
  CHECK(at(d, 5, 3) == kCanonicalNanBits);
  VregData ints = filled(0x7FFFFFFFu);
  REQUIRE(executeXluPermuteOrReduce(Opcode::XluSumS32, ints, b, 0, 0, d));
  CHECK(d[0] == uint32_t(0x7FFFFFFFu * 128u));
  at(ints, 0, 9) = uint32_t(-5);
  REQUIRE(executeXluPermuteOrReduce(Opcode::XluMaxS32, ints, b, 0, 0, d));
  CHECK(at(d, 0, 100) == 0x7FFFFFFFu);
}

TEST_CASE("XLU rotates and lane gather", "[xlu]") {
  VregData a{}, idx{}, d{};
  for (int i = 0; i < 1024; ++i) a[i] = uint32_t(i);
  REQUIRE(executeXluPermuteOrReduce(Opcode::XluRotLane, a, idx, uint32_t(-1), 0, d));
  CHECK(at(d, 3, 127) == at(a, 3, 0));  // shift by -1 = 127 lanes
  CHECK(at(d, 3, 126) == at(a, 3, 127));
  REQUIRE(executeXluPermuteOrReduce(Opcode::XluRotSub, a, idx, 0, 3, d));
  CHECK(at(d, 1, 5) == at(a, 6, 5));
  for (int i = 0; i < 1024; ++i) idx[i] = uint32_t(127 - i % 128 + 256);  // bits above 127 ignored
  REQUIRE(executeXluPermuteOrReduce(Opcode::XluPerm, a, idx, 0, 0, d));
  CHECK(at(d, 4, 0) == at(a, 4, 127));
}

TEST_CASE("transpose unit returns the transpose and reports misuse", "[xlu]") {
  TransposeUnit unit(true);
  std::string error;
  VregData rows{};
  REQUIRE_FALSE(unit.pop(rows, &error));
  CHECK(error.find("before the block is complete") != std::string::npos);
  for (int p = 0; p < TransposeUnit::kPushes; ++p) {
    for (int s = 0; s < 8; ++s)
      for (int l = 0; l < 128; ++l) at(rows, s, l) = uint32_t((8 * p + s) * 1000 + l);
    REQUIRE(unit.push(rows, &error));
  }
  REQUIRE_FALSE(unit.push(rows, &error));
  for (int q = 0; q < TransposeUnit::kPushes; ++q) {
    REQUIRE(unit.pop(rows, &error));
    for (int s = 0; s < 8; ++s)
      for (int l = 0; l < 128; ++l) REQUIRE(at(rows, s, l) == uint32_t(l * 1000 + 8 * q + s));
  }
  CHECK(unit.pushed() == 0);
}
