// RMSNorm, LayerNorm and SwiGLU in interpret mode against their double
// references: aligned and ragged shapes (rows that are not a multiple of the
// block, widths that are not a multiple of 128), f32 and bf16, and inputs
// chosen to catch the wrong formula.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "kernels/dsl/HostArrayIo.h"
#include "kernels/lib/LayerNorm.h"
#include "kernels/lib/RmsNorm.h"
#include "kernels/lib/SwiGlu.h"

using namespace tpusim;
using namespace tpusim::kernels;
using dsl::HostArray;

namespace {

std::vector<double> doubles(const HostArray& a) {
  std::vector<double> v(size_t(a.size()));
  for (int64_t i = 0; i < a.size(); ++i) v[size_t(i)] = dsl::valueAt(a, i);
  return v;
}

// Runs the kernel in interpret mode (parallel axes shuffled) and checks it
// against the reference; returns the report for further checks.
lib::ErrorReport check(const lib::LibraryKernel& lk, const std::vector<HostArray>& inputs,
                       uint64_t seed = 3) {
  auto kernel = lk.trace();
  dsl::InterpretOptions o;
  o.seed = seed;
  dsl::InterpretResult r = dsl::interpret(*kernel, inputs, o);
  REQUIRE(r.races.empty());
  std::vector<std::vector<double>> in, got;
  for (const auto& a : inputs) in.push_back(doubles(a));
  for (const auto& a : r.outputs) got.push_back(doubles(a));
  lib::ErrorReport rep = lib::compareWithReference(got, lk.reference(in), lk.tolerance);
  INFO(kernel->name << ": max abs error " << rep.maxAbs << ", max relative error " << rep.maxRel
                    << " (tolerance " << lk.tolerance.rel << ") at index " << rep.worstIndex);
  CHECK(rep.pass);
  return rep;
}

std::vector<HostArray> randomInputs(const lib::LibraryKernel& lk, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<HostArray> v;
  for (const auto& a : lk.inputs) v.push_back(dsl::randomArray(a.shape, a.dtype, rng));
  return v;
}

lib::LibraryKernel build(const std::string& name, std::map<std::string, std::string> params) {
  return lib::buildKernel(name, params);
}

}  // namespace

TEST_CASE("rms_norm matches the reference for aligned and ragged shapes, f32 and bf16") {
  // rows, cols, block rows: ragged rows (37 = 2 x 16 + 5), widths below and
  // above 128 that are not multiples of it, a block larger than the array.
  for (auto [rows, cols, br] : {std::tuple<int, int, int>{64, 256, 16},
                                {37, 300, 16},
                                {37, 100, 8},
                                {5, 640, 32},
                                {24, 1024, 8}}) {
    for (const char* dtype : {"f32", "bf16"}) {
      INFO("rms_norm " << rows << "x" << cols << " " << dtype << " block rows " << br);
      auto lk = build("rms_norm", {{"rows", std::to_string(rows)},
                                   {"cols", std::to_string(cols)},
                                   {"dtype", dtype},
                                   {"block_rows", std::to_string(br)}});
      check(lk, randomInputs(lk, uint64_t(rows * cols)));
    }
  }
}

