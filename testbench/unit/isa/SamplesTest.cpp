// The sample programs in isa/samples compute what they say: each is assembled,
// run on the small functional model in SampleModel.h with random inputs, and
// its output compared with a reference written here from the math.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "isa/Assembler.h"
#include "testbench/unit/isa/SampleModel.h"

using namespace tpusim::isa;
using tpusim::isa::testing::SampleModel;

namespace {
Program assembleSample(const std::string& name) {
  const char* root = std::getenv("TPUSIM_SOURCE_DIR");
  std::string path = std::string(root ? root : TPUSIM_SOURCE_DIR_DEFAULT) + "/isa/samples/" + name;
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  Program p;
  std::vector<Diagnostic> diags;
  INFO(path);
  REQUIRE(assemble(text.str(), path, &p, &diags));
  return p;
}

const BufferDesc& buffer(const Program& p, const std::string& name) {
  for (const BufferDesc& b : p.buffers)
    if (b.name == name) return b;
  FAIL("no buffer " << name);
  return p.buffers.front();
}

std::vector<float> randomFill(SampleModel& m, const BufferDesc& b, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> values(b.sizeBytes / 4);
  for (float& v : values) v = dist(rng);
  std::memcpy(m.hbm.data() + b.address, values.data(), b.sizeBytes);
  return values;
}

std::vector<float> readOut(const SampleModel& m, const BufferDesc& b) {
  std::vector<float> values(b.sizeBytes / 4);
  std::memcpy(values.data(), m.hbm.data() + b.address, b.sizeBytes);
  return values;
}

float bf(float x) { return tpusim::roundToBf16(x); }
}  // namespace

TEST_CASE("matmul_tile.s computes C = A . B with bf16 inputs and f32 accumulation",
          "[isa][samples]") {
  Program p = assembleSample("matmul_tile.s");
  SampleModel m(p, 0x50000, 640);
  std::mt19937 rng(1);
  std::vector<float> a = randomFill(m, buffer(p, "a"), rng);
  std::vector<float> b = randomFill(m, buffer(p, "b"), rng);
  m.run();
  std::vector<float> c = readOut(m, buffer(p, "c"));
  const int M = 128, K = 256, N = 128;
  int mismatches = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      // Two K tiles of 128, each summed in order from +0 (mm), then added (mma).
      float t0 = 0.0f, t1 = 0.0f;
      for (int k = 0; k < 128; ++k) t0 = t0 + bf(a[i * K + k]) * bf(b[k * N + j]);
      for (int k = 128; k < K; ++k) t1 = t1 + bf(a[i * K + k]) * bf(b[k * N + j]);
      float expected = t0 + t1;
      if (tpusim::bitsOf(c[i * N + j]) != tpusim::bitsOf(expected)) ++mismatches;
    }
  CHECK(mismatches == 0);
}

TEST_CASE("elementwise.s computes max(a * b + 1, 0)", "[isa][samples]") {
  Program p = assembleSample("elementwise.s");
  SampleModel m(p, 0x18000, 192);
  std::mt19937 rng(2);
  std::vector<float> a = randomFill(m, buffer(p, "a"), rng);
  std::vector<float> b = randomFill(m, buffer(p, "b"), rng);
  m.run();
  std::vector<float> out = readOut(m, buffer(p, "out"));
  REQUIRE(out.size() == a.size());
  int mismatches = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    float x = a[i] * b[i];
    x = x + 1.0f;
    float expected = x > 0.0f ? x : 0.0f;
    if (tpusim::bitsOf(out[i]) != tpusim::bitsOf(expected)) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("softmax_row.s computes a softmax over each row", "[isa][samples]") {
  Program p = assembleSample("softmax_row.s");
  SampleModel m(p, 0x4000, 32);
  std::mt19937 rng(3);
  std::vector<float> x = randomFill(m, buffer(p, "x"), rng);
  m.run();
  std::vector<float> y = readOut(m, buffer(p, "y"));
  for (int r = 0; r < 16; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int l = 0; l < 128; ++l) mx = std::max(mx, double(x[r * 128 + l]));
    for (int l = 0; l < 128; ++l) sum += std::exp(double(x[r * 128 + l]) - mx);
    double total = 0;
    for (int l = 0; l < 128; ++l) {
      double expected = std::exp(double(x[r * 128 + l]) - mx) / sum;
      REQUIRE(std::fabs(y[r * 128 + l] - expected) <= 1e-6 * expected + 1e-9);
      total += y[r * 128 + l];
    }
    CHECK(std::fabs(total - 1.0) < 1e-5);
  }
}
