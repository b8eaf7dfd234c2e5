// Interpret mode: Pallas grid semantics, poisoning, shuffling, race reports.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "isa/support/Numerics.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/PallasCall.h"

using namespace tpusim;
using namespace tpusim::kernels::dsl;

namespace {

std::vector<float> randomFloats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Random values already representable in bf16 (inputs of bf16 refs).
std::vector<float> bf16Inputs(uint64_t seed, int64_t n) {
  std::vector<float> v = randomFloats(size_t(n), seed);
  for (float& x : v) x = roundToBf16(x);
  return v;
}

InterpretOptions seeded(uint64_t seed) {
  InterpretOptions o;
  o.seed = seed;
  return o;
}

IndexMap ij() {
  return [](const GridIndex& g) { return std::vector<Scalar>{g[0], g[1]}; };
}

}  // namespace

TEST_CASE("element-wise kernel over a grid with edge blocks that are padded") {
  // 200 x 300 is not a multiple of the (64, 128) block: edge blocks are clipped.
  const int64_t R = 200, C = 300;
  auto call =
      pallas_call([](Ref x, Ref y, Ref o) { o.store(exp(x.load()) * y.load() - 0.5); },
                  {{{R, C}, F32}}, {4, 3}, {BlockSpec({64, 128}, ij()), BlockSpec({64, 128}, ij())},
                  {BlockSpec({64, 128}, ij())}, {}, CompilerParams{{PARALLEL, PARALLEL}});
  auto k = call.trace({{{R, C}, F32}, {{R, C}, F32}});
  auto xs = randomFloats(R * C, 1), ys = randomFloats(R * C, 2);
  auto res = interpret(
      *k, {HostArray::fromFloats({R, C}, F32, xs), HostArray::fromFloats({R, C}, F32, ys)},
      seeded(7));
  CHECK(res.races.empty());
  CHECK(res.gridSteps == 12);
  for (int64_t i = 0; i < R * C; ++i) {
    float want = std::exp(xs[i]) * ys[i] - 0.5f;
    REQUIRE(bitsOf(res.outputs[0].floatAt(i)) == bitsOf(want));
  }
}

TEST_CASE("results do not depend on the shuffle seed of parallel axes") {
  auto call = pallas_call([](Ref x, Ref o) { o.store(x.load() * 2.0); }, {{{64, 256}, F32}}, {8, 2},
                          {BlockSpec({8, 128}, ij())}, {BlockSpec({8, 128}, ij())}, {},
                          CompilerParams{{PARALLEL, PARALLEL}});
  auto k = call.trace({{{64, 256}, F32}});
  auto x = HostArray::fromFloats({64, 256}, F32, randomFloats(64 * 256, 3));
  auto a = interpret(*k, {x}, seeded(1));
  auto b = interpret(*k, {x}, seeded(2));
  CHECK(a.outputs[0].words == b.outputs[0].words);
}

TEST_CASE("two parallel grid points writing one output block are reported as a race") {
  // Both points of the parallel axis write output block (0, 0).
  auto call = pallas_call([](Ref x, Ref o) { o.store(x.load()); }, {{{8, 128}, F32, "o"}}, {2},
                          {BlockSpec({8, 128},
                                     [](const GridIndex&) {
                                       return std::vector<Scalar>{0, 0};
                                     })},
                          {BlockSpec({8, 128},
                                     [](const GridIndex&) {
                                       return std::vector<Scalar>{0, 0};
                                     })},
                          {}, CompilerParams{{PARALLEL}});
  auto k = call.trace({{{8, 128}, F32}});
  auto res = interpret(*k, {HostArray::fromFloats({8, 128}, F32, randomFloats(1024, 4))});
  REQUIRE(res.races.size() == 1);
  CHECK(res.races[0].find("race: output 'o' block [0,0] is written by parallel grid points") !=
        std::string::npos);
  // The same kernel with an arbitrary axis is a legal accumulation pattern.
  CallConfig c = call.config();
  c.compiler_params.dimension_semantics = {ARBITRARY};
  auto ok = pallas_call([](Ref x, Ref o) { o.store(x.load()); }, c).trace({{{8, 128}, F32}});
  CHECK(
      interpret(*ok, {HostArray::fromFloats({8, 128}, F32, randomFloats(1024, 4))}).races.empty());
}

TEST_CASE("uninitialized output blocks and scratch are poisoned with NaN") {
  // Accumulates into the output without initializing it first: NaN everywhere.
  auto call = pallas_call([](Ref x, Ref o) { o.store(o.load() + x.load()); }, {{{8, 128}, F32}},
                          {1}, {BlockSpec()}, {BlockSpec()});
  auto k = call.trace({{{8, 128}, F32}});
  auto res = interpret(*k, {HostArray::fromFloats({8, 128}, F32, randomFloats(1024, 5))});
  CHECK(std::isnan(res.outputs[0].floatAt(0)));
  CHECK(std::isnan(res.outputs[0].floatAt(1023)));
}

