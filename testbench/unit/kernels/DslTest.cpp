// The DSL: tracing into kernel IR, and the errors kernel authors get.
#include <catch2/catch.hpp>

#include "kernels/dsl/PallasCall.h"
#include "kernels/llo/Printer.h"

using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

PallasCall addCall(std::vector<int64_t> block, int64_t n = 256, CompilerParams params = {}) {
  return pallas_call([](Ref x, Ref y, Ref o) { o.store(x.load() + y.load()); },
                     {{{n, n}, F32, "o"}}, {n / 128, n / 128},
                     {BlockSpec(block,
                                [](const GridIndex& g) {
                                  return std::vector<Scalar>{g[0], g[1]};
                                }),
                      BlockSpec(block,
                                [](const GridIndex& g) {
                                  return std::vector<Scalar>{g[0], g[1]};
                                })},
                     {BlockSpec(block,
                                [](const GridIndex& g) {
                                  return std::vector<Scalar>{g[0], g[1]};
                                })},
                     {}, params);
}

}  // namespace

TEST_CASE("tracing an element-wise kernel builds tile loops with locations") {
  auto k = addCall({128, 128}).trace({{{256, 256}, F32, "x"}, {{256, 256}, F32, "y"}});
  std::string text = llo::printKernel(*k);
  CHECK(text.find("kernel @kernel grid=[2,2] semantics=[arbitrary,arbitrary]") !=
        std::string::npos);
  CHECK(text.find("in \"x\": f32[256,256] vmem block=[128,128] buffers=2") != std::string::npos);
  CHECK(text.find("for %") != std::string::npos);  // the row-tile loop
  // One column tile per row: 8 row tiles per iteration, so their chains overlap.
  CHECK(text.find("step 64") != std::string::npos);
  CHECK(text.find("vbin.add") != std::string::npos);
  CHECK(text.find("return %") != std::string::npos);  // index maps
  // Every op of the body knows the DSL line that made it.
  for (const auto& op : k->body->body.ops) CHECK(op->loc.file == "DslTest.cpp");
}

TEST_CASE("a prefetch lead past the grid's steps is an error naming the field") {
  // A 2 x 2 grid: 4 steps.
  for (int64_t tail : {int64_t{-1}, int64_t{4}}) {
    CompilerParams p;
    p.tail_steps_without_inputs = tail;
    CHECK_THROWS_WITH(
        addCall({128, 128}, 256, p).trace({{{256, 256}, F32, "x"}, {{256, 256}, F32, "y"}}),
        Catch::Contains("tail_steps_without_inputs = " + std::to_string(tail) +
                        " must be in [0, 4)"));
  }
  CompilerParams ok;
  ok.tail_steps_without_inputs = 3;
  auto lead = addCall({128, 128}, 256, ok).trace({{{256, 256}, F32, "x"}, {{256, 256}, F32, "y"}});
  CHECK(lead->tailStepsWithoutInputs == 3);
  // The printed kernel is the kernel cache's key: the lead changes the code.
  auto plain = addCall({128, 128}, 256).trace({{{256, 256}, F32, "x"}, {{256, 256}, F32, "y"}});
  CHECK_THAT(llo::printKernel(*lead), Catch::Contains("tail_steps_without_inputs=3"));
  CHECK(llo::printKernel(*plain).find("tail_steps_without_inputs") == std::string::npos);
}

TEST_CASE("block shapes must follow the (8,128) rule, naming the spec and shape") {
  auto call = addCall({100, 128});
  CHECK_THROWS_WITH(call.trace({{{256, 256}, F32, "x"}, {{256, 256}, F32, "y"}}),
                    Catch::Contains("in_specs[0] ('x'): block shape [100,128] for array "
                                    "f32[256,256]: dimension 0 is 100, which is neither "
                                    "divisible by 8 nor equal to the array's 256"));
  // Equal to the array's dims is allowed even when not a multiple.
  auto whole = pallas_call([](Ref x, Ref o) { o.store(x.load()); }, {{{10, 200}, F32}}, {1},
                           {BlockSpec({10, 200}, nullptr)}, {BlockSpec({10, 200}, nullptr)});
  CHECK_NOTHROW(whole.trace({{{10, 200}, F32}}));
}

TEST_CASE("a kernel that does not fit VMEM lists its buffers") {
  CallConfig c;
  c.name = "big";
  c.out_shapes = {{{4096, 4096}, F32, "o"}};
  c.grid = {1};
  c.in_specs = {BlockSpec({2048, 2048}, [](const GridIndex&) {
    return std::vector<Scalar>{0, 0};
  })};
  c.out_specs = {BlockSpec({2048, 2048}, [](const GridIndex&) {
    return std::vector<Scalar>{0, 0};
  })};
  c.scratch = {VMEM({8, 128}, F32)};
  auto call = pallas_call([](Ref x, Ref o, Ref) { o.store(x.load()); }, c);
  try {
    call.trace({{{4096, 4096}, F32, "x"}});
    FAIL("expected a VMEM error");
  } catch (const Error& e) {
    std::string m = e.what();
    INFO(m);
    CHECK(m.find("pallas_call 'big' needs 67112960 bytes of VMEM but the limit is 16777216") !=
          std::string::npos);
    CHECK(m.find("33554432 bytes  'x' block f32[2048,2048] x 2 buffers") != std::string::npos);
    CHECK(m.find("4096 bytes  scratch0 ref<vmem f32[8,128]>") != std::string::npos);
  }
}

