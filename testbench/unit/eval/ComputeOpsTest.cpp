// Hand-computed results of dot, reduce, reduce-window, sort, map and the
// control-flow opcodes through the interpreter.
#include "EvalTestUtil.h"

#include "compiler/hlo/eval/CustomCalls.h"
#include "compiler/hlo/eval/Elementwise.h"

using namespace evaltest;
using V = std::vector<double>;

TEST_CASE("dot general with batch and contracting dims", "[eval][dot]") {
  Literal a = lit(ElemType::F32, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Literal b = lit(ElemType::F32, {2, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2});
  CHECK(values(run(R"(ENTRY e { a = f32[2,2,2] parameter(0) b = f32[2,2,2] parameter(1)
      ROOT d = f32[2,2,2] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2},
        rhs_batch_dims={0}, rhs_contracting_dims={1} })",
                   {a, b})) == V{1, 2, 3, 4, 10, 12, 14, 16});
  // Contracting the lhs's first dim: out = a^T b per batch.
  CHECK(values(run(R"(ENTRY e { a = f32[2,2,2] parameter(0) b = f32[2,2,2] parameter(1)
      ROOT d = f32[2,2,2] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1},
        rhs_batch_dims={0}, rhs_contracting_dims={1} })",
                   {a, b})) == V{1, 3, 2, 4, 10, 14, 12, 16});
  // bf16 inputs accumulate in f32 and round once: 256 + 1 + 1 = 258 (bf16 258).
  Literal x = lit(ElemType::BF16, {1, 3}, {256, 1, 1});
  Literal y = lit(ElemType::BF16, {3, 1}, {1, 1, 1});
  CHECK(values(run(R"(ENTRY e { x = bf16[1,3] parameter(0) y = bf16[3,1] parameter(1)
      ROOT d = bf16[1,1] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0} })",
                   {x, y})) == V{258});
  // Integer dot wraps in s8.
  Literal i = lit(ElemType::S8, {1, 2}, {100, 100});
  Literal j = lit(ElemType::S8, {2, 1}, {1, 1});
  CHECK(values(run(R"(ENTRY e { x = s8[1,2] parameter(0) y = s8[2,1] parameter(1)
      ROOT d = s8[1,1] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0} })",
                   {i, j})) == V{-56});
}

TEST_CASE("reduce: fast path, bf16 rounding per step, variadic argmax", "[eval][reduce]") {
  Literal x = lit(ElemType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const char* sum = R"(
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }
ENTRY e { p = f32[2,3] parameter(0) z = f32[] constant(0)
  ROOT r = f32[%s] reduce(p, z), dimensions={%s}, to_apply=add })";
  char buf[512];
  std::snprintf(buf, sizeof buf, sum, "2", "1");
  CHECK(values(run(buf, {x})) == V{6, 15});
  std::snprintf(buf, sizeof buf, sum, "3", "0");
  CHECK(values(run(buf, {x})) == V{5, 7, 9});
  std::snprintf(buf, sizeof buf, sum, "", "0,1");
  CHECK(values(run(buf, {x})) == V{21});
  // bf16: 256 + 1 + 1 rounds after each add: (256+1)->256, (256+1)->256.
  Literal b = lit(ElemType::BF16, {3}, {256, 1, 1});
  CHECK(values(run(R"(
add { a = bf16[] parameter(0) b = bf16[] parameter(1) ROOT s = bf16[] add(a, b) }
ENTRY e { p = bf16[3] parameter(0) z = bf16[] constant(0)
  ROOT r = bf16[] reduce(p, z), dimensions={0}, to_apply=add })",
                   {b})) == V{256});
  // A non-trivial reducer goes through the generic path: sum of squares.
  CHECK(values(run(R"(
sq { a = f32[] parameter(0) b = f32[] parameter(1) m = f32[] multiply(b, b) ROOT s = f32[] add(a, m) }
ENTRY e { p = f32[2,3] parameter(0) z = f32[] constant(0)
  ROOT r = f32[2] reduce(p, z), dimensions={1}, to_apply=sq })",
                   {x})) == V{14, 77});
  // Variadic argmax.
  Literal v = lit(ElemType::F32, {4}, {3, 9, 9, 1});
  Literal r = run(R"(
argmax {
  av = f32[] parameter(0) ai = s32[] parameter(1) bv = f32[] parameter(2) bi = s32[] parameter(3)
  gt = pred[] compare(bv, av), direction=GT
  v = f32[] select(gt, bv, av)
  i = s32[] select(gt, bi, ai)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e { p = f32[4] parameter(0) i = s32[4] iota(), iota_dimension=0
  lo = f32[] constant(-inf) z = s32[] constant(0)
  ROOT r = (f32[], s32[]) reduce(p, i, lo, z), dimensions={0}, to_apply=argmax })",
                  {v});
  REQUIRE(r.isTuple());
  CHECK(values(r.elements()[0]) == V{9});
  CHECK(values(r.elements()[1]) == V{1});
}

