// Fusion decisions: kinds, heroes, barriers, duplication and VMEM limits; the
// fused module evaluates to the same values.
#include <fmt/format.h>

#include "compiler/hlo/HloPrinter.h"
#include "compiler/passes/FusionRules.h"
#include "testbench/unit/fusion/FusionTestUtil.h"

using namespace tpusim;
using namespace fusiontest;

namespace {

const char* kReducer = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";

std::unique_ptr<hlo::HloModule> module(const std::string& entry) {
  return parse(std::string("HloModule test\n") + kReducer + entry);
}

void requireSameValues(const hlo::HloModule& a, const hlo::HloModule& b) {
  auto args = randomArgs(a, 17);
  CHECK(hlo::eval::evaluate(a, args[0]) == hlo::eval::evaluate(b, args[0]));
}

bool refusedWith(const passes::FusionResult& r, const std::string& producer,
                 const std::string& reason) {
  for (const auto& d : r.decisions)
    if (!d.fused && d.producer == producer && d.reason.find(reason) != std::string::npos)
      return true;
  return false;
}

const hlo::HloComputation* body(const hlo::HloModule& m, const std::string& fusion) {
  const hlo::HloInstruction* f = m.entry()->findInstruction(fusion);
  REQUIRE(f);
  REQUIRE(f->calledComputation("calls"));
  return f->calledComputation("calls");
}

}  // namespace

