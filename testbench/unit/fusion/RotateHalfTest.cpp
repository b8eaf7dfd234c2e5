// algsimp's rotate-half rewrite of the rotary embedding and the hoisting of a
// repeated unary op out of a concatenate (compiler/passes/RotateHalf.cpp).
#include <catch2/catch.hpp>

#include "compiler/passes/PassRegistry.h"
#include "testbench/unit/fusion/FusionTestUtil.h"

using namespace tpusim;
using namespace fusiontest;

namespace {

void simplify(hlo::HloModule& m) {
  passes::createAlgebraicSimplifierPass()->run(m);
  passes::createCsePass()->run(m);
  passes::createDcePass()->run(m);
}

// Every output bit for bit against the module as written, on random inputs.
void checkSameValues(const hlo::HloModule& original, const hlo::HloModule& rewritten) {
  for (uint64_t seed : {1, 7}) {
    auto args = randomArgs(original, seed);
    CHECK(hlo::eval::evaluate(rewritten, args[0]) == hlo::eval::evaluate(original, args[0]));
  }
}

}  // namespace

TEST_CASE("algsimp writes the half-split rotary embedding as rotate-half", "[fusion][algsimp]") {
  auto m = parse(R"(
HloModule rope
ENTRY main {
  x = f32[16,4,128]{2,1,0} parameter(0)
  cos = f32[16,64]{1,0} parameter(1)
  sin = f32[16,64]{1,0} parameter(2)
  lo = f32[16,4,64]{2,1,0} slice(x), slice={[0:16], [0:4], [0:64]}
  hi = f32[16,4,64]{2,1,0} slice(x), slice={[0:16], [0:4], [64:128]}
  c = f32[16,4,64]{2,1,0} broadcast(cos), dimensions={0,2}
  s = f32[16,4,64]{2,1,0} broadcast(sin), dimensions={0,2}
  a = f32[16,4,64]{2,1,0} multiply(lo, c)
  b = f32[16,4,64]{2,1,0} multiply(s, hi)
  first = f32[16,4,64]{2,1,0} subtract(a, b)
  d = f32[16,4,64]{2,1,0} multiply(lo, s)
  e = f32[16,4,64]{2,1,0} multiply(hi, c)
  second = f32[16,4,64]{2,1,0} add(d, e)
  ROOT cat = f32[16,4,128]{2,1,0} concatenate(first, second), dimensions={2}
})");
  auto original = m->clone();
  simplify(*m);
  const hlo::HloInstruction* root = m->entry()->root();
  REQUIRE(root->opcode() == hlo::HloOpcode::Add);
  // x * broadcast(concat(cos, cos)) + broadcast([-sin, sin]) * concat(hi, lo)
  const hlo::HloInstruction* xc = root->operand(0);
  const hlo::HloInstruction* rs = root->operand(1);
  REQUIRE(xc->opcode() == hlo::HloOpcode::Multiply);
  REQUIRE(rs->opcode() == hlo::HloOpcode::Multiply);
  CHECK(xc->operand(0)->opcode() == hlo::HloOpcode::Broadcast);
  CHECK(xc->operand(0)->operand(0)->shape().dims == std::vector<int64_t>{16, 128});
  CHECK(xc->operand(1)->name() == "x");
  const hlo::HloInstruction* rot = rs->operand(1);
  REQUIRE(rot->opcode() == hlo::HloOpcode::Concatenate);
  CHECK(rot->operand(0)->name() == "hi");
  CHECK(rot->operand(1)->name() == "lo");
  CHECK(countOpcode(*m->entry(), hlo::HloOpcode::Subtract) == 0);
  CHECK(countOpcode(*m->entry(), hlo::HloOpcode::Negate) == 1);
  checkSameValues(*original, *m);
}

TEST_CASE("algsimp leaves a concatenate that is not a rotation", "[fusion][algsimp]") {
  // hi * cos - lo * sin first: the halves the other way round.
  auto m = parse(R"(
HloModule not_rope
ENTRY main {
  x = f32[8,128]{1,0} parameter(0)
  c = f32[8,64]{1,0} parameter(1)
  s = f32[8,64]{1,0} parameter(2)
  lo = f32[8,64]{1,0} slice(x), slice={[0:8], [0:64]}
  hi = f32[8,64]{1,0} slice(x), slice={[0:8], [64:128]}
  a = f32[8,64]{1,0} multiply(hi, c)
  b = f32[8,64]{1,0} multiply(lo, s)
  first = f32[8,64]{1,0} subtract(a, b)
  d = f32[8,64]{1,0} multiply(lo, c)
  e = f32[8,64]{1,0} multiply(hi, s)
  second = f32[8,64]{1,0} add(d, e)
  ROOT cat = f32[8,128]{1,0} concatenate(first, second), dimensions={1}
})");
  simplify(*m);
  CHECK(m->entry()->root()->name() == "cat");
  CHECK(countOpcode(*m->entry(), hlo::HloOpcode::Subtract) == 1);
}

TEST_CASE("algsimp computes a repeated unary op once per element of the concatenate",
          "[fusion][algsimp]") {
  auto m = parse(R"(
HloModule repeated
ENTRY main {
  x = f32[8,64]{1,0} parameter(0)
  y = f32[8,64]{1,0} parameter(1)
  e = f32[8,64]{1,0} sine(x)
  f = f32[8,64]{1,0} sine(y)
  twice = f32[8,128]{1,0} concatenate(e, e), dimensions={1}
  pair = f32[8,128]{1,0} concatenate(e, f), dimensions={1}
  ROOT t = (f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(twice, pair)
})");
  auto original = m->clone();
  simplify(*m);
  const hlo::HloInstruction* twice = m->entry()->root()->operand(0);
  REQUIRE(twice->opcode() == hlo::HloOpcode::Sine);
  CHECK(twice->operand(0)->opcode() == hlo::HloOpcode::Concatenate);
  CHECK(twice->operand(0)->operand(0)->name() == "x");
  // Two different values: left as written.
  CHECK(m->entry()->root()->operand(1)->opcode() == hlo::HloOpcode::Concatenate);
  checkSameValues(*original, *m);
}
