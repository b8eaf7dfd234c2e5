// HBM buffer assignment: liveness, reuse, aliasing, padding, scratch, overflow.
#include "compiler/lower/buffers/BufferAssignment.h"
#include "compiler/lower/buffers/ShapeBytes.h"
#include "testbench/unit/fusion/FusionTestUtil.h"

using namespace tpusim;
using namespace fusiontest;

namespace {

const lower::HbmBuffer* bufferOf(const lower::BufferAssignment& a, const std::string& name) {
  for (const auto& b : a.buffers)
    if (b.instruction->name() == name) return &b;
  return nullptr;
}

hlo::Shape shape(const std::string& text) {
  hlo::Shape s;
  std::string err;
  REQUIRE(hlo::parseShape(text, &s, &err));
  return s;
}

}  // namespace

TEST_CASE("padded bytes follow the layout's tiles", "[fusion][buffers]") {
  CHECK(lower::shapeBytes(shape("f32[3,5]{1,0}")) == 60);
  CHECK(lower::shapeBytes(shape("f32[3,5]{1,0:T(8,128)}")) == 8 * 128 * 4);
  CHECK(lower::shapeBytes(shape("f32[5,3]{0,1:T(8,128)}")) == 8 * 128 * 4);
  CHECK(lower::shapeBytes(shape("bf16[16,256]{1,0:T(8,128)(2,1)}")) == 16 * 256 * 2);
  CHECK(lower::shapeBytes(shape("f32[10]{0:T(256)}")) == 1024);
  CHECK(lower::shapeBytes(shape("pred[8]")) == 8);
  CHECK(lower::shapeBytes(shape("(f32[4], s8[4])")) == 20);
}

TEST_CASE("a dead intermediate's buffer is reused", "[fusion][buffers]") {
  auto m = parse(R"(
HloModule chain
ENTRY main {
  p = f32[8,128]{1,0} parameter(0)
  a = f32[8,128]{1,0} negate(p)
  b = f32[8,128]{1,0} exponential(a)
  c = f32[8,128]{1,0} abs(b)
  ROOT d = f32[8,128]{1,0} sqrt(c)
})");
  auto a = lower::assignBuffers(*m, chip("v5e"));
  REQUIRE(a.buffers.size() == 5);
  const auto* na = bufferOf(a, "a");
  const auto* nb = bufferOf(a, "b");
  const auto* nc = bufferOf(a, "c");
  const auto* nd = bufferOf(a, "d");
  CHECK(na->lastUseStep == 2);
  CHECK(nc->offset == na->offset);  // c starts after a's last use
  CHECK(nd->offset == nb->offset);
  CHECK(nd->kind == lower::HbmBuffer::Kind::Output);
  CHECK(a.peakBytes == 3 * 4096);  // p + two live intermediates
  CHECK(a.totalBytes == 5 * 4096);
  CHECK(a.fits());
  std::string report = a.report();
  CHECK(report.find("peak HBM: 12288 bytes (12.0 KiB) at step 2 (%b)") != std::string::npos);
  CHECK(report.find("without reuse 20480 bytes") != std::string::npos);
}

