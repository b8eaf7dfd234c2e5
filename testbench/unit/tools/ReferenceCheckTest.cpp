// tpusim --check's comparison (sim/tools/tpusim/ReferenceCheck.h): the
// per-element tolerance and the bf16 rounding judgement against an f32
// evaluation, on small synthetic outputs.
#include <catch2/catch.hpp>
#include <cmath>

#include "isa/support/Numerics.h"
#include "sim/tools/tpusim/ReferenceCheck.h"

using namespace tpusim;

namespace {

isa::BufferDesc bf16Output(int64_t n) {
  isa::BufferDesc b;
  b.name = "out";
  b.shape = {n};
  b.dtype = isa::DType::Bf16;
  b.role = isa::BufferRole::Output;
  return b;
}

// A bf16 output array (uint16 bits) of the values f(i).
template <typename F>
npy::Array bf16Array(int64_t n, F f) {
  npy::Array a = npy::makeArray(npy::DType::U16, {n});
  for (int64_t i = 0; i < n; ++i) a.as<uint16_t>()[i] = f32ToBf16Bits(float(f(i)));
  return a;
}

template <typename F>
npy::Array f32Array(int64_t n, F f) {
  npy::Array a = npy::makeArray(npy::DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) a.as<float>()[i] = float(f(i));
  return a;
}

constexpr int64_t kN = 1000;
double exactValue(int64_t i) { return std::sin(0.37 * double(i)) * 2.0; }
// A deterministic "rounding noise" of relative size `scale` (two independent patterns).
double noiseA(int64_t i, double scale) { return scale * std::cos(1.3 * double(i) + 0.2); }
double noiseB(int64_t i, double scale) { return scale * std::sin(2.9 * double(i) + 1.1); }

}  // namespace

TEST_CASE("an output within the per-element tolerance passes without a judgement") {
  auto buffer = bf16Output(kN);
  auto exact = f32Array(kN, exactValue);
  auto ref = bf16Array(kN, exactValue);
  auto sim = bf16Array(kN, [](int64_t i) { return exactValue(i) * (1 + noiseA(i, 0.005)); });
  sim::OutputCheck c = sim::compareOutput(buffer, sim, ref, -1);  // -1: the default tolerance
  CHECK(c.ok());
  CHECK_FALSE(c.wantsRoundingJudgement());
}

TEST_CASE("bf16 rounding: an error like the evaluator's passes, a larger one fails") {
  auto buffer = bf16Output(kN);
  auto exact = f32Array(kN, exactValue);
  // The evaluator and the simulator each 5% rms off the exact values, differently.
  auto ref = bf16Array(kN, [](int64_t i) { return exactValue(i) + noiseA(i, 0.1); });
  auto close = bf16Array(kN, [](int64_t i) { return exactValue(i) + noiseB(i, 0.1); });
  sim::OutputCheck c = sim::compareOutput(buffer, close, ref, -1);  // -1: the default tolerance
  REQUIRE(c.mismatches > 0);
  REQUIRE(c.wantsRoundingJudgement());
  sim::judgeBf16Rounding(c, buffer, close, ref, exact);
  CHECK(c.roundingJudged);
  CHECK(c.ok());
  CHECK(c.simRmsError == Approx(c.evalRmsError).epsilon(0.1));
  CHECK(c.line().find("ok, bf16 rounding") != std::string::npos);

  // Twice the evaluator's error is beyond 1.5x.
  auto far = bf16Array(kN, [](int64_t i) { return exactValue(i) + noiseB(i, 0.2); });
  sim::OutputCheck d = sim::compareOutput(buffer, far, ref, -1);  // -1: the default tolerance
  sim::judgeBf16Rounding(d, buffer, far, ref, exact);
  CHECK(d.roundingJudged);
  CHECK_FALSE(d.ok());
  CHECK(d.line().find("MISMATCH") != std::string::npos);
}

TEST_CASE("bf16 rounding is not judged when the evaluator is exact or values are not finite") {
  auto buffer = bf16Output(kN);
  auto exact = f32Array(kN, exactValue);
  auto sim = bf16Array(kN, [](int64_t i) { return exactValue(i) + noiseB(i, 0.1); });
  // The evaluator equals the f32 evaluation: no bf16 on its path, no second chance.
  auto ref = bf16Array(kN, exactValue);
  auto exactAsRef =
      f32Array(kN, [&](int64_t i) { return double(bf16BitsToF32(ref.as<uint16_t>()[i])); });
  sim::OutputCheck c = sim::compareOutput(buffer, sim, ref, -1);  // -1: the default tolerance
  REQUIRE(c.mismatches > 0);
  sim::judgeBf16Rounding(c, buffer, sim, ref, exactAsRef);
  CHECK_FALSE(c.roundingJudged);
  CHECK_FALSE(c.ok());

  // A NaN where the reference has a number fails per element and is never excused.
  auto nan = bf16Array(kN, [](int64_t i) { return i == 7 ? NAN : exactValue(i); });
  sim::OutputCheck d = sim::compareOutput(buffer, nan, ref, -1);  // -1: the default tolerance
  CHECK(d.nonFiniteMismatches == 1);
  CHECK_FALSE(d.wantsRoundingJudgement());
  sim::judgeBf16Rounding(d, buffer, nan, ref, exact);
  CHECK_FALSE(d.ok());
}

TEST_CASE("--check-rtol 0 is an exact comparison, not the default tolerance", "[check]") {
  isa::BufferDesc buffer;
  buffer.name = "out";
  buffer.dtype = isa::DType::F32;
  buffer.shape = {4};
  buffer.role = isa::BufferRole::Output;
  npy::Array ref = npy::makeArray(npy::DType::F32, {4});
  npy::Array sim = ref;
  for (int i = 0; i < 4; ++i) ref.as<float>()[i] = 1.0f + float(i);
  for (int i = 0; i < 4; ++i) sim.as<float>()[i] = ref.as<float>()[i] * (1.0f + 1e-6f);
  CHECK(sim::compareOutput(buffer, sim, ref, -1).ok());
  CHECK_FALSE(sim::compareOutput(buffer, sim, ref, 0).ok());
  CHECK(sim::compareOutput(buffer, ref, ref, 0).ok());
}
