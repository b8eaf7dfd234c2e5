// The TPU tiling rules and the layout-assignment pass.
#include "compiler/hlo/HloPrinter.h"
#include "compiler/passes/TpuLayout.h"
#include "testbench/unit/fusion/FusionTestUtil.h"

using namespace tpusim;
using namespace fusiontest;

namespace {

std::string tiled(const std::string& shapeText) {
  hlo::Shape s;
  std::string err;
  REQUIRE(hlo::parseShape(shapeText, &s, &err));
  return passes::withDefaultTpuLayout(s).toString();
}

}  // namespace

TEST_CASE("TPU tiles by element type and shape", "[fusion][layout]") {
  CHECK(tiled("f32[64,256]") == "f32[64,256]{1,0:T(8,128)}");
  CHECK(tiled("s32[3,64,256]") == "s32[3,64,256]{2,1,0:T(8,128)}");
  CHECK(tiled("bf16[64,256]") == "bf16[64,256]{1,0:T(8,128)(2,1)}");
  CHECK(tiled("s8[64,256]") == "s8[64,256]{1,0:T(8,128)(4,1)}");
  CHECK(tiled("pred[64,256]") == "pred[64,256]{1,0:T(8,128)(4,1)}");
  // Small second-minor dims shrink the tile's rows, not below the packing.
  CHECK(tiled("f32[1,1024]") == "f32[1,1024]{1,0:T(1,128)}");
  CHECK(tiled("f32[2,1024]") == "f32[2,1024]{1,0:T(2,128)}");
  CHECK(tiled("f32[3,1024]") == "f32[3,1024]{1,0:T(4,128)}");
  CHECK(tiled("bf16[1,1024]") == "bf16[1,1024]{1,0:T(2,128)(2,1)}");
  CHECK(tiled("s8[2,1024]") == "s8[2,1024]{1,0:T(4,128)(4,1)}");
  // Rank 1 and scalars, as XLA TPU dumps show them.
  CHECK(tiled("f32[10]") == "f32[10]{0:T(256)}");
  CHECK(tiled("f32[300]") == "f32[300]{0:T(512)}");
  CHECK(tiled("f32[100000]") == "f32[100000]{0:T(1024)}");
  CHECK(tiled("bf16[1000]") == "bf16[1000]{0:T(1024)(128)(2,1)}");
  CHECK(tiled("s32[]") == "s32[]{:T(128)}");
  CHECK(tiled("bf16[]") == "bf16[]{:T(256)}");
  CHECK(tiled("pred[]") == "pred[]{:T(512)}");
  // Not native: 64-bit types keep a plain layout.
  CHECK(tiled("f64[8,128]") == "f64[8,128]{1,0}");
  CHECK(tiled("(f32[8], bf16[2,256])") == "(f32[8]{0:T(256)}, bf16[2,256]{1,0:T(2,128)(2,1)})");
}

TEST_CASE("layout-assignment makes a dot's LHS contracting dim minor with a copy",
          "[fusion][layout]") {
  auto m = parse(R"(
HloModule dot_layout, entry_computation_layout={(f32[256,64]{1,0}, f32[256,128]{1,0})->f32[64,128]{1,0}}
ENTRY main {
  a = f32[256,64]{1,0} parameter(0)
  b = f32[256,128]{1,0} parameter(1)
  ROOT d = f32[64,128]{1,0} dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})");
  auto original = m->clone();
  layout(*m);
  hlo::HloInstruction* d = m->entry()->root();
  REQUIRE(d->opcode() == hlo::HloOpcode::Dot);
  hlo::HloInstruction* lhs = d->operand(0);
  CHECK(lhs->opcode() == hlo::HloOpcode::Copy);
  CHECK(lhs->shape().toString() == "f32[256,64]{0,1:T(8,128)}");
  CHECK(d->operand(1)->opcode() == hlo::HloOpcode::Parameter);  // the RHS may stay K-major
  CHECK(d->shape().toString() == "f32[64,128]{1,0:T(8,128)}");
  CHECK(*m->headerAttribute("entry_computation_layout") ==
        "{(f32[256,64]{1,0:T(8,128)}, f32[256,128]{1,0:T(8,128)})->f32[64,128]{1,0:T(8,128)}}");
  auto args = randomArgs(*original, 3);
  CHECK(hlo::eval::evaluate(*m, args[0]) == hlo::eval::evaluate(*original, args[0]));
  // A second run keeps the copy's layout and adds nothing.
  CHECK_FALSE(passes::createLayoutAssignmentPass()->run(*m));
  CHECK(countOpcode(*m->entry(), hlo::HloOpcode::Copy) == 1);
}

TEST_CASE("layout-assignment keeps entry layouts and bitcast meaning", "[fusion][layout]") {
  // The parameter is column-major and the bitcast reads its bytes as a transpose.
  auto m = parse(R"(
HloModule bitcast_layout
ENTRY main {
  p = f32[4,8]{0,1} parameter(0)
  n = f32[4,8]{1,0} negate(p)
  t = f32[8,4]{1,0} bitcast(p)
  ROOT r = (f32[4,8]{1,0}, f32[8,4]{1,0}) tuple(n, t)
})");
  auto original = m->clone();
  layout(*m);
  hlo::HloInstruction* p = m->entry()->parameter(0);
  CHECK(p->shape().toString() == "f32[4,8]{0,1:T(8,128)}");
  // negate reads a default-order copy; the bitcast reads the parameter itself.
  hlo::HloInstruction* n = m->entry()->findInstruction("n");
  CHECK(n->operand(0)->opcode() == hlo::HloOpcode::Copy);
  CHECK(n->operand(0)->shape().toString() == "f32[4,8]{1,0:T(4,128)}");
  CHECK(m->entry()->findInstruction("t")->operand(0) == p);
  auto args = randomArgs(*original, 5);
  CHECK(hlo::eval::evaluate(*m, args[0]) == hlo::eval::evaluate(*original, args[0]));
}

TEST_CASE("layout-assignment on a reduce tiles every value and changes nothing else",
          "[fusion][layout]") {
  auto m = parse(R"(
HloModule reduce_layout
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = bf16[16,384]{1,0} parameter(0)
  c = f32[16,384]{1,0} convert(x)
  z = f32[] constant(0)
  ROOT r = f32[16]{0} reduce(c, z), dimensions={1}, to_apply=add
})");
  auto original = m->clone();
  layout(*m);
  std::string text = hlo::printModule(*m);
  CHECK(text.find("%x = bf16[16,384]{1,0:T(8,128)(2,1)} parameter(0)") != std::string::npos);
  CHECK(text.find("ROOT %r = f32[16]{0:T(256)} reduce(") != std::string::npos);
  CHECK(text.find("%z = f32[]{:T(128)} constant(0)") != std::string::npos);
  CHECK(countOpcode(*m->entry(), hlo::HloOpcode::Copy) == 0);
  auto args = randomArgs(*original, 9);
  CHECK(hlo::eval::evaluate(*m, args[0]) == hlo::eval::evaluate(*original, args[0]));
  // A second run changes nothing.
  CHECK_FALSE(passes::createLayoutAssignmentPass()->run(*m));
}