TEST_CASE("freed ranges merge and are reused; tuples alias", "[fusion][buffers]") {
  auto m = parse(R"(
HloModule bestfit
ENTRY main {
  p = f32[64,128]{1,0} parameter(0)
  big = f32[64,128]{1,0} negate(p)
  small = f32[8,128]{1,0} slice(p), slice={[0:8], [0:128]}
  bs = f32[8,128]{1,0} slice(big), slice={[0:8], [0:128]}
  s2 = f32[8,128]{1,0} add(small, bs)
  x = f32[8,128]{1,0} negate(s2)
  t = (f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(x, s2)
  ROOT g = f32[8,128]{1,0} get-tuple-element(t), index=0
})");
  auto a = lower::assignBuffers(*m, chip("v5e"));
  CHECK_FALSE(bufferOf(a, "t"));  // tuples and get-tuple-element take no memory
  CHECK_FALSE(bufferOf(a, "g"));
  CHECK(bufferOf(a, "x")->kind == lower::HbmBuffer::Kind::Output);
  // big (32 KiB) dies after bs: s2 takes the start of its range; then small and
  // bs die, their ranges merge with the rest of big's, and x follows s2 there.
  const auto* big = bufferOf(a, "big");
  CHECK(bufferOf(a, "s2")->offset == big->offset);
  CHECK(bufferOf(a, "x")->offset == big->offset + 4096);
  CHECK(a.peakBytes == 32768 + 32768 + 4096 + 4096);
}

TEST_CASE("called computations' temporaries are scratch during the call", "[fusion][buffers]") {
  auto m = parse(R"(
HloModule loop
cond {
  p = (s32[], f32[1024]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[1024]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  v = f32[1024]{0} get-tuple-element(p), index=1
  v2 = f32[1024]{0} exponential(v)
  ROOT t = (s32[], f32[1024]{0}) tuple(i2, v2)
}
ENTRY main {
  x = f32[1024]{0} parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[1024]{0}) tuple(z, x)
  ROOT w = (s32[], f32[1024]{0}) while(init), condition=cond, body=body
})");
  auto a = lower::assignBuffers(*m, chip("v5e"));
  const lower::HbmBuffer* scratch = nullptr;
  for (const auto& b : a.buffers)
    if (b.kind == lower::HbmBuffer::Kind::Scratch) scratch = &b;
  REQUIRE(scratch);
  CHECK(scratch->instruction->name() == "w");
  // The body's i2, one and v2: 512 + 512 + 4096 bytes (aligned).
  CHECK(scratch->allocatedBytes == 512 + 512 + 4096);
  CHECK(scratch->defineStep == scratch->lastUseStep);
}

TEST_CASE("a module larger than HBM names its largest buffers", "[fusion][buffers]") {
  auto m = parse(R"(
HloModule huge
ENTRY main {
  a = f32[4096,4096]{1,0} parameter(0)
  b = f32[4096,2048]{1,0} parameter(1)
  ROOT d = f32[4096,2048]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  auto a = lower::assignBuffers(*m, chip("tiny8"));  // 64 MiB of HBM
  CHECK_FALSE(a.fits());
  CHECK(a.peakBytes == 64LL * 1024 * 1024 + 2 * 32LL * 1024 * 1024);
  std::string msg = a.overflowMessage(2);
  CHECK(msg.find("error: module 'huge' needs 134217728 bytes (128.0 MiB) of HBM at its peak") == 0);
  CHECK(msg.find("chip 'tiny8' has 67108864 bytes (64.0 MiB)") != std::string::npos);
  CHECK(msg.find("\n  %a f32[4096,4096]{1,0}: 67108864 bytes (64.0 MiB), parameter\n  %b "
                 "f32[4096,2048]{1,0}: 33554432 bytes (32.0 MiB), parameter") != std::string::npos);
  CHECK(msg.find("%d f32") == std::string::npos);  // only the 2 largest were asked for
}

TEST_CASE("best fit takes the smallest free range that holds the buffer", "[fusion][buffers]") {
  auto m = parse(R"(
HloModule bestfit
ENTRY main {
  p = f32[8,128]{1,0} parameter(0)
  a = f32[16,128]{1,0} concatenate(p, p), dimensions={0}
  b = f32[8,128]{1,0} negate(p)
  k = f32[8,128]{1,0} abs(p)
  s = f32[8,128]{1,0} slice(a), slice={[0:8], [0:128]}
  t = f32[8,128]{1,0} add(s, b)
  u = f32[8,128]{1,0} multiply(t, k)
  ROOT r = f32[8,128]{1,0} add(u, k)
})");
  auto a = lower::assignBuffers(*m, chip("v5e"));
  // Offsets: p 0, a 4096 (8 KiB), b 12288, k 16384, s 20480; t reuses a's start.
  CHECK(bufferOf(a, "a")->offset == 4096);
  CHECK(bufferOf(a, "s")->offset == 20480);
  CHECK(bufferOf(a, "t")->offset == 4096);
  // When u is placed, [8192,16384) (a's rest + b, 8 KiB) and [20480,24576) (s,
  // 4 KiB) are free: best fit takes the exact 4 KiB range, first fit would not.
  CHECK(bufferOf(a, "u")->offset == 20480);
  CHECK(a.peakBytes == 24576);
}