TEST_CASE("rms_norm divides by the root mean square, not the norm or the variance") {
  // Rows of constant magnitude c: mean(x^2) = c^2, so out = sign(x) * w * c / sqrt(c^2 + eps).
  const int64_t rows = 8, cols = 200;
  std::vector<float> x(rows * cols), w(cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = float((c % 3 ? 1 : -1) * (r + 1) * 0.5);
  for (int64_t c = 0; c < cols; ++c) w[c] = float(c) / 64.0f - 1.0f;
  auto lk = build("rms_norm", {{"rows", "8"}, {"cols", "200"}, {"eps", "0"}});
  auto kernel = lk.trace();
  auto out = dsl::interpret(*kernel, {HostArray::fromFloats({rows, cols}, llo::DType::F32, x),
                                      HostArray::fromFloats({1, cols}, llo::DType::F32, w)})
                 .outputs[0];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      REQUIRE(out.floatAt(r * cols + c) == Approx((c % 3 ? 1 : -1) * w[c]).margin(1e-6));
}

TEST_CASE("layer_norm matches the reference for aligned and ragged shapes, f32 and bf16") {
  for (auto [rows, cols, br] : {std::tuple<int, int, int>{64, 256, 16},
                                {37, 300, 16},
                                {37, 100, 8},
                                {5, 640, 32},
                                {24, 1100, 8}}) {
    for (const char* dtype : {"f32", "bf16"}) {
      INFO("layer_norm " << rows << "x" << cols << " " << dtype << " block rows " << br);
      auto lk = build("layer_norm", {{"rows", std::to_string(rows)},
                                     {"cols", std::to_string(cols)},
                                     {"dtype", dtype},
                                     {"block_rows", std::to_string(br)}});
      check(lk, randomInputs(lk, uint64_t(rows + cols)));
    }
  }
}

TEST_CASE("layer_norm keeps the variance when the mean dwarfs the deviations") {
  // x = 3000 + u, u in [-1, 1): E[x^2] - E[x]^2 in f32 would lose the variance
  // entirely (the f32 spacing at 9e6 is 1, the variance is 1/3); the two-pass
  // form only carries the f32 rounding of the mean (about 1e-3 here).
  const int64_t rows = 16, cols = 384;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(rows * cols), g(cols), b(cols);
  for (float& v : x) v = 3000.0f + u(rng);
  for (float& v : g) v = 1.0f + 0.5f * u(rng);
  for (float& v : b) v = u(rng);
  std::vector<HostArray> inputs{HostArray::fromFloats({rows, cols}, llo::DType::F32, x),
                                HostArray::fromFloats({1, cols}, llo::DType::F32, g),
                                HostArray::fromFloats({1, cols}, llo::DType::F32, b)};
  auto lk = build("layer_norm", {{"rows", "16"}, {"cols", "384"}});
  auto kernel = lk.trace();
  auto got = doubles(dsl::interpret(*kernel, inputs).outputs[0]);
  std::vector<std::vector<double>> in;
  for (const auto& a : inputs) in.push_back(doubles(a));
  lib::ErrorReport r = lib::compareWithReference({got}, lk.reference(in), lk.tolerance);
  INFO("max abs error " << r.maxAbs);
  CHECK(r.maxAbs < 2e-2);  // outputs are of order 1
}

TEST_CASE("swiglu matches the reference: aligned, ragged rows, d_model and d_ff") {
  // m, d_model, d_ff, bm, bf. 300 = 2 x 128 + 44: the last d_ff block is
  // masked on both sides; 200 and 40 are ragged everywhere else.
  for (auto [m, d, f, bm, bf] : {std::tuple<int, int, int, int, int>{64, 256, 384, 64, 128},
                                 {40, 200, 300, 16, 128},
                                 {8, 128, 384, 8, 256},
                                 {64, 384, 256, 32, 256}}) {
    for (const char* out : {"f32", "bf16"}) {
      // Both layouts of w_gate / w_up, alternating with the output dtype.
      const char* layout = out[0] == 'f' ? "fd" : "df";
      INFO("swiglu m=" << m << " d=" << d << " f=" << f << " bm=" << bm << " bf=" << bf << " "
                       << out << " " << layout);
      auto lk = build("swiglu", {{"m", std::to_string(m)},
                                 {"d_model", std::to_string(d)},
                                 {"d_ff", std::to_string(f)},
                                 {"out_dtype", out},
                                 {"gate_up_layout", layout},
                                 {"bm", std::to_string(bm)},
                                 {"bf", std::to_string(bf)}});
      check(lk, randomInputs(lk, uint64_t(m * d + f)));
    }
  }
}

TEST_CASE("swiglu gates with silu of the gate projection, not of the up projection") {
  // With w_up = w_gate the result is symmetric in the two; make them differ so
  // swapping them (silu(u) * g) would be far outside the tolerance.
  auto lk = build("swiglu", {{"m", "16"}, {"d_model", "128"}, {"d_ff", "128"}});
  auto inputs = randomInputs(lk, 5);
  std::vector<std::vector<double>> in;
  for (const auto& a : inputs) in.push_back(doubles(a));
  auto swapped = lib::swiGluReference(in[0], in[2], in[1], in[3], 16, 128, 128, true);
  auto kernel = lk.trace();
  auto got = doubles(dsl::interpret(*kernel, inputs).outputs[0]);
  CHECK(lib::compareWithReference({got}, lk.reference(in), lk.tolerance).pass);
  CHECK(!lib::compareWithReference({got}, {swapped}, lk.tolerance).pass);
}

TEST_CASE("norm and swiglu builders reject unsupported dtypes") {
  CHECK_THROWS_WITH(lib::rmsNormCall(8, 128, llo::DType::S32), Catch::Contains("f32 or bf16"));
  CHECK_THROWS_WITH(lib::layerNormCall(8, 128, llo::DType::S8), Catch::Contains("f32 or bf16"));
  lib::SwiGluOptions o;
  o.outType = llo::DType::S32;
  CHECK_THROWS_WITH(lib::swiGluCall(8, 128, 128, o), Catch::Contains("f32 or bf16"));
  CHECK_THROWS_WITH(lib::buildKernel("swiglu", {{"gate_up_layout", "dd"}}),
                    Catch::Contains("'gate_up_layout' = 'dd': expected fd or df"));
}
