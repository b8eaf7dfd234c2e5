// The module compiler: which instructions alias their operand's bytes, the
// buffers of called computations, and properties of a lowered program that
// the simulator relies on (buffer table, debug map covering the code, costs,
// control flow that branches inside the code).
#include <catch2/catch.hpp>

#include "compiler/driver/ModuleLoweringPipeline.h"
#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/lower/CannotLower.h"
#include "compiler/lower/buffers/BufferAssignment.h"
#include "compiler/lower/module/ModuleLowering.h"
#include "isa/Rules.h"
#include "testbench/unit/HloTestUtil.h"

using namespace tpusim;

namespace {

std::unique_ptr<hlo::HloModule> parse(const std::string& text) { return testing::parseHlo(text); }

const hlo::HloInstruction* find(const hlo::HloModule& m, const std::string& name) {
  for (const auto& c : m.computations())
    if (const hlo::HloInstruction* i = c->findInstruction(name)) return i;
  FAIL("no instruction " << name);
  return nullptr;
}

lower::LoweredModule lowerText(const std::string& text) {
  auto m = parse(text);
  lower::TargetDescription t = lower::loadTarget("v5e");
  kernels::codegen::TargetInfo cg = kernels::codegen::TargetInfo::fromChip(t.chip);
  return driver::compileModule(*m, t, cg);
}

const char* kLoop = R"(
HloModule loop
cond {
  p = (s32[], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[8,128] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  e = f32[8,128] exponential(v)
  ROOT t = (s32[], f32[8,128]) tuple(i2, e)
}
ENTRY main {
  x = f32[8,128] parameter(0), metadata={op_name="x"}
  z = s32[] constant(0)
  t = (s32[], f32[8,128]) tuple(z, x)
  w = (s32[], f32[8,128]) while(t), condition=cond, body=body
  ROOT r = f32[8,128] get-tuple-element(w), index=1
})";

}  // namespace

TEST_CASE("reshapes and bitcasts alias only when no element moves", "[compiler][buffers]") {
  auto m = parse(R"(
HloModule alias
ENTRY main {
  p = f32[8,128]{1,0} parameter(0)
  r = f32[1024]{0} reshape(p)
  b = f32[128,8]{1,0} bitcast(p)
  t = f32[128,8]{0,1} bitcast(p)
  c = s32[8,128]{1,0} bitcast-convert(p)
  ROOT o = (f32[1024], f32[128,8], f32[128,8], s32[8,128]) tuple(r, b, t, c)
})");
  CHECK(lower::aliasesOperandBuffer(*find(*m, "r")));
  CHECK(lower::aliasesOperandBuffer(*find(*m, "b")));
  CHECK_FALSE(lower::aliasesOperandBuffer(*find(*m, "t")));  // a transpose in row-major bytes
  CHECK_FALSE(lower::aliasesOperandBuffer(*find(*m, "c")));
  auto a = lower::assignBuffers(*m, lower::loadTarget("v5e"));
  int64_t own = 0;
  for (const auto& b : a.buffers)
    if (b.instruction->name() == "r" || b.instruction->name() == "b") ++own;
  CHECK(own == 0);
}

TEST_CASE("a called computation's temporaries fit its caller's scratch", "[compiler][buffers]") {
  auto m = parse(kLoop);
  lower::TargetDescription t = lower::loadTarget("v5e");
  auto entry = lower::assignBuffers(*m, t);
  int64_t scratch = -1;
  for (const auto& b : entry.buffers)
    if (b.kind == lower::HbmBuffer::Kind::Scratch) scratch = b.allocatedBytes;
  REQUIRE(scratch > 0);
  for (const char* name : {"cond", "body"}) {
    auto nested = lower::assignCalledComputationBuffers(*m->findComputation(name), t);
    CHECK(nested.peakBytes <= scratch);
    for (const auto& b : nested.buffers) {
      CHECK(b.kind != lower::HbmBuffer::Kind::Parameter);  // the caller's values
      CHECK(b.offset + b.allocatedBytes <= nested.peakBytes);
    }
  }
}

TEST_CASE("a lowered while loop is one well-formed program", "[compiler][lowering]") {
  lower::LoweredModule l = lowerText(kLoop);
  const isa::Program& p = l.program;
  REQUIRE(!p.code.empty());
  // Ends with halt; every branch target is inside the code, and there is a back edge.
  CHECK(p.code.back().slot(isa::SlotKind::Misc, 0).op == isa::Opcode::Halt);
  bool backEdge = false;
  for (size_t b = 0; b < p.code.size(); ++b)
    for (const isa::Instruction& in : p.code[b].slots)
      if (isa::isBranch(in.op)) {
        int64_t target = in.operands[in.op == isa::Opcode::Jmp ? 0 : 1];
        CHECK(target >= 0);
        CHECK(target < int64_t(p.code.size()));
        backEdge |= target <= int64_t(b);
      }
  CHECK(backEdge);
  // Inputs and outputs by name; the debug map covers every bundle but the halt.
  REQUIRE(p.buffers.size() >= 2);
  CHECK(p.buffers[0].name == "x");
  CHECK(p.buffers[0].role == isa::BufferRole::Input);
  bool out = false;
  for (const auto& b : p.buffers) out |= b.name == "out" && b.role == isa::BufferRole::Output;
  CHECK(out);
  std::vector<bool> covered(p.code.size(), false);
  for (const auto& e : p.debugMap)
    for (uint32_t b = e.begin; b < e.end; ++b) covered[b] = true;
  for (size_t b = 0; b + 1 < p.code.size(); ++b) {
    INFO("bundle " << b);
    CHECK(covered[b]);
  }
  // One kernel per fusion of the condition and body, plus the while's own code.
  int kernels = 0, control = 0;
  for (const auto& op : l.ops) {
    kernels += op.kind == "kernel";
    control += op.kind == "control";
  }
  CHECK(kernels >= 2);
  CHECK(control == 1);
  double flops = 0;
  for (const auto& c : p.costs) flops += c.flops;
  CHECK(flops >= 1024);  // the exponential of the body
}

TEST_CASE("what cannot be lowered is CannotLower naming the instruction", "[compiler][errors]") {
  const char* text = R"(
HloModule bad
ENTRY main {
  x = f32[8,128] parameter(0)
  ROOT c = f32[8,128] custom-call(x), custom_call_target="my_kernel", metadata={op_name="jit(f)/mine" source_file="m.py" source_line=9}
})";
  try {
    lowerText(text);
    FAIL("expected CannotLower");
  } catch (const lower::CannotLower& e) {
    CHECK(e.instruction() == "c");
    CHECK(e.opcode() == "custom-call");
    CHECK(std::string(e.what()).find("\"my_kernel\" names no library kernel") != std::string::npos);
    CHECK(std::string(e.what()).find("m.py:9") != std::string::npos);
  }
  const char* wide = R"(
HloModule wide
ENTRY main {
  x = f64[8] parameter(0)
  ROOT n = f64[8] negate(x)
})";
  CHECK_THROWS_AS(lowerText(wide), lower::CannotLower);
}