TEST_CASE("matmul kernel with a reduction axis and an f32 scratch accumulator") {
  const int64_t M = 64, N = 256, K = 384, bm = 32, bn = 128, bk = 128;
  CallConfig c;
  c.name = "mm";
  c.out_shapes = {{{M, N}, F32}};
  c.grid = {M / bm, N / bn, K / bk};
  c.in_specs = {BlockSpec({bm, bk},
                          [](const GridIndex& g) {
                            return std::vector<Scalar>{g[0], g[2]};
                          }),
                BlockSpec({bk, bn}, [](const GridIndex& g) {
                  return std::vector<Scalar>{g[2], g[1]};
                })};
  c.out_specs = {BlockSpec({bm, bn}, [](const GridIndex& g) {
    return std::vector<Scalar>{g[0], g[1]};
  })};
  c.scratch = {VMEM({bm, bn}, F32)};
  c.compiler_params.dimension_semantics = {PARALLEL, PARALLEL, ARBITRARY};
  auto call = pallas_call(
      [](Ref x, Ref y, Ref o, Ref acc) {
        when(program_id(2) == 0, [&] { acc.store(zeros(32, 128)); });
        acc.store(acc.load() + dot(x.load(), y.load()));
        when(program_id(2) == num_programs(2) - 1, [&] { o.store(acc.load()); });
      },
      c);
  auto k = call.trace({{{M, K}, BF16}, {{K, N}, BF16}});
  auto a = HostArray::fromFloats({M, K}, BF16, randomFloats(M * K, 6));
  auto b = HostArray::fromFloats({K, N}, BF16, randomFloats(K * N, 7));
  auto res = interpret(*k, {a, b}, seeded(3));
  CHECK(res.races.empty());
  // Reference: per 128-chunk of K (= bk = MXU size) a k-order f32 sum from +0,
  // then the chunks added to the accumulator in grid order (acc starts at 0).
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t c0 = 0; c0 < K; c0 += 128) {
        float r = 0.0f;
        for (int64_t kk = c0; kk < c0 + 128; ++kk)
          r = r + a.floatAt(i * K + kk) * b.floatAt(kk * N + j);
        acc = acc + r;
      }
      REQUIRE(bitsOf(res.outputs[0].floatAt(i * N + j)) == bitsOf(acc));
    }
}

TEST_CASE("row softmax with lane reductions and broadcasts") {
  const int64_t R = 20, C = 200;  // neither a multiple of the tile
  auto call = pallas_call(
      [](Ref x, Ref o) {
        Array v = x.load();
        Array m = max(v, 1);
        Array e = exp(v - m);
        o.store(e / sum(e, 1));
      },
      {{{R, C}, F32}}, {1}, {BlockSpec()}, {BlockSpec()});
  auto k = call.trace({{{R, C}, F32}});
  auto xs = randomFloats(R * C, 8);
  auto res = interpret(*k, {HostArray::fromFloats({R, C}, F32, xs)});
  for (int64_t r = 0; r < R; ++r) {
    float mx = -INFINITY;
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, xs[r * C + c]);
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(double(xs[r * C + c]) - mx);
    for (int64_t c = 0; c < C; ++c) {
      double want = std::exp(double(xs[r * C + c]) - mx) / s;
      REQUIRE(std::fabs(res.outputs[0].floatAt(r * C + c) - want) < 1e-6 * 4 + want * 1e-5);
    }
  }
}

TEST_CASE("column sums reduce over sublanes; iota and where build masks") {
  const int64_t R = 27, C = 256;
  auto call = pallas_call(
      [](Ref x, Ref o) {
        Array v = x.load();
        Array keep = iota(R, C, 1) < full(1, 1, 100, S32);
        o.store(sum(where(keep, v, zeros(1, 1)), 0));
      },
      {{{1, C}, F32}}, {1}, {BlockSpec()}, {BlockSpec()});
  auto k = call.trace({{{R, C}, F32}});
  std::vector<float> xs(R * C);
  for (int64_t i = 0; i < R * C; ++i) xs[i] = float(i % 7);  // small integers: exact sums
  auto res = interpret(*k, {HostArray::fromFloats({R, C}, F32, xs)});
  for (int64_t c = 0; c < C; ++c) {
    float want = 0;
    if (c < 100)
      for (int64_t r = 0; r < R; ++r) want += xs[r * C + c];
    REQUIRE(res.outputs[0].floatAt(c) == want);
  }
}

