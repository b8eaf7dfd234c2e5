// Hand-computed results for the evaluator's IR-independent kernels:
// literals, conversions, element-wise arithmetic, compare, select, clamp.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "compiler/hlo/eval/Convert.h"
#include "compiler/hlo/eval/Elementwise.h"
#include "compiler/hlo/eval/Half.h"
#include "isa/support/Numerics.h"

using namespace tpusim::hlo::eval;

namespace {

Literal vec(ElemType t, std::vector<double> v) {
  Literal l = Literal::array(t, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) l.setDouble(static_cast<int64_t>(i), v[i]);
  return l;
}
Literal ivec(ElemType t, std::vector<int64_t> v) {
  Literal l = Literal::array(t, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) l.setInt(static_cast<int64_t>(i), v[i]);
  return l;
}
std::vector<double> dvals(const Literal& l) {
  std::vector<double> v;
  for (int64_t i = 0; i < l.numElements(); ++i) v.push_back(l.getDouble(i));
  return v;
}
std::vector<int64_t> ivals(const Literal& l) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < l.numElements(); ++i) v.push_back(l.getInt(i));
  return v;
}
const double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::numeric_limits<double>::quiet_NaN();

}  // namespace

TEST_CASE("f16 conversion rounds to nearest even", "[eval][numerics]") {
  CHECK(f32ToF16Bits(1.0f) == 0x3C00);
  CHECK(f32ToF16Bits(65504.0f) == 0x7BFF);
  CHECK(f32ToF16Bits(65519.0f) == 0x7BFF);
  CHECK(f32ToF16Bits(65520.0f) == 0x7C00);  // tie to even overflows to inf
  CHECK(f32ToF16Bits(-std::ldexp(1.0f, -24)) == 0x8001);
  CHECK(f32ToF16Bits(std::ldexp(1.0f, -25)) == 0x0000);         // tie to even: 0
  CHECK(f32ToF16Bits(std::ldexp(3.0f, -25)) == 0x0002);         // 1.5 units -> 2
  CHECK(f32ToF16Bits(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);  // tie, even stays
  CHECK(f32ToF16Bits(1.0f + std::ldexp(3.0f, -11)) == 0x3C02);  // tie, odd rounds up
  CHECK(f16BitsToF32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f16BitsToF32(0xC000) == -2.0f);
  CHECK(std::isnan(f16BitsToF32(f32ToF16Bits(std::nanf("")))));
  for (uint32_t h = 0; h < 0x7C00; ++h) CHECK(f32ToF16Bits(f16BitsToF32(h)) == h);
}

TEST_CASE("convert follows XLA", "[eval][convert]") {
  Literal f = vec(ElemType::F32, {2.9, -2.9, kNan, 1e10, -1e10, 127.5, -128.7});
  CHECK(ivals(convertLiteral(f, ElemType::S32)) ==
        std::vector<int64_t>{2, -2, 0, 2147483647, -2147483648LL, 127, -128});
  CHECK(ivals(convertLiteral(f, ElemType::S8)) ==
        std::vector<int64_t>{2, -2, 0, 127, -128, 127, -128});
  CHECK(ivals(convertLiteral(f, ElemType::U8)) == std::vector<int64_t>{2, 0, 0, 255, 0, 127, 0});
  Literal big = vec(ElemType::F64, {9.3e18, -9.3e18});
  CHECK(ivals(convertLiteral(big, ElemType::S64)) == std::vector<int64_t>{INT64_MAX, INT64_MIN});
  // int -> int wraps.
  CHECK(ivals(convertLiteral(ivec(ElemType::S32, {300, -1, 128}), ElemType::S8)) ==
        std::vector<int64_t>{44, -1, -128});
  CHECK(ivals(convertLiteral(ivec(ElemType::S8, {-1}), ElemType::U32)) ==
        std::vector<int64_t>{4294967295LL});
  // f32 -> bf16 rounds to nearest even.
  Literal b = Literal::array(ElemType::F32, {3});
  b.data<float>()[0] = tpusim::floatOf(0x3F808000u);  // tie, even: down
  b.data<float>()[1] = tpusim::floatOf(0x3F818000u);  // tie, odd: up
  b.data<float>()[2] = tpusim::floatOf(0x3F808001u);  // above the tie: up
  Literal bb = convertLiteral(b, ElemType::BF16);
  CHECK(bb.data<uint16_t>()[0] == 0x3F80);
  CHECK(bb.data<uint16_t>()[1] == 0x3F82);
  CHECK(bb.data<uint16_t>()[2] == 0x3F81);
  // pred.
  CHECK(ivals(convertLiteral(vec(ElemType::F32, {0, -0.0, 0.5, kNan}), ElemType::Pred)) ==
        std::vector<int64_t>{0, 0, 1, 1});
  CHECK(dvals(convertLiteral(ivec(ElemType::Pred, {1, 0}), ElemType::F32)) ==
        std::vector<double>{1, 0});
  // bitcast-convert.
  Literal one = vec(ElemType::F32, {1.0});
  CHECK(ivals(bitcastLiteral(one, ElemType::S32, {1})) == std::vector<int64_t>{0x3F800000});
  CHECK(ivals(bitcastLiteral(one, ElemType::U16, {1, 2})) == std::vector<int64_t>{0, 0x3F80});
  CHECK_THROWS_AS(bitcastLiteral(one, ElemType::S64, {1}), EvalError);
}

TEST_CASE("integer arithmetic wraps and follows XLA's edge cases", "[eval][int]") {
  auto s8 = [](std::vector<int64_t> v) { return ivec(ElemType::S8, v); };
  CHECK(ivals(binary(BinaryOp::Add, s8({127, -128}), s8({1, -1}))) ==
        std::vector<int64_t>{-128, 127});
  CHECK(ivals(binary(BinaryOp::Mul, s8({64, -128}), s8({2, -1}))) ==
        std::vector<int64_t>{-128, -128});
  CHECK(ivals(unary(UnaryOp::Negate, s8({-128, 5}))) == std::vector<int64_t>{-128, -5});
  CHECK(ivals(unary(UnaryOp::Abs, s8({-128, -5}))) == std::vector<int64_t>{-128, 5});
  CHECK(ivals(binary(BinaryOp::Div, s8({7, -7, 5, -128}), s8({2, 2, 0, -1}))) ==
        std::vector<int64_t>{3, -3, -1, -128});
  CHECK(ivals(binary(BinaryOp::Rem, s8({7, -7, 5, -128}), s8({2, 2, 0, -1}))) ==
        std::vector<int64_t>{1, -1, 5, 0});
  auto u16 = [](std::vector<int64_t> v) { return ivec(ElemType::U16, v); };
  CHECK(ivals(binary(BinaryOp::Div, u16({9, 9}), u16({0, 2}))) == std::vector<int64_t>{65535, 4});
  CHECK(ivals(binary(BinaryOp::Mul, u16({65535}), u16({65535}))) == std::vector<int64_t>{1});
  auto s32 = [](std::vector<int64_t> v) { return ivec(ElemType::S32, v); };
  CHECK(ivals(binary(BinaryOp::Pow, s32({2, 3, 1, 2, -1, 0}), s32({10, 0, -5, -1, 3, 0}))) ==
        std::vector<int64_t>{1024, 1, 1, 0, -1, 1});
  CHECK(ivals(binary(BinaryOp::Pow, s32({2}), s32({31}))) == std::vector<int64_t>{INT32_MIN});
  // Shifts: out-of-range amounts (incl. negative, read as unsigned).
  CHECK(ivals(binary(BinaryOp::Shl, s32({1, 1, 1, 3}), s32({31, 32, -1, 1}))) ==
        std::vector<int64_t>{INT32_MIN, 0, 0, 6});
  CHECK(ivals(binary(BinaryOp::ShrLogical, s32({-8, -8, -8}), s32({1, 32, 40}))) ==
        std::vector<int64_t>{0x7FFFFFFC, 0, 0});
  CHECK(ivals(binary(BinaryOp::ShrArithmetic, s32({-8, -8, 8}), s32({1, 33, 99}))) ==
        std::vector<int64_t>{-4, -1, 0});
  CHECK(ivals(binary(BinaryOp::ShrArithmetic, u16({0x8000}), u16({15}))) ==
        std::vector<int64_t>{0xFFFF});
  CHECK(ivals(binary(BinaryOp::Max, s32({-3, 4}), s32({2, -9}))) == std::vector<int64_t>{2, 4});
  CHECK(ivals(binary(BinaryOp::Xor, s32({6}), s32({3}))) == std::vector<int64_t>{5});
  CHECK(ivals(unary(UnaryOp::Not, s32({0}))) == std::vector<int64_t>{-1});
  CHECK(ivals(unary(UnaryOp::Sign, s32({-7, 0, 9}))) == std::vector<int64_t>{-1, 0, 1});
  CHECK(ivals(unary(UnaryOp::PopCount, s32({-1, 6}))) == std::vector<int64_t>{32, 2});
  CHECK(ivals(unary(UnaryOp::Clz, ivec(ElemType::U8, {0, 1, 0x80}))) ==
        std::vector<int64_t>{8, 7, 0});
  CHECK_THROWS_WITH(unary(UnaryOp::Exp, s32({1})),
                    Catch::Contains("exponential") && Catch::Contains("s32"));
  CHECK_THROWS_WITH(binary(BinaryOp::And, vec(ElemType::F32, {1}), vec(ElemType::F32, {1})),
                    Catch::Contains("and is not defined on f32"));
}

TEST_CASE("pred logic", "[eval][int]") {
  Literal t = ivec(ElemType::Pred, {1, 1, 0, 0}), u = ivec(ElemType::Pred, {1, 0, 1, 0});
  CHECK(ivals(binary(BinaryOp::And, t, u)) == std::vector<int64_t>{1, 0, 0, 0});
  CHECK(ivals(binary(BinaryOp::Or, t, u)) == std::vector<int64_t>{1, 1, 1, 0});
  CHECK(ivals(binary(BinaryOp::Xor, t, u)) == std::vector<int64_t>{0, 1, 1, 0});
  CHECK(ivals(unary(UnaryOp::Not, t)) == std::vector<int64_t>{0, 0, 1, 1});
}

TEST_CASE("float arithmetic: f32 in f32, bf16 rounded after each op", "[eval][float]") {
  // f32: 16777216 + 1 is not representable in f32 (it is in f64).
  CHECK(dvals(binary(BinaryOp::Add, vec(ElemType::F32, {16777216}), vec(ElemType::F32, {1}))) ==
        std::vector<double>{16777216});
  // bf16: 256 + 1 rounds to 256 (8 bits of mantissa), 1 + 1/128 is exact.
  CHECK(dvals(binary(BinaryOp::Add, vec(ElemType::BF16, {256, 1}),
                     vec(ElemType::BF16, {1, 0.0078125}))) == std::vector<double>{256, 1.0078125});
  // 1/3 in bf16 = 0x3EAB (0.333984375).
  Literal third = binary(BinaryOp::Div, vec(ElemType::BF16, {1}), vec(ElemType::BF16, {3}));
  CHECK(third.data<uint16_t>()[0] == 0x3EAB);
  // f16: 2048 + 1 = 2048 (tie to even), 2048 + 3 = 2052.
  CHECK(dvals(binary(BinaryOp::Add, vec(ElemType::F16, {2048, 2048}),
                     vec(ElemType::F16, {1, 3}))) == std::vector<double>{2048, 2052});
  Literal mx = binary(BinaryOp::Max, vec(ElemType::F32, {kNan, 1, -0.0, 0}),
                      vec(ElemType::F32, {1, kNan, 0, -0.0}));
  CHECK(std::isnan(mx.getDouble(0)));
  CHECK(std::isnan(mx.getDouble(1)));
  CHECK(!std::signbit(mx.getDouble(2)));
  CHECK(!std::signbit(mx.getDouble(3)));
  Literal mn = binary(BinaryOp::Min, vec(ElemType::F32, {-0.0, 0}), vec(ElemType::F32, {0, -0.0}));
  CHECK(std::signbit(mn.getDouble(0)));
  CHECK(std::signbit(mn.getDouble(1)));
  CHECK(dvals(binary(BinaryOp::Rem, vec(ElemType::F32, {7.5, -7.5}), vec(ElemType::F32, {2, 2}))) ==
        std::vector<double>{1.5, -1.5});
  CHECK(dvals(binary(BinaryOp::Pow, vec(ElemType::F32, {2, 9}), vec(ElemType::F32, {10, 0.5}))) ==
        std::vector<double>{1024, 3});
  CHECK(dvals(unary(UnaryOp::RoundNearestEven, vec(ElemType::F32, {0.5, 1.5, 2.5, -0.5}))) ==
        std::vector<double>{0, 2, 2, -0.0});
  CHECK(dvals(unary(UnaryOp::RoundNearestAfz, vec(ElemType::F32, {0.5, 1.5, 2.5, -0.5}))) ==
        std::vector<double>{1, 2, 3, -1});
  CHECK(dvals(unary(UnaryOp::Floor, vec(ElemType::F32, {-1.5, 1.5}))) ==
        std::vector<double>{-2, 1});
  CHECK(dvals(unary(UnaryOp::Ceil, vec(ElemType::F32, {-1.5, 1.5}))) == std::vector<double>{-1, 2});
  CHECK(dvals(unary(UnaryOp::Sign, vec(ElemType::F32, {-3, 0, 2}))) ==
        std::vector<double>{-1, 0, 1});
  CHECK(dvals(unary(UnaryOp::Abs, vec(ElemType::F32, {-3, kInf * -1}))) ==
        std::vector<double>{3, kInf});
  CHECK(dvals(unary(UnaryOp::Sqrt, vec(ElemType::F32, {16, 2.25}))) == std::vector<double>{4, 1.5});
  CHECK(dvals(unary(UnaryOp::Rsqrt, vec(ElemType::F32, {16, 0.25}))) ==
        std::vector<double>{0.25, 2});
  CHECK(dvals(unary(UnaryOp::Cbrt, vec(ElemType::F32, {27, -8}))) == std::vector<double>{3, -2});
  CHECK(dvals(unary(UnaryOp::Logistic, vec(ElemType::F32, {0, kInf, -kInf}))) ==
        std::vector<double>{0.5, 1, 0});
  CHECK(dvals(unary(UnaryOp::Tanh, vec(ElemType::F32, {0, kInf}))) == std::vector<double>{0, 1});
  CHECK(dvals(unary(UnaryOp::Exp, vec(ElemType::F32, {0, -kInf}))) == std::vector<double>{1, 0});
  CHECK(dvals(unary(UnaryOp::Log, vec(ElemType::F32, {1, 0}))) == std::vector<double>{0, -kInf});
  CHECK(dvals(unary(UnaryOp::Expm1, vec(ElemType::F32, {0}))) == std::vector<double>{0});
  CHECK(dvals(unary(UnaryOp::Log1p, vec(ElemType::F32, {0}))) == std::vector<double>{0});
  CHECK(dvals(unary(UnaryOp::Sin, vec(ElemType::F32, {0}))) == std::vector<double>{0});
  CHECK(dvals(unary(UnaryOp::Cos, vec(ElemType::F32, {0}))) == std::vector<double>{1});
  CHECK(ivals(unary(UnaryOp::IsFinite, vec(ElemType::BF16, {1, kInf, kNan}))) ==
        std::vector<int64_t>{1, 0, 0});
  // exp(1) in f32 is the f32 nearest e, not the double.
  CHECK(unary(UnaryOp::Exp, vec(ElemType::F32, {1})).data<float>()[0] == std::exp(1.0f));
  // bf16 exp(1) = e rounded to bf16 = 2.71875.
  CHECK(dvals(unary(UnaryOp::Exp, vec(ElemType::BF16, {1}))) == std::vector<double>{2.71875});
}

TEST_CASE("compare, select, clamp", "[eval][compare]") {
  Literal a = vec(ElemType::F32, {1, kNan, -0.0, 2}), b = vec(ElemType::F32, {2, kNan, 0, 2});
  CHECK(ivals(compare(CompareDir::LT, false, a, b)) == std::vector<int64_t>{1, 0, 0, 0});
  CHECK(ivals(compare(CompareDir::EQ, false, a, b)) == std::vector<int64_t>{0, 0, 1, 1});
  CHECK(ivals(compare(CompareDir::NE, false, a, b)) == std::vector<int64_t>{1, 1, 0, 0});
  CHECK(ivals(compare(CompareDir::LT, true, a, b)) == std::vector<int64_t>{1, 0, 1, 0});
  CHECK(ivals(compare(CompareDir::EQ, true, a, b)) == std::vector<int64_t>{0, 1, 0, 1});
  Literal nn = vec(ElemType::F32, {-kNan}), inf = vec(ElemType::F32, {-kInf});
  nn.data<float>()[0] = -std::numeric_limits<float>::quiet_NaN();
  CHECK(ivals(compare(CompareDir::LT, true, nn, inf)) == std::vector<int64_t>{1});
  // Unsigned vs signed compare of the same bits.
  CHECK(ivals(compare(CompareDir::GT, false, ivec(ElemType::U8, {200}),
                      ivec(ElemType::U8, {100}))) == std::vector<int64_t>{1});
  CHECK(ivals(compare(CompareDir::GT, false, ivec(ElemType::S8, {-56}),
                      ivec(ElemType::S8, {100}))) == std::vector<int64_t>{0});

  Literal p = ivec(ElemType::Pred, {1, 0, 1});
  Literal x = ivec(ElemType::S32, {1, 2, 3}), y = ivec(ElemType::S32, {10, 20, 30});
  CHECK(ivals(select(p, x, y)) == std::vector<int64_t>{1, 20, 3});
  Literal p0 = Literal::array(ElemType::Pred, {});
  CHECK(ivals(select(p0, x, y)) == std::vector<int64_t>{10, 20, 30});
  Literal lo = Literal::scalar(ElemType::S32, 2), hi = ivec(ElemType::S32, {5, 5, 2});
  CHECK(ivals(clamp(lo, ivec(ElemType::S32, {0, 9, 3}), hi)) == std::vector<int64_t>{2, 5, 2});
  CHECK_THROWS_AS(select(p, x, vec(ElemType::F32, {1, 2, 3})), EvalError);
}