TEST_CASE("a dot takes its bias-add, activation and convert (kOutput)", "[fusion]") {
  auto m = module(R"(
ENTRY main {
  x = f32[16,256]{1,0} parameter(0)
  w = bf16[256,128]{1,0} parameter(1)
  bias = f32[128]{0} parameter(2)
  xb = bf16[16,256]{1,0} convert(x)
  d = f32[16,128]{1,0} dot(xb, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[16,128]{1,0} broadcast(bias), dimensions={1}
  a = f32[16,128]{1,0} add(d, bb)
  zero = f32[] constant(0)
  zb = f32[16,128]{1,0} broadcast(zero), dimensions={}
  r = f32[16,128]{1,0} maximum(a, zb)
  ROOT o = bf16[16,128]{1,0} convert(r)
})");
  auto original = m->clone();
  auto result = fuse(*m, chip("v5e"));
  CHECK(entryFusions(*m) == std::vector<std::string>{"fusion:kOutput"});
  const hlo::HloComputation* b = body(*m, "fusion");
  CHECK(countOpcode(*b, hlo::HloOpcode::Dot) == 1);
  CHECK(countOpcode(*b, hlo::HloOpcode::Convert) == 2);  // the LHS convert and the output convert
  CHECK(b->root()->name() == "o");
  CHECK(m->entry()->instructionCount() == 4);  // 3 parameters + the fusion
  CHECK(result.fusions.size() == 1);
  CHECK(result.refusals() == 0);
  std::string text = hlo::printModule(*m);
  INFO(text);
  CHECK(text.find("ROOT %fusion = bf16[16,128]{1,0} fusion(f32[16,256]{1,0} %x, bf16[256,128]{1,0} "
                  "%w, f32[128]{0} %bias), kind=kOutput, calls=%fused_computation") !=
        std::string::npos);
  CHECK(text.find("%param_0 = f32[16,256]{1,0} parameter(0)") != std::string::npos);
  requireSameValues(*m, *original);
}

TEST_CASE("a reduce takes its element-wise inputs (kInput), not its consumers", "[fusion]") {
  auto m = module(R"(
ENTRY main {
  x = f32[8,512]{1,0} parameter(0)
  sq = f32[8,512]{1,0} multiply(x, x)
  z = f32[] constant(0)
  s = f32[8]{0} reduce(sq, z), dimensions={1}, to_apply=add
  ROOT n = f32[8]{0} sqrt(s)
})");
  auto original = m->clone();
  auto result = fuse(*m, chip("v5e"));
  // sqrt is left alone: a fusion starts only when a producer joins a consumer.
  CHECK(entryFusions(*m) == std::vector<std::string>{"fusion:kInput"});
  CHECK(m->entry()->root()->opcode() == hlo::HloOpcode::Sqrt);
  CHECK(refusedWith(result, "s", "a reduce is only the root of its own kInput fusion"));
  const hlo::HloComputation* in = body(*m, "fusion");
  CHECK(in->root()->opcode() == hlo::HloOpcode::Reduce);
  CHECK(countOpcode(*in, hlo::HloOpcode::Multiply) == 1);
  requireSameValues(*m, *original);
}

TEST_CASE("element-wise chains become one kLoop fusion", "[fusion]") {
  auto m = module(R"(
ENTRY main {
  a = f32[8,128]{1,0} parameter(0)
  b = f32[8,128]{1,0} parameter(1)
  s = f32[8,128]{1,0} add(a, b)
  e = f32[8,128]{1,0} exponential(s)
  t = f32[128,8]{1,0} transpose(e), dimensions={1,0}
  ROOT n = f32[128,8]{1,0} negate(t)
})");
  auto original = m->clone();
  fuse(*m, chip("v5e"));
  CHECK(entryFusions(*m) == std::vector<std::string>{"fusion:kLoop"});
  // 2 parameters + add + exp: the transpose moves data between (8,128) tiles,
  // so it stays its own instruction (a DMA program) and the negate after it too.
  CHECK(body(*m, "fusion")->instructionCount() == 4);
  CHECK(countOpcode(*m->entry(), hlo::HloOpcode::Transpose) == 1);
  requireSameValues(*m, *original);
}

TEST_CASE("no fusion crosses a custom-call or a while", "[fusion]") {
  auto m = parse(R"(
HloModule barriers
cond {
  p = (s32[], f32[8,128]{1,0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
loop {
  p = (s32[], f32[8,128]{1,0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  v = f32[8,128]{1,0} get-tuple-element(p), index=1
  v2 = f32[8,128]{1,0} multiply(v, v)
  v3 = f32[8,128]{1,0} negate(v2)
  ROOT t = (s32[], f32[8,128]{1,0}) tuple(i2, v3)
}
ENTRY main {
  x = f32[8,128]{1,0} parameter(0)
  e = f32[8,128]{1,0} exponential(x)
  cc = f32[8,128]{1,0} custom-call(e), custom_call_target="my_kernel"
  a = f32[8,128]{1,0} abs(cc)
  zero = s32[] constant(0)
  init = (s32[], f32[8,128]{1,0}) tuple(zero, a)
  w = (s32[], f32[8,128]{1,0}) while(init), condition=cond, body=loop
  r = f32[8,128]{1,0} get-tuple-element(w), index=1
  ROOT o = f32[8,128]{1,0} sqrt(r)
})");
  auto result = fuse(*m, chip("v5e"));
  CHECK(refusedWith(result, "cc", "never fuses: a custom-call is an opaque kernel"));
  // exp, abs and sqrt stay apart: each is its own instruction between barriers.
  CHECK(m->entry()->findInstruction("e")->opcode() == hlo::HloOpcode::Exp);
  CHECK(m->entry()->findInstruction("a")->opcode() == hlo::HloOpcode::Abs);
  CHECK(m->entry()->findInstruction("o")->opcode() == hlo::HloOpcode::Sqrt);
  CHECK(entryFusions(*m).empty());
  // The while body is fused inside: the counter's add with its constant, and
  // the multiply into the negate.
  const hlo::HloComputation* loop = m->findComputation("loop");
  CHECK(countOpcode(*loop, hlo::HloOpcode::Fusion) == 2);
  CHECK(countOpcode(*loop, hlo::HloOpcode::Multiply) == 0);
}

TEST_CASE("cheap producers are duplicated up to the limit, expensive ones where HBM hides them",
          "[fusion]") {
  const std::string text = R"(
ENTRY main {
  p = f32[8,128]{1,0} parameter(0)
  q = f32[8,128]{1,0} parameter(1)
  s = f32[8,128]{1,0} add(p, q)
  e = f32[8,128]{1,0} exponential(p)
  n1 = f32[8,128]{1,0} negate(s)
  n2 = f32[8,128]{1,0} abs(s)
  m1 = f32[8,128]{1,0} negate(e)
  m2 = f32[8,128]{1,0} abs(e)
  ROOT t = (f32[8,128]{1,0}, f32[8,128]{1,0}, f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(n1, n2, m1, m2)
})";
  auto m = module(text);
  auto original = m->clone();
  auto result = fuse(*m, chip("v5e"));
  // The add went into both of its consumers' fusions and is gone from the entry.
  CHECK_FALSE(m->entry()->findInstruction("s"));
  CHECK(countOpcode(*m->entry(), hlo::HloOpcode::Add) == 0);
  // exp (weight 4 on v5e) costs 4 > 3 to copy, but its consumers are bound by
  // HBM: its EUP work hides under their DMAs, so each computes it and its
  // result is never written.
  CHECK_FALSE(m->entry()->findInstruction("e"));
  CHECK(countOpcode(*m->entry(), hlo::HloOpcode::Exp) == 0);
  requireSameValues(*m, *original);

  // Where a consumer's transcendental work would outlast its HBM traffic
  // (each of its consumers a chain of tanh), the exp stays, computed once.
  auto heavy = module(R"(
ENTRY main {
  p = f32[8,128]{1,0} parameter(0)
  e = f32[8,128]{1,0} exponential(p)
  a1 = f32[8,128]{1,0} tanh(e)
  a2 = f32[8,128]{1,0} tanh(a1)
  a3 = f32[8,128]{1,0} tanh(a2)
  a4 = f32[8,128]{1,0} tanh(a3)
  a5 = f32[8,128]{1,0} tanh(a4)
  a6 = f32[8,128]{1,0} tanh(a5)
  a7 = f32[8,128]{1,0} tanh(a6)
  a8 = f32[8,128]{1,0} tanh(a7)
  b1 = f32[8,128]{1,0} tanh(e)
  b2 = f32[8,128]{1,0} tanh(b1)
  b3 = f32[8,128]{1,0} tanh(b2)
  b4 = f32[8,128]{1,0} tanh(b3)
  b5 = f32[8,128]{1,0} tanh(b4)
  b6 = f32[8,128]{1,0} tanh(b5)
  b7 = f32[8,128]{1,0} tanh(b6)
  b8 = f32[8,128]{1,0} tanh(b7)
  ROOT t = (f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(a8, b8)
})");
  auto r3 = fuse(*heavy, chip("v5e"));
  CHECK(heavy->entry()->findInstruction("e"));
  CHECK(refusedWith(r3, "e", "cost 4 (weight 4 x 1) > limit 3, and the kernel's transcendental"));

  auto strict = module(text);
  auto r2 = fuse(*strict, chip("v5e"), /*maxDuplication=*/0);
  CHECK(strict->entry()->findInstruction("s"));
  CHECK(refusedWith(r2, "s", "cost 1 (weight 1 x 1) > limit 0"));
}

TEST_CASE("a dot's operands take arithmetic only if few output tiles re-read it; one hero each",
          "[fusion]") {
  auto m = module(R"(
ENTRY main {
  x = f32[64,128]{1,0} parameter(0)
  y = f32[64,128]{1,0} parameter(1)
  w = f32[128,4096]{1,0} parameter(2)
  v = f32[4096,128]{1,0} parameter(3)
  s = f32[4096,128]{1,0} parameter(4)
  m = f32[64,128]{1,0} multiply(x, y)
  d1 = f32[64,4096]{1,0} dot(m, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  vs = f32[4096,128]{1,0} multiply(v, s)
  ROOT d2 = f32[64,128]{1,0} dot(d1, vs), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  auto original = m->clone();
  auto result = fuse(*m, chip("v5e"));
  // m feeds d1's LHS, which every one of the 8 column blocks (4096 / 512)
  // re-reads: 7 copies exceed the limit, but recomputing a multiply 7 times
  // costs fewer VALU cycles than writing m to HBM and reading it back, so it
  // fuses (FusionCostModel.h, recomputeBeatsHbmRoundTrip).
  CHECK(!refusedWith(result, "m", "would be recomputed"));
  CHECK(refusedWith(result, "d1", "the fusion already has a hero, %d2"));
  // vs (a dequantization-like scale of the weights) feeds d2's RHS: with 64 rows
  // there is one row block, so it is computed once and fuses.
  CHECK(entryFusions(*m) == std::vector<std::string>{"fusion:kOutput", "fusion.1:kOutput"});
  CHECK(body(*m, "fusion.1")->root()->name() == "d2");
  CHECK(countOpcode(*body(*m, "fusion.1"), hlo::HloOpcode::Multiply) == 1);
  requireSameValues(*m, *original);
}

TEST_CASE("an expensive producer is not recomputed through a broadcast", "[fusion]") {
  auto m = module(R"(
ENTRY main {
  x = f32[8]{0} parameter(0)
  y = f32[8,1024]{1,0} parameter(1)
  r = f32[8]{0} rsqrt(x)
  b = f32[8,1024]{1,0} broadcast(r), dimensions={0}
  ROOT o = f32[8,1024]{1,0} multiply(y, b)
})");
  auto result = fuse(*m, chip("v5e"));
  CHECK(refusedWith(result, "r", "would be recomputed for every element of %b (weight 4)"));
  CHECK(m->entry()->findInstruction("r"));
}

TEST_CASE("a fusion that would exceed VMEM is refused", "[fusion]") {
  // Sixteen 64x1024 f32 inputs summed: on tiny8 (256 KiB VMEM) the blocks
  // shrink to 8x256 (8 KiB), and about a dozen double-buffered inputs fill it.
  std::string entry = "ENTRY main {\n";
  for (int i = 0; i < 16; ++i)
    entry += fmt::format("  p{} = f32[64,1024]{{1,0}} parameter({})\n", i, i);
  entry += "  s1 = f32[64,1024]{1,0} add(p0, p1)\n";
  for (int i = 2; i < 16; ++i)
    entry += fmt::format("  {}s{} = f32[64,1024]{{1,0}} add(s{}, p{})\n", i == 15 ? "ROOT " : "", i,
                         i - 1, i);
  entry += "}\n";

  auto big = module(entry);
  auto onV5e = fuse(*big, chip("v5e"));
  CHECK(entryFusions(*big).size() == 1);
  CHECK(onV5e.refusals() == 0);

  auto small = module(entry);
  auto original = small->clone();
  lower::TargetDescription tiny = chip("tiny8");
  auto onTiny = fuse(*small, tiny);
  CHECK(entryFusions(*small).size() >= 2);
  bool vmemRefusal = false;
  for (const auto& d : onTiny.decisions)
    vmemRefusal |= d.reason.find("exceeds the budget of 262144 bytes") != std::string::npos;
  CHECK(vmemRefusal);
  for (const auto& f : onTiny.fusions) {
    INFO(f.name);
    CHECK(f.vmem.bytes <= tiny.vmemBytes);
    CHECK(f.vmem.block == "8x256");
  }
  requireSameValues(*small, *original);
  // Half the VMEM: more, smaller fusions.
  auto half = module(entry);
  fuse(*half, tiny, 3, 0.5);
  CHECK(entryFusions(*half).size() > entryFusions(*small).size());
}

TEST_CASE("the fusion report lists decisions, fusions and a summary", "[fusion]") {
  auto m = module(R"(
ENTRY main {
  x = f32[8,512]{1,0} parameter(0)
  sq = f32[8,512]{1,0} multiply(x, x)
  z = f32[] constant(0)
  s = f32[8]{0} reduce(sq, z), dimensions={1}, to_apply=add
  ROOT n = f32[8]{0} sqrt(s)
})");
  auto result = fuse(*m, chip("v5e"));
  std::string report = result.report();
  CHECK(report.find("fusion decisions for module 'test' on chip 'v5e' (VMEM budget 134217728 "
                    "bytes):") == 0);
  INFO(report);
  CHECK(report.find("  refused %s (reduce) into %n (root %n): a reduce is only the root of its own "
                    "kInput fusion") != std::string::npos);
  CHECK(report.find("  fused   %sq (multiply) into %fusion (root %s)") != std::string::npos);
  CHECK(report.find("  %fusion = kInput (root %s, calls %fused_computation): 3 instructions, 1 "
                    "operands, VMEM estimate") != std::string::npos);
  CHECK(report.find("summary: 1 fusions (0 kLoop, 1 kInput, 0 kOutput) holding 3 instructions; "
                    "1 refusals") != std::string::npos);
  // Running again finds nothing more to do.
  auto again = fuse(*m, chip("v5e"));
  CHECK(again.fusions.empty());
}

TEST_CASE("fusion is deterministic", "[fusion]") {
  const char* src = std::getenv("TPUSIM_SOURCE_DIR");
  if (!src) return;
  auto load = [&] {
    hlo::ParseResult parsed =
        hlo::parseHloFile(std::string(src) + "/testbench/lit/hlo/Inputs/llama_decoder_block.hlo");
    REQUIRE(parsed.ok());
    auto m = std::move(parsed.modules.front());
    passes::createPass("inline")->run(*m);
    layout(*m);
    return m;
  };
  auto a = load();
  auto b = load();
  auto ra = fuse(*a, chip("v5e"));
  auto rb = fuse(*b, chip("v5e"));
  CHECK(hlo::printModule(*a) == hlo::printModule(*b));
  CHECK(ra.report() == rb.report());
  CHECK(ra.fusions.size() >= 10);
}

TEST_CASE("sibling dots of one LHS meet in one kernel with their combiner", "[fusion]") {
  // SwiGLU: silu(x.w1) * (x.w3); q/k-like siblings whose results go their own
  // ways (a reshape, another dot) stay apart.
  auto m = module(R"(
ENTRY main {
  x = bf16[256,512]{1,0} parameter(0)
  w1 = bf16[512,1024]{1,0} parameter(1)
  w3 = bf16[512,1024]{1,0} parameter(2)
  w2 = bf16[1024,512]{1,0} parameter(3)
  g = bf16[256,1024]{1,0} dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  u = bf16[256,1024]{1,0} dot(x, w3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = bf16[256,1024]{1,0} logistic(g)
  gs = bf16[256,1024]{1,0} multiply(g, s)
  h = bf16[256,1024]{1,0} multiply(gs, u)
  ROOT d = bf16[256,512]{1,0} dot(h, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  auto original = m->clone();
  passes::FusionResult result;
  passes::FusionConfig on;
  on.target = chip("v5e");
  on.siblingDots = true;
  passes::createFusionPass(on, &result)->run(*m);
  requireVerifies(*m);
  // The pair and its combiner; the down projection reads h (nothing left to fuse into it).
  CHECK(entryFusions(*m) == std::vector<std::string>{"fusion:kOutput"});
  const hlo::HloComputation* b = body(*m, "fusion");
  CHECK(countOpcode(*b, hlo::HloOpcode::Dot) == 2);
  CHECK(b->root()->name() == "h");
  CHECK(m->entry()->findInstruction("fusion")->operandCount() == 3);  // x, w1, w3
  CHECK(m->entry()->root()->opcode() == hlo::HloOpcode::Dot);
  CHECK(refusedWith(result, "h", "belongs to the sibling-dot kernel of %h"));
  requireSameValues(*m, *original);

  // Off (the default): each dot its own kernel, the combiner in the down
  // projection's prologue.
  auto off = original->clone();
  fuse(*off, chip("v5e"));
  CHECK(entryFusions(*off) == std::vector<std::string>{"fusion:kOutput"});
  CHECK(countOpcode(*off->entry(), hlo::HloOpcode::Dot) == 2);
  CHECK(countOpcode(*body(*off, "fusion"), hlo::HloOpcode::Logistic) == 1);
}

TEST_CASE("sibling dots whose results escape separately stay apart", "[fusion]") {
  auto m = module(R"(
ENTRY main {
  x = bf16[256,512]{1,0} parameter(0)
  w1 = bf16[512,1024]{1,0} parameter(1)
  w3 = bf16[512,1024]{1,0} parameter(2)
  g = bf16[256,1024]{1,0} dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  u = bf16[256,1024]{1,0} dot(x, w3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = bf16[256,1024]{1,0} logistic(g)
  h = bf16[256,1024]{1,0} multiply(s, u)
  ROOT t = (bf16[256,1024]{1,0}, bf16[256,1024]{1,0}) tuple(h, g)
})");
  passes::FusionConfig on;
  on.target = chip("v5e");
  on.siblingDots = true;
  passes::createFusionPass(on)->run(*m);
  for (const auto& i : m->entry()->instructions())
    if (i->opcode() == hlo::HloOpcode::Fusion)
      CHECK(countOpcode(*i->calledComputation("calls"), hlo::HloOpcode::Dot) <= 1);
}

TEST_CASE("weight-bound sibling dots stay apart; a prefill's pair fuses", "[fusion]") {
  // A decode step's SwiGLU (M = 1): both ways stream the same 8 MiB of
  // weights, the pair would save 10 KiB of HBM traffic and expose a second
  // first weight block in front of the kernel before it (measured slower on
  // v5e and v6e). With 256 rows it saves the second LHS read and g / u's
  // round trip (2.5 MiB), more than that block.
  auto swiglu = [](int rows, int model = 1024, int ffn = 2048) {
    return module(fmt::format(R"(
ENTRY main {{
  x = bf16[{0},{1}]{{1,0}} parameter(0)
  w1 = bf16[{1},{2}]{{1,0}} parameter(1)
  w3 = bf16[{1},{2}]{{1,0}} parameter(2)
  w2 = bf16[{2},{1}]{{1,0}} parameter(3)
  g = bf16[{0},{2}]{{1,0}} dot(x, w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  u = bf16[{0},{2}]{{1,0}} dot(x, w3), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  s = bf16[{0},{2}]{{1,0}} logistic(g)
  gs = bf16[{0},{2}]{{1,0}} multiply(g, s)
  h = bf16[{0},{2}]{{1,0}} multiply(gs, u)
  ROOT d = bf16[{0},{1}]{{1,0}} dot(h, w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}})",
                              rows, model, ffn));
  };
  for (const char* name : {"v5e", "v6e"}) {
    INFO(name);
    auto decode = swiglu(1);
    passes::FusionResult result;
    passes::FusionConfig on;
    on.target = chip(name);
    on.siblingDots = true;
    passes::createFusionPass(on, &result)->run(*decode);
    requireVerifies(*decode);
    CHECK(countOpcode(*decode->entry(), hlo::HloOpcode::Dot) == 2);  // w1 and w3 on their own
    CHECK(refusedWith(result, "u", "weight-bound dots"));
    auto prefill = swiglu(256);
    passes::FusionResult pre;
    passes::createFusionPass(on, &pre)->run(*prefill);
    CHECK(countOpcode(*body(*prefill, "fusion"), hlo::HloOpcode::Dot) == 2);
  }
  // The 7B FFN (2048 rows): a dot kernel takes K = 4096 in one block; on v6e
  // the pair fits VMEM only with two (measured 2.5% slower), on v5e with one.
  for (const char* name : {"v5e", "v6e"}) {
    INFO(name);
    auto big = swiglu(2048, 4096, 11008);
    passes::FusionResult result;
    passes::FusionConfig on;
    on.target = chip(name);
    on.siblingDots = true;
    passes::createFusionPass(on, &result)->run(*big);
    const bool v6e = std::string(name) == "v6e";
    CHECK(refusedWith(result, "u", "K blocks, a dot kernel with 1") == v6e);
    CHECK(countOpcode(*big->entry(), hlo::HloOpcode::Dot) == (v6e ? 2 : 1));  // apart: w1, w3
  }
}

TEST_CASE("a sibling-dot kernel's LHS producers are held to the duplication limit", "[fusion]") {
  // 8 column blocks of 512 re-read the scaled LHS: 7 extra copies of the
  // multiply exceed the limit; a single dot would take it (its VALU work
  // beats the HBM round trip), the sibling kernel does not.
  auto m = module(R"(
ENTRY main {
  x = bf16[256,512]{1,0} parameter(0)
  s = bf16[256,512]{1,0} parameter(1)
  w1 = bf16[512,4096]{1,0} parameter(2)
  w3 = bf16[512,4096]{1,0} parameter(3)
  xs = bf16[256,512]{1,0} multiply(x, s)
  g = bf16[256,4096]{1,0} dot(xs, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  u = bf16[256,4096]{1,0} dot(xs, w3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT h = bf16[256,4096]{1,0} multiply(g, u)
})");
  auto original = m->clone();
  passes::FusionResult result;
  passes::FusionConfig on;
  on.target = chip("v5e");
  on.siblingDots = true;
  passes::createFusionPass(on, &result)->run(*m);
  requireVerifies(*m);
  CHECK(refusedWith(result, "xs", "(a sibling-dot kernel's limit)"));
  CHECK(countOpcode(*body(*m, "fusion"), hlo::HloOpcode::Dot) == 2);
  CHECK(m->entry()->findInstruction("xs"));
  requireSameValues(*m, *original);
}

TEST_CASE("a dot split into 128-lane heads takes the rotary embedding as its epilogue",
          "[fusion]") {
  // q = x.wq split into 2 heads of 128 lanes, rotate-half RoPE on them.
  auto m = module(R"(
ENTRY main {
  x = bf16[1,16,256]{2,1,0} parameter(0)
  wq = bf16[256,256]{1,0} parameter(1)
  cs = f32[16,128]{1,0} parameter(2)
  sn = f32[16,128]{1,0} parameter(3)
  q = bf16[1,16,256]{2,1,0} dot(x, wq), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  qs = bf16[1,16,2,128]{3,2,1,0} reshape(q)
  qf = f32[1,16,2,128]{3,2,1,0} convert(qs)
  lo = f32[1,16,2,64]{3,2,1,0} slice(qf), slice={[0:1], [0:16], [0:2], [0:64]}
  hi = f32[1,16,2,64]{3,2,1,0} slice(qf), slice={[0:1], [0:16], [0:2], [64:128]}
  rot = f32[1,16,2,128]{3,2,1,0} concatenate(hi, lo), dimensions={3}
  c = f32[1,16,2,128]{3,2,1,0} broadcast(cs), dimensions={1,3}
  s = f32[1,16,2,128]{3,2,1,0} broadcast(sn), dimensions={1,3}
  xc = f32[1,16,2,128]{3,2,1,0} multiply(c, qf)
  rs = f32[1,16,2,128]{3,2,1,0} multiply(s, rot)
  sum = f32[1,16,2,128]{3,2,1,0} add(xc, rs)
  ROOT o = bf16[1,16,2,128]{3,2,1,0} convert(sum)
})");
  const hlo::HloInstruction* split = m->entry()->findInstruction("qs");
  CHECK(passes::isDotLaneSplit(*split));
  CHECK_FALSE(passes::isDotLaneSplit(*m->entry()->findInstruction("qf")));
  auto original = m->clone();
  passes::FusionResult result;
  passes::FusionConfig on;
  on.target = chip("v5e");
  on.headEpilogues = true;
  passes::createFusionPass(on, &result)->run(*m);
  requireVerifies(*m);
  CHECK(entryFusions(*m) == std::vector<std::string>{"fusion:kOutput"});
  const hlo::HloComputation* b = body(*m, "fusion");
  CHECK(countOpcode(*b, hlo::HloOpcode::Dot) == 1);
  CHECK(countOpcode(*b, hlo::HloOpcode::Concatenate) == 1);
  CHECK(b->root()->name() == "o");
  requireSameValues(*m, *original);

  // Off (FusionConfig's default): the RoPE is a loop fusion reading the dot's result.
  auto off = original->clone();
  passes::FusionResult offResult;
  passes::FusionConfig plain;
  plain.target = chip("v5e");
  passes::createFusionPass(plain, &offResult)->run(*off);
  CHECK(countOpcode(*off->entry(), hlo::HloOpcode::Dot) == 1);
  CHECK(refusedWith(offResult, "qs", "head epilogues are off"));
}
