// Element-wise code that computes a value once per tile: several outputs stored
// in one tile loop (store_together), the same op on the same tiles from two
// nodes emitted once, and sublane sums folding several row tiles per loop body.
#include <catch2/catch.hpp>

#include <string>

#include "kernels/dsl/PallasCall.h"
#include "kernels/llo/Printer.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

CallConfig oneBlock(std::vector<ShapeDtype> outs, int64_t rows, int64_t cols, int inputs) {
  CallConfig c;
  c.name = "k";
  c.out_shapes = std::move(outs);
  c.grid = {1};
  auto map = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  for (int i = 0; i < inputs; ++i) c.in_specs.push_back(BlockSpec({rows, cols}, map));
  for (const ShapeDtype& o : c.out_shapes) c.out_specs.push_back(BlockSpec(o.shape, map));
  return c;
}

}  // namespace

TEST_CASE("store_together computes what two outputs share once per tile, in one loop") {
  // silu-like: the sigmoid feeds both outputs.
  auto body = [](Ref g, Ref d, Ref o0, Ref o1) {
    Array x = g.load();
    Array s = exp(-x) + 1.0;
    store_together({o0, o1}, {s * d.load(), x * s});
  };
  auto k =
      pallas_call(body, oneBlock({{{256, 128}, F32, "o0"}, {{256, 128}, F32, "o1"}}, 256, 128, 2))
          .trace({{{256, 128}, F32, "g"}, {{256, 128}, F32, "d"}});
  std::string text = llo::printKernel(*k);
  INFO(text);
  CHECK(count(text, "for %") == 1);                // one row-tile loop for both outputs
  CHECK(count(text, "vun.exp") == 16);             // one per row tile of the body's 16
  CHECK(text.find("alloc") == std::string::npos);  // nothing kept in VMEM
  testing::checkSimAgainstInterpret(*k, "v6e", 3);

  // Two stores: a loop each, the exp in both.
  auto apart = pallas_call(
                   [](Ref g, Ref d, Ref o0, Ref o1) {
                     Array x = g.load();
                     Array s = exp(-x) + 1.0;
                     o0.store(s * d.load());
                     o1.store(x * s);
                   },
                   oneBlock({{{256, 128}, F32, "o0"}, {{256, 128}, F32, "o1"}}, 256, 128, 2))
                   .trace({{{256, 128}, F32, "g"}, {{256, 128}, F32, "d"}});
  std::string apartText = llo::printKernel(*apart);
  CHECK(count(apartText, "for %") == 2);
  CHECK(count(apartText, "vun.exp") == 32);
}

TEST_CASE("store_together rejects windows of different shapes and a missing array") {
  auto shapes = pallas_call(
      [](Ref x, Ref o0, Ref o1) {
        store_together({o0, o1}, {x.load(), x.load()});
      },
      oneBlock({{{256, 128}, F32, "o0"}, {{128, 128}, F32, "o1"}}, 256, 128, 1));
  CHECK_THROWS_WITH(shapes.trace({{{256, 128}, F32, "x"}}),
                    Catch::Contains("windows of one shape ([256,128] and [128,128])"));
  auto arity = pallas_call(
      [](Ref x, Ref o0, Ref o1) {
        store_together({o0, o1}, {x.load()});
      },
      oneBlock({{{256, 128}, F32, "o0"}, {{256, 128}, F32, "o1"}}, 256, 128, 1));
  CHECK_THROWS_WITH(arity.trace({{{256, 128}, F32, "x"}}),
                    Catch::Contains("one array per ref (2 refs, 1 arrays)"));
}

TEST_CASE("a bf16 operand widened by two users is widened once per tile") {
  // Two astype nodes of one load (as each bf16 HLO op widens its operands),
  // and a bf16 constant widened: one vcast per tile, the constant an f32 splat.
  auto k = pallas_call(
               [](Ref x, Ref o) {
                 Array a = x.load();
                 Array one = full(1, 1, 1.0, BF16).astype(F32);
                 o.store((a.astype(F32) * a.astype(F32) + one).astype(BF16));
               },
               oneBlock({{{8, 128}, BF16, "o"}}, 8, 128, 1))
               .trace({{{8, 128}, BF16, "x"}});
  std::string text = llo::printKernel(*k);
  INFO(text);
  CHECK(count(text, "vcast") == 2);  // the widening of x and the final rounding
  testing::checkSimAgainstInterpret(*k, "v6e", 5);
}

TEST_CASE("a bf16 value between two f32 ops is rounded in the f32 layout") {
  // As a bf16 HLO op's result read by the next op: rounded and widened back is
  // one vrnd.bf16.f32 (vun.round_bf16), not a convert pair; the bf16 tile that
  // is also stored is still converted for its store.
  auto k = pallas_call(
               [](Ref x, Ref o, Ref p) {
                 Array a = x.load();
                 Array r = (a * a).astype(BF16);
                 store_together({o, p}, {r.astype(F32) + a, r});
               },
               oneBlock({{{8, 128}, F32, "o"}, {{8, 128}, BF16, "p"}}, 8, 128, 1))
               .trace({{{8, 128}, F32, "x"}});
  std::string text = llo::printKernel(*k);
  INFO(text);
  CHECK(count(text, "vun.round_bf16") == 1);
  CHECK(count(text, "vcast") == 1);  // the rounding of p's store, no widening
  testing::checkSimAgainstInterpret(*k, "v6e", 7);
}

TEST_CASE("a sublane sum folds several row tiles per loop body, in row order") {
  // 128 row tiles of one column: 32 per body, the accumulator loaded and
  // stored once per body (it was once per tile).
  auto k = pallas_call([](Ref x, Ref o) { o.store(sum(x.load(), 0)); },
                       oneBlock({{{1, 128}, F32, "o"}}, 1024, 128, 1))
               .trace({{{1024, 128}, F32, "x"}});
  std::string text = llo::printKernel(*k);
  INFO(text);
  CHECK(text.find("step 256") != std::string::npos);
  testing::checkSimAgainstInterpret(*k, "v6e", 7);
}

TEST_CASE("a small expression with a transcendental holds 16 row tiles per loop body") {
  // The EUP's one tile per 4 cycles leaves a chain after the body's last exp:
  // spread over 16 tiles, not 8. Without a transcendental, 8.
  auto silu = pallas_call([](Ref x, Ref o) { o.store(x.load() * exp(x.load())); },
                          oneBlock({{{512, 128}, F32, "o"}}, 512, 128, 1))
                  .trace({{{512, 128}, F32, "x"}});
  CHECK(llo::printKernel(*silu).find("step 128") != std::string::npos);
  testing::checkSimAgainstInterpret(*silu, "v6e", 11);
  auto square = pallas_call([](Ref x, Ref o) { o.store(x.load() * x.load() + 1.0); },
                            oneBlock({{{512, 128}, F32, "o"}}, 512, 128, 1))
                    .trace({{{512, 128}, F32, "x"}});
  CHECK(llo::printKernel(*square).find("step 64") != std::string::npos);
}