TEST_CASE("an input may be a strided view of a reordered dense buffer") {
  auto copy = pallas_call([](Ref x, Ref o) { o.store(x.load()); }, {{{16, 128}, F32}}, {1},
                          {BlockSpec()}, {BlockSpec()});
  auto view = [](std::vector<int64_t> strides) {
    ShapeDtype a({16, 128}, F32, "x");
    a.strides = std::move(strides);
    return a;
  };
  // [16, 128] read from a [16, 128] buffer: dense strides, given explicitly.
  auto k = copy.trace({view({128, 1})});
  CHECK(k->inputs[0].strides == std::vector<int64_t>{128, 1});
  CHECK_THROWS_WITH(copy.trace({view({1, 16})}),
                    Catch::Contains("input 'x' f32[16,128] has strides [1,16]") &&
                        Catch::Contains("the last dimension's stride must be 1"));
  CHECK_THROWS_WITH(copy.trace({view({256, 1})}),
                    Catch::Contains("not a reordering of a dense row-major layout"));
  CHECK_THROWS_WITH(copy.trace({view({1})}), Catch::Contains("one stride per dimension"));
}

TEST_CASE("DSL misuse is reported with the kernel's source line") {
  auto mixed = pallas_call([](Ref x, Ref o) { o.store(x.load().astype(BF16) + x.load()); },
                           {{{8, 128}, F32}}, {1}, {BlockSpec()}, {BlockSpec()});
  CHECK_THROWS_WITH(mixed.trace({{{8, 128}, F32}}), Catch::Contains("dtypes differ"));
  auto f32dot = pallas_call([](Ref x, Ref o) { o.store(dot(x.load(), x.load())); },
                            {{{128, 128}, F32}}, {1}, {BlockSpec()}, {BlockSpec()});
  CHECK_THROWS_WITH(f32dot.trace({{{128, 128}, F32}}),
                    Catch::Contains("DslTest.cpp:") && Catch::Contains("bf16 x bf16 or s8 x s8"));
  CHECK_THROWS_WITH(Scalar(3), Catch::Contains("only valid while a kernel is being traced"));
  auto arity =
      pallas_call([](Ref x) { (void)x; }, {{{8, 128}, F32}}, {1}, {BlockSpec()}, {BlockSpec()});
  CHECK_THROWS_WITH(arity.trace({{{8, 128}, F32}}),
                    Catch::Contains("takes 1 refs but the call provides 2"));
}

TEST_CASE("acc += dot(x, y) becomes one accumulating matmul into the ref") {
  auto call = pallas_call([](Ref x, Ref y, Ref o) { o.store(o.load() + dot(x.load(), y.load())); },
                          {{{128, 256}, F32}}, {1}, {BlockSpec(), BlockSpec()}, {BlockSpec()});
  auto k = call.trace({{{128, 64}, BF16}, {{64, 256}, BF16}});
  std::string text = llo::printKernel(*k);
  CHECK(text.find("M=128 N=256 K=64 accumulate") != std::string::npos);
  CHECK(text.find("alloc") == std::string::npos);  // no temporary
}

TEST_CASE("o = dot(x, y) becomes one matmul writing the ref, unless o is an operand") {
  auto call = pallas_call([](Ref x, Ref y, Ref o) { o.store(dot(x.load(), y.load())); },
                          {{{128, 256}, F32}}, {1}, {BlockSpec(), BlockSpec()}, {BlockSpec()});
  auto k = call.trace({{{128, 64}, BF16}, {{64, 256}, BF16}});
  std::string text = llo::printKernel(*k);
  CHECK(text.find("M=128 N=256 K=64\n") != std::string::npos);  // not accumulating
  CHECK(text.find("accumulate") == std::string::npos);
  CHECK(text.find("alloc") == std::string::npos);  // no temporary
  // The ref read by the dot is written through a temporary: result tiles
  // stored in place would overwrite rows still to be read.
  auto aliased = pallas_call(
      [](Ref x, Ref y, Ref o) {
        o.store(x.load().astype(F32));
        o.store(dot(o.load().astype(BF16), y.load()));
      },
      {{{128, 128}, F32}}, {1}, {BlockSpec(), BlockSpec()}, {BlockSpec()});
  std::string text2 = llo::printKernel(*aliased.trace({{{128, 128}, BF16}, {{128, 128}, BF16}}));
  CHECK(text2.find("alloc") != std::string::npos);
}

