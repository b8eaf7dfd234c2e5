// Library kernels in interpret mode against their plain C++ references.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "isa/support/Numerics.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/lib/Matmul.h"
#include "kernels/lib/Softmax.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

// Random bf16-representable values (so the reference sees exactly the inputs).
std::vector<float> randomValues(size_t n, uint64_t seed, bool ints) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> i8(-128, 127);
  std::uniform_real_distribution<float> f(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = ints ? float(i8(rng)) : roundToBf16(f(rng));
  return v;
}

void checkMatmul(int64_t m, int64_t n, int64_t k, DType t, lib::MatmulBlocks blocks) {
  INFO("matmul " << m << "x" << n << "x" << k << " " << isa::dtypeName(t) << " blocks " << blocks.bm
                 << "," << blocks.bn << "," << blocks.bk);
  bool ints = t == S8;
  auto xs = randomValues(m * k, 11, ints), ys = randomValues(k * n, 12, ints);
  auto toHost = [&](std::vector<int64_t> shape, const std::vector<float>& v) {
    if (!ints) return HostArray::fromFloats(shape, t, v);
    std::vector<int32_t> iv(v.begin(), v.end());
    return HostArray::fromInts(shape, t, iv);
  };
  auto kernel = lib::matmulCall(m, n, k, t, blocks).trace({{{m, k}, t}, {{k, n}, t}});
  InterpretOptions o;
  o.seed = 5;
  auto res = interpret(*kernel, {toHost({m, k}, xs), toHost({k, n}, ys)}, o);
  REQUIRE(res.races.empty());
  std::vector<double> xd(xs.begin(), xs.end()), yd(ys.begin(), ys.end());
  auto want = lib::matmulReference(xd, yd, m, n, k);
  for (int64_t i = 0; i < m * n; ++i) {
    if (ints) {
      REQUIRE(res.outputs[0].intAt(i) == int32_t(want[i]));
    } else {
      // f32 accumulation of k products of magnitude <= 1.
      REQUIRE(std::fabs(res.outputs[0].floatAt(i) - want[i]) <= 1e-6 * double(k) + 1e-6);
    }
  }
}

}  // namespace

TEST_CASE("matmul bf16 in interpret mode matches the reference, aligned and ragged shapes") {
  checkMatmul(128, 256, 256, BF16, {64, 128, 128});
  checkMatmul(100, 200, 300, BF16, {64, 128, 128});  // every dimension ragged
  checkMatmul(8, 128, 128, BF16, {128, 128, 128});   // blocks larger than the array
}

TEST_CASE("matmul int8 accumulates exactly in s32") {
  checkMatmul(64, 128, 384, S8, {32, 128, 128});
  checkMatmul(40, 130, 200, S8, {32, 128, 128});
}

TEST_CASE("matmul rejects f32 inputs with a clear error") {
  CHECK_THROWS_WITH(lib::matmulCall(8, 8, 8, F32), Catch::Contains("must be bf16 or s8"));
}

TEST_CASE("row softmax in interpret mode matches the reference") {
  for (auto [r, c, br] :
       {std::tuple<int64_t, int64_t, int64_t>{64, 256, 16}, {37, 300, 8}, {5, 128, 8}}) {
    INFO("softmax " << r << "x" << c << " block rows " << br);
    auto xs = randomValues(r * c, 21, false);
    for (float& x : xs) x *= 8.0f;
    auto kernel = lib::softmaxCall(r, c, br).trace({{{r, c}, F32}});
    auto res = interpret(*kernel, {HostArray::fromFloats({r, c}, F32, xs)});
    std::vector<double> xd(xs.begin(), xs.end());
    auto want = lib::softmaxReference(xd, r, c);
    for (int64_t i = 0; i < r * c; ++i)
      REQUIRE(std::fabs(res.outputs[0].floatAt(i) - want[i]) <= 2e-6 + 1e-5 * want[i]);
  }
}