TEST_CASE("reduce-window with stride, padding and dilation", "[eval][reduce]") {
  Literal x = lit(ElemType::F32, {4}, {1, 2, 3, 4});
  const char* text = R"(
mx { a = f32[] parameter(0) b = f32[] parameter(1) ROOT m = f32[] maximum(a, b) }
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }
ENTRY e { p = f32[4] parameter(0) z = f32[] constant(%s)
  ROOT r = f32[%d] reduce-window(p, z), window={%s}, to_apply=%s })";
  auto rw = [&](const char* init, int n, const char* win, const char* f) {
    char buf[512];
    std::snprintf(buf, sizeof buf, text, init, n, win, f);
    return values(run(buf, {x}));
  };
  CHECK(rw("0", 3, "size=2", "add") == V{3, 5, 7});
  CHECK(rw("0", 2, "size=2 stride=2", "add") == V{3, 7});
  CHECK(rw("-inf", 3, "size=2 stride=2 pad=1_1", "mx") == V{1, 3, 4});
  CHECK(rw("0", 2, "size=2 rhs_dilate=2", "add") == V{4, 6});
  CHECK(rw("0", 7, "size=1 lhs_dilate=2", "add") == V{1, 0, 2, 0, 3, 0, 4});
}

TEST_CASE("sort: stable, several operands, custom comparator", "[eval][sort]") {
  Literal k = lit(ElemType::F32, {5}, {3, 1, 2, 1, 0});
  Literal v = lit(ElemType::S32, {5}, {0, 1, 2, 3, 4});
  Literal r = run(R"(
lt { a = f32[] parameter(0) b = f32[] parameter(1) c = s32[] parameter(2) d = s32[] parameter(3)
  ROOT l = pred[] compare(a, b), direction=LT }
ENTRY e { k = f32[5] parameter(0) v = s32[5] parameter(1)
  ROOT s = (f32[5], s32[5]) sort(k, v), dimensions={0}, is_stable=true, to_apply=lt })",
                  {k, v});
  CHECK(values(r.elements()[0]) == V{0, 1, 1, 2, 3});
  CHECK(values(r.elements()[1]) == V{4, 1, 3, 2, 0});
  // Descending by absolute value through the generic comparator path, per row.
  Literal m = lit(ElemType::F32, {2, 3}, {1, -3, 2, -1, 0, 5});
  CHECK(values(run(R"(
gt { a = f32[] parameter(0) b = f32[] parameter(1) x = f32[] abs(a) y = f32[] abs(b)
  ROOT g = pred[] compare(x, y), direction=GT }
ENTRY e { m = f32[2,3] parameter(0) ROOT s = f32[2,3] sort(m), dimensions={1}, to_apply=gt })",
                   {m})) == V{-3, 2, 1, 5, -1, 0});
}

TEST_CASE("while, conditional, call, fusion, map, tuples", "[eval][control]") {
  // Sum 0..9 with a while loop over (i, acc).
  Literal r = run(R"(
cond { s = (s32[], s32[]) parameter(0) i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10) ROOT c = pred[] compare(i, n), direction=LT }
body { s = (s32[], s32[]) parameter(0) i = s32[] get-tuple-element(s), index=0
  a = s32[] get-tuple-element(s), index=1 one = s32[] constant(1)
  j = s32[] add(i, one) b = s32[] add(a, i) ROOT t = (s32[], s32[]) tuple(j, b) }
ENTRY e { z = s32[] constant(0) t = (s32[], s32[]) tuple(z, z)
  w = (s32[], s32[]) while(t), condition=cond, body=body
  ROOT a = s32[] get-tuple-element(w), index=1 })",
                  {});
  CHECK(values(r) == V{45});
  const char* cond = R"(