TEST_CASE("o = dot(x, y).astype(bf16) becomes one matmul rounding into the bf16 ref") {
  // The results are rounded as they are popped: no f32 temporary and no
  // second pass over it (a third of a v6e FFN projection's time).
  auto call =
      pallas_call([](Ref x, Ref y, Ref o) { o.store(dot(x.load(), y.load()).astype(BF16)); },
                  {{{128, 256}, BF16}}, {1}, {BlockSpec(), BlockSpec()}, {BlockSpec()});
  std::string text = llo::printKernel(*call.trace({{{128, 64}, BF16}, {{64, 256}, BF16}}));
  INFO(text);
  CHECK(text.find("M=128 N=256 K=64\n") != std::string::npos);
  CHECK(text.find("alloc") == std::string::npos);
  CHECK(text.find("for %") == std::string::npos);
  // Accumulating into a bf16 ref is not a rounded matmul: it goes through f32.
  auto acc = pallas_call(
      [](Ref x, Ref y, Ref o) {
        o.store((o.load().astype(F32) + dot(x.load(), y.load())).astype(BF16));
      },
      {{{128, 256}, BF16}}, {1}, {BlockSpec(), BlockSpec()}, {BlockSpec()});
  std::string text2 = llo::printKernel(*acc.trace({{{128, 64}, BF16}, {{64, 256}, BF16}}));
  CHECK(text2.find("alloc") != std::string::npos);
}

TEST_CASE("o = dot(x, y).astype(bf16) + r becomes one matmul adding r as it pops") {
  // The sum epilogue: r (or a left fold of windows, p + q) is added to each
  // rounded tile as it is popped, with no f32 temporary and no second pass.
  auto call = pallas_call(
      [](Ref x, Ref y, Ref r, Ref o) { o.store(dot(x.load(), y.load()).astype(BF16) + r.load()); },
      {{{128, 256}, BF16}}, {1}, {BlockSpec(), BlockSpec(), BlockSpec()}, {BlockSpec()});
  std::vector<ShapeDtype> in{{{128, 64}, BF16}, {{64, 256}, BF16}, {{128, 256}, BF16}};
  std::string text = llo::printKernel(*call.trace(in));
  INFO(text);
  CHECK(text.find("M=128 N=256 K=64 then dot + (") != std::string::npos);
  CHECK(text.find("alloc") == std::string::npos);
  CHECK(text.find("for %") == std::string::npos);
  auto two = pallas_call(
      [](Ref x, Ref y, Ref p, Ref q, Ref o) {
        o.store((p.load() + q.load()) + dot(x.load(), y.load()).astype(BF16));
      },
      {{{128, 256}, BF16}}, {1}, {BlockSpec(), BlockSpec(), BlockSpec(), BlockSpec()},
      {BlockSpec()});
  in.push_back({{128, 256}, BF16});
  std::string text2 = llo::printKernel(*two.trace(in));
  INFO(text2);
  CHECK(text2.find(") + dot") != std::string::npos);
  CHECK(text2.find("alloc") == std::string::npos);
  // p + (q + dot) rounds in another order: not a sum epilogue.
  auto other = pallas_call(
      [](Ref x, Ref y, Ref p, Ref q, Ref o) {
        o.store(p.load() + (q.load() + dot(x.load(), y.load()).astype(BF16)));
      },
      {{{128, 256}, BF16}}, {1}, {BlockSpec(), BlockSpec(), BlockSpec(), BlockSpec()},
      {BlockSpec()});
  std::string text3 = llo::printKernel(*other.trace(in));
  CHECK(text3.find("then") == std::string::npos);
}

TEST_CASE("a dot read by an element-wise expression runs once before its row-tile loop") {
  // `dot(...).astype(...)` and a row sum of a dot: the dot was emitted from the
  // first tile the loop computed, so it sat in the loop body and ran again for
  // every row tile (5x slower in the attention backward kernel).
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  auto cast = pallas_call(
      [](Ref x, Ref y, Ref o) { o.store((dot(x.load(), y.load()) * 2.0f).astype(BF16)); },
      {{{256, 256}, BF16}}, {1}, {BlockSpec(), BlockSpec()}, {BlockSpec()});
  std::string text = llo::printKernel(*cast.trace({{{256, 64}, BF16}, {{64, 256}, BF16}}));
  INFO(text);
  CHECK(count(text, "M=256 N=256 K=64") == 1);
  REQUIRE(text.find("for %") != std::string::npos);
  CHECK(text.find("M=256 N=256 K=64") < text.find("for %"));

  auto rowSum =
      pallas_call([](Ref x, Ref y, Ref o) { o.store(sum(dot(x.load(), y.load()) * 2.0f, 1)); },
                  {{{256, 1}, F32}}, {1}, {BlockSpec(), BlockSpec()}, {BlockSpec()});
  std::string text2 = llo::printKernel(*rowSum.trace({{{256, 64}, BF16}, {{64, 256}, BF16}}));
  INFO(text2);
  CHECK(count(text2, "M=256 N=256 K=64") == 1);
  REQUIRE(text2.find("for %") != std::string::npos);
  CHECK(text2.find("M=256 N=256 K=64") < text2.find("for %"));
}