TEST_CASE("scalar prefetch drives the index map; async copies from HBM with semaphores") {
  // out block i = x block perm[i], gathered by the index map.
  CallConfig c;
  c.name = "gather";
  c.num_scalar_prefetch = 1;
  c.out_shapes = {{{32, 128}, F32}};
  c.grid = {4};
  c.in_specs = {BlockSpec({8, 128}, [](const GridIndex& g) {
    return std::vector<Scalar>{g.prefetch[0].get({g[0]}), 0};
  })};
  c.out_specs = {BlockSpec({8, 128}, [](const GridIndex& g) {
    return std::vector<Scalar>{g[0], 0};
  })};
  auto k = pallas_call([](Ref, Ref x, Ref o) { o.store(x.load()); }, c)
               .trace({{{4}, S32}, {{32, 128}, F32}});
  std::vector<float> xs(32 * 128);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(i / 128);
  auto res = interpret(
      *k, {HostArray::fromInts({4}, S32, {3, 1, 0, 2}), HostArray::fromFloats({32, 128}, F32, xs)});
  int perm[4] = {3, 1, 0, 2};
  for (int r = 0; r < 32; ++r)
    REQUIRE(res.outputs[0].floatAt(r * 128) == float(perm[r / 8] * 8 + r % 8));

  // Manual DMA: the input stays in HBM (ANY); the body copies one half into scratch.
  CallConfig d;
  d.name = "manual_copy";
  d.out_shapes = {{{8, 128}, F32}};
  d.grid = {1};
  d.in_specs = {BlockSpec::in(Space::ANY)};
  d.out_specs = {BlockSpec()};
  d.scratch = {VMEM({8, 128}, F32), Semaphores(1)};
  auto k2 =
      pallas_call(
          [](Ref x, Ref o, Ref buf, Ref sem) {
            auto copy = make_async_copy(x.window({ds(8, 8), ds(0, 128)}), buf.window(), sem.at(0));
            copy.start();
            copy.wait();
            o.store(buf.load() + 1.0);
          },
          d)
          .trace({{{16, 128}, F32}});
  std::vector<float> ys(16 * 128);
  for (size_t i = 0; i < ys.size(); ++i) ys[i] = float(i);
  auto r2 = interpret(*k2, {HostArray::fromFloats({16, 128}, F32, ys)});
  for (int i = 0; i < 8 * 128; ++i) REQUIRE(r2.outputs[0].floatAt(i) == ys[8 * 128 + i] + 1.0f);
}

TEST_CASE("a dot rounded into a bf16 ref equals the f32 dot rounded afterwards") {
  const int64_t M = 64, N = 256, K = 384;
  auto xs = bf16Inputs(1, M * K), ys = bf16Inputs(2, K * N);
  std::vector<HostArray> in{HostArray::fromFloats({M, K}, BF16, xs),
                            HostArray::fromFloats({K, N}, BF16, ys)};
  auto f32 = pallas_call([](Ref x, Ref y, Ref o) { o.store(dot(x.load(), y.load())); },
                         {{{M, N}, F32}}, {1}, {BlockSpec(), BlockSpec()}, {BlockSpec()});
  auto rounded =
      pallas_call([](Ref x, Ref y, Ref o) { o.store(dot(x.load(), y.load()).astype(BF16)); },
                  {{{M, N}, BF16}}, {1}, {BlockSpec(), BlockSpec()}, {BlockSpec()});
  std::vector<ShapeDtype> specs{{{M, K}, BF16}, {{K, N}, BF16}};
  auto want = interpret(*f32.trace(specs), in, seeded(1));
  auto got = interpret(*rounded.trace(specs), in, seeded(1));
  for (int64_t i = 0; i < M * N; ++i)
    REQUIRE(bitsOf(got.outputs[0].floatAt(i)) == bitsOf(roundToBf16(want.outputs[0].floatAt(i))));
}

TEST_CASE("a dot's sum epilogue on the pop equals the rounded dot summed afterwards") {
  const int64_t M = 64, N = 256, K = 384;
  std::vector<HostArray> in{HostArray::fromFloats({M, K}, BF16, bf16Inputs(1, M * K)),
                            HostArray::fromFloats({K, N}, BF16, bf16Inputs(2, K * N)),
                            HostArray::fromFloats({M, N}, BF16, bf16Inputs(3, M * N)),
                            HostArray::fromFloats({M, N}, BF16, bf16Inputs(4, M * N))};
  const std::vector<BlockSpec> ins(4);
  // Two passes: the rounded dot stored, then (p + q) + it.
  auto twoPass = pallas_call(
      [](Ref x, Ref y, Ref p, Ref q, Ref o) {
        o.store(dot(x.load(), y.load()).astype(BF16));
        o.store((p.load() + q.load()) + o.load());
      },
      {{{M, N}, BF16}}, {1}, ins, {BlockSpec()});
  auto onPop = pallas_call(
      [](Ref x, Ref y, Ref p, Ref q, Ref o) {
        o.store((p.load() + q.load()) + dot(x.load(), y.load()).astype(BF16));
      },
      {{{M, N}, BF16}}, {1}, ins, {BlockSpec()});
  std::vector<ShapeDtype> specs{{{M, K}, BF16}, {{K, N}, BF16}, {{M, N}, BF16}, {{M, N}, BF16}};
  auto want = interpret(*twoPass.trace(specs), in, seeded(1));
  auto got = interpret(*onPop.trace(specs), in, seeded(1));
  for (int64_t i = 0; i < M * N; ++i)
    REQUIRE(bitsOf(got.outputs[0].floatAt(i)) == bitsOf(want.outputs[0].floatAt(i)));
}