neg { x = f32[] parameter(0) ROOT n = f32[] negate(x) }
dbl { x = f32[] parameter(0) ROOT d = f32[] add(x, x) }
sqr { x = f32[] parameter(0) ROOT d = f32[] multiply(x, x) }
ENTRY e { i = s32[] parameter(0) x = f32[] constant(3)
  ROOT c = f32[] conditional(i, x, x, x), branch_computations={neg, dbl, sqr} })";
  CHECK(values(run(cond, {Literal::scalar(ElemType::S32, 1)})) == V{6});
  CHECK(values(run(cond, {Literal::scalar(ElemType::S32, 7)})) == V{9});  // out of range: last
  CHECK(values(run(R"(
t { x = f32[] parameter(0) ROOT n = f32[] negate(x) }
f { x = f32[] parameter(0) ROOT n = f32[] abs(x) }
ENTRY e { p = pred[] parameter(0) x = f32[] constant(-2)
  ROOT c = f32[] conditional(p, x, x), true_computation=t, false_computation=f })",
                   {Literal::scalar(ElemType::Pred, 1)})) == V{2});
  Literal x = lit(ElemType::F32, {3}, {1, 2, 3});
  CHECK(values(run(R"(
fused { a = f32[3] parameter(0) b = f32[3] parameter(1) ROOT m = f32[3] multiply(a, b) }
callee { a = f32[3] parameter(0) ROOT f = f32[3] fusion(a, a), kind=kLoop, calls=fused }
ENTRY e { p = f32[3] parameter(0) ROOT c = f32[3] call(p), to_apply=callee })",
                   {x})) == V{1, 4, 9});
  CHECK(values(run(R"(
sq { a = f32[] parameter(0) ROOT m = f32[] multiply(a, a) }
ENTRY e { p = f32[3] parameter(0) ROOT m = f32[3] map(p), dimensions={0}, to_apply=sq })",
                   {x})) == V{1, 4, 9});
}

TEST_CASE("unsupported ops and custom-calls are clear errors", "[eval][errors]") {
  const char* cc = R"(ENTRY e { p = f32[2] parameter(0)
      ROOT c = f32[2] custom-call(p), custom_call_target="test.twice" })";
  Literal x = lit(ElemType::F32, {2}, {1, 2});
  CHECK_THROWS_WITH(run(cc, {x}), Catch::Contains("%c (custom-call)") &&
                                      Catch::Contains("unknown custom-call target \"test.twice\""));
  tpusim::hlo::eval::registerCustomCall(
      "test.twice", [](const tpusim::hlo::HloInstruction&, const std::vector<const Literal*>& ops) {
        return tpusim::hlo::eval::binary(tpusim::hlo::eval::BinaryOp::Add, *ops[0], *ops[0]);
      });
  CHECK(values(run(cc, {x})) == V{2, 4});
  // rng (stateful, back-end defined) stays unsupported; rng-bit-generator is Philox
  // (RngBitGeneratorTest.cpp).
  auto m = parse(R"(ENTRY e { a = f32[] parameter(0) b = f32[] parameter(1)
      ROOT r = f32[4] rng(a, b), distribution=rng_uniform })");
  CHECK(tpusim::hlo::eval::unsupportedInstructions(*m) == std::vector<std::string>{"%r (rng)"});
  CHECK_THROWS_WITH(
      tpusim::hlo::eval::evaluate(*m, {lit(ElemType::F32, {}, {0}), lit(ElemType::F32, {}, {1})}),
      Catch::Contains("%r (rng) at test.hlo:2") && Catch::Contains("not supported"));
  // Wrong argument shape.
  CHECK_THROWS_WITH(run(cc, {lit(ElemType::F32, {3}, {1, 2, 3})}),
                    Catch::Contains("argument 0 is f32[3]"));
}
