// Fusion lowering of single HLO ops (f32, bf16, s32, s8, pred): every compute
// instruction of each module is lowered, run in interpret mode on the values
// the reference evaluator gives its operands, and compared with the
// evaluator's result (LoweringHarness.h).
#include "testbench/unit/compiler/LoweringHarness.h"

#include <random>

#include "kernels/lib/Registry.h"
#include "kernels/llo/Printer.h"

using namespace lowertest;

namespace {

// A module whose entry computes `body` (HLO lines) from `params`; the root is
// a tuple of the names in `results`.
std::string moduleText(const std::string& params, const std::string& body,
                       const std::string& results, const std::string& extra = "") {
  return "HloModule t\n" + extra + "\nENTRY %e {\n" + params + body + "  ROOT %r = tuple(" +
         results + ")\n}\n";
}

void checkAll(const std::string& text, int expectChecked) {
  auto m = parse(text);
  int checked = 0;
  std::vector<std::string> refused = checkModule(*m, 11, &checked);
  for (const auto& r : refused) UNSCOPED_INFO(r);
  CHECK(refused.empty());
  CHECK(checked == expectChecked);
}

const char* kAddComputation = R"(
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] maximum(%a, %b)
}
%min (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] minimum(%a, %b)
}
%addi (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}
%maxi (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] maximum(%a, %b)
}
%addb (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %s = bf16[] add(%a, %b)
}
)";

}  // namespace

TEST_CASE("f32 element-wise ops lower and match the evaluator", "[lowering]") {
  std::string p =
      "  %x = f32[64,256] parameter(0)\n  %y = f32[64,256] parameter(1)\n"
      "  %half = f32[] constant(0.5)\n  %h = f32[64,256] broadcast(%half), dimensions={}\n";
  std::string body = R"(
  %add = f32[64,256] add(%x, %y)
  %sub = f32[64,256] subtract(%x, %y)
  %mul = f32[64,256] multiply(%x, %y)
  %ax = f32[64,256] abs(%x)
  %pos = f32[64,256] add(%ax, %h)
  %div = f32[64,256] divide(%x, %pos)
  %mx = f32[64,256] maximum(%x, %y)
  %mn = f32[64,256] minimum(%x, %y)
  %neg = f32[64,256] negate(%x)
  %ex = f32[64,256] exponential(%x)
  %lg = f32[64,256] log(%pos)
  %th = f32[64,256] tanh(%x)
  %sq = f32[64,256] sqrt(%pos)
  %rs = f32[64,256] rsqrt(%pos)
  %lo = f32[64,256] logistic(%x)
  %sg = f32[64,256] sign(%x)
  %big = f32[64,256] multiply(%x, %pos)
  %fl = f32[64,256] floor(%big)
  %ce = f32[64,256] ceil(%big)
  %em = f32[64,256] exponential-minus-one(%x)
  %lp = f32[64,256] log-plus-one(%ax)
  %lt = pred[64,256] compare(%x, %y), direction=LT
  %ge = pred[64,256] compare(%x, %y), direction=GE
  %eq = pred[64,256] compare(%x, %x), direction=EQ
  %sel = f32[64,256] select(%lt, %x, %y)
  %cl = f32[64,256] clamp(%half, %x, %pos)
  %fin = pred[64,256] is-finite(%x)
  %hundred = f32[] constant(300)
  %hb = f32[64,256] broadcast(%hundred), dimensions={}
  %wide = f32[64,256] multiply(%x, %hb)
  %sin = f32[64,256] sine(%wide)
  %cos = f32[64,256] cosine(%wide)
)";
  checkAll(moduleText(p, body,
                      "%add, %sub, %mul, %div, %mx, %mn, %neg, %ex, %lg, %th, %sq, %rs, "
                      "%lo, %sg, %fl, %ce, %em, %lp, %lt, %ge, %eq, %sel, %cl, %fin, %sin, %cos"),
           32);
}

TEST_CASE("bf16, s32, s8 and pred element-wise ops and converts", "[lowering]") {
  std::string p =
      "  %x = f32[32,384] parameter(0)\n  %i = s32[32,384] parameter(1)\n"
      "  %j = s32[32,384] parameter(2)\n  %b = bf16[32,384] parameter(3)\n";
  std::string body = R"(
  %xb = bf16[32,384] convert(%x)
  %bb = bf16[32,384] add(%xb, %b)
  %bm = bf16[32,384] multiply(%xb, %b)
  %be = bf16[32,384] exponential(%b)
  %bf = f32[32,384] convert(%b)
  %xi = s32[32,384] convert(%x)
  %if = f32[32,384] convert(%i)
  %ia = s32[32,384] add(%i, %j)
  %im = s32[32,384] multiply(%i, %j)
  %ix = s32[32,384] maximum(%i, %j)
  %in = s32[32,384] minimum(%i, %j)
  %ig = s32[32,384] negate(%i)
  %ib = s32[32,384] abs(%i)
  %and = s32[32,384] and(%i, %j)
  %or = s32[32,384] or(%i, %j)
  %xor = s32[32,384] xor(%i, %j)
  %not = s32[32,384] not(%i)
  %c = pred[32,384] compare(%i, %j), direction=NE
  %d = pred[32,384] compare(%i, %j), direction=LE
  %pa = pred[32,384] and(%c, %d)
  %po = pred[32,384] or(%c, %d)
  %px = pred[32,384] xor(%c, %d)
  %pn = pred[32,384] not(%c)
  %pi = s32[32,384] convert(%pa)
  %ps = s32[32,384] select(%po, %i, %j)
  %i8 = s8[32,384] convert(%i)
  %a8 = s8[32,384] add(%i8, %i8)
  %f8 = f32[32,384] convert(%a8)
)";
  checkAll(moduleText(p, body,
                      "%bb, %bm, %be, %bf, %xi, %if, %ia, %im, %ix, %in, %ig, %ib, %and, "
                      "%or, %xor, %not, %pi, %ps, %px, %pn, %f8"),
           28);
}

TEST_CASE("broadcasts, iotas, rank-1 and scalar arrays", "[lowering]") {
  std::string p =
      "  %v = f32[128] parameter(0)\n  %c = f32[64] parameter(1)\n  %s = f32[] parameter(2)\n"
      "  %m = f32[8,32] parameter(3)\n  %n = f32[1000] parameter(4)\n";
  std::string body = R"(
  %b1 = f32[64,128] broadcast(%v), dimensions={1}
  %b2 = f32[64,256] broadcast(%c), dimensions={0}
  %b3 = f32[8,300] broadcast(%s), dimensions={}
  %b4 = f32[1,8,2,32] broadcast(%m), dimensions={1,3}
  %io = s32[16,256] iota(), iota_dimension=0
  %ic = s32[16,256] iota(), iota_dimension=1
  %if = f32[8,4,128] iota(), iota_dimension=1
  %r1 = f32[1000] multiply(%n, %n)
  %r0 = f32[] add(%s, %s)
  %big = f32[8192] parameter(5)
  %bv = f32[8192] exponential(%big)
  %w = f32[1,1,4096] parameter(6)
  %sb = f32[1,1,4096] broadcast(%s), dimensions={}
  %wv = f32[1,1,4096] multiply(%w, %sb)
  %bb = f32[64,128] broadcast(%c), dimensions={0}
  %e = f32[64,128] add(%b1, %bb)
)";
  checkAll(moduleText(p, body, "%b1, %b2, %b3, %b4, %io, %ic, %if, %r1, %r0, %e, %bv, %wv"), 14);
}

TEST_CASE("reduces over lanes, sublanes and leading dims", "[lowering]") {
  std::string p =
      "  %x = f32[64,256] parameter(0)\n  %y = f32[4,16,128] parameter(1)\n"
      "  %i = s32[16,512] parameter(2)\n  %b = bf16[32,256] parameter(3)\n"
      "  %z = f32[] constant(0)\n  %ninf = f32[] constant(-inf)\n  %inf = f32[] constant(inf)\n"
      "  %zi = s32[] constant(0)\n  %zb = bf16[] constant(0)\n  %one = f32[] constant(1.5)\n";
  std::string body = R"(
  %rows = f32[64] reduce(%x, %z), dimensions={1}, to_apply=%add
  %cols = f32[256] reduce(%x, %ninf), dimensions={0}, to_apply=%max
  %all = f32[] reduce(%x, %z), dimensions={0,1}, to_apply=%add
  %lead = f32[16] reduce(%y, %z), dimensions={0,2}, to_apply=%add
  %mid = f32[4,128] reduce(%y, %inf), dimensions={1}, to_apply=%min
  %si = s32[16] reduce(%i, %zi), dimensions={1}, to_apply=%addi
  %mi = s32[512] reduce(%i, %zi), dimensions={0}, to_apply=%maxi
  %sb = bf16[32] reduce(%b, %zb), dimensions={1}, to_apply=%addb
  %init = f32[64] reduce(%x, %one), dimensions={1}, to_apply=%add
)";
  checkAll(
      moduleText(p, body, "%rows, %cols, %all, %lead, %mid, %si, %mi, %sb, %init", kAddComputation),
      9);
}

TEST_CASE("dots: f32 and bf16 on the MXU, batch dims, transposed RHS, s8", "[lowering]") {
  std::string p =
      "  %a = f32[128,256] parameter(0)\n  %w = f32[256,128] parameter(1)\n"
      "  %ab = bf16[64,384] parameter(2)\n  %wb = bf16[384,256] parameter(3)\n"
      "  %q = f32[4,64,128] parameter(4)\n  %k = f32[4,128,256] parameter(5)\n"
      "  %t = f32[256,256] parameter(6)\n  %i = s8[32,256] parameter(7)\n"
      "  %j = s8[256,128] parameter(8)\n";
  std::string body = R"(
  %d1 = f32[128,128] dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d2 = f32[64,256] dot(%ab, %wb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d3 = f32[4,64,256] dot(%q, %k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %d4 = f32[128,256] dot(%a, %t), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %d5 = s32[32,128] dot(%i, %j), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %d6 = bf16[64,256] dot(%ab, %wb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
)";
  checkAll(moduleText(p, body, "%d1, %d2, %d3, %d4, %d5, %d6"), 6);
}

TEST_CASE("unsupported ops and dtypes are CannotLower naming the instruction", "[lowering]") {
  auto m = parse(R"(HloModule t
ENTRY %e {
  %x = f64[8,128] parameter(0)
  %y = f32[8,128] parameter(1)
  %a = f64[8,128] add(%x, %x), metadata={op_name="jit(f)/add" source_file="model.py" source_line=12}
  %s = f32[8,128] reduce-precision(%y), exponent_bits=5, mantissa_bits=10
  %t = f32[128,8] transpose(%y), dimensions={1,0}
  ROOT %r = tuple(%a, %s, %t)
})");
  hlo::HloComputation* e = m->entry();
  try {
    lower::lowerToKernel(*e->findInstruction("a"), v5e());
    FAIL("f64 was lowered");
  } catch (const lower::CannotLower& err) {
    CHECK(std::string(err.what()) ==
          "cannot lower %a (add) [op_name=\"jit(f)/add\" model.py:12]: f64 cannot be emulated: "
          "the VPU computes in f32 at most (convert to f32 before the computation)");
    CHECK(err.instruction() == "a");
    CHECK(err.opcode() == "add");
  }
  CHECK_THROWS_WITH(
      lower::lowerToKernel(*e->findInstruction("s"), v5e()),
      Catch::Contains("cannot lower %s (reduce-precision): not supported by the back end"));
  CHECK_FALSE(lower::isComputeInstruction(*e->findInstruction("t")));
  CHECK_THROWS_WITH(lower::lowerToKernel(*e->findInstruction("t"), v5e()),
                    Catch::Contains("not a compute instruction"));
}

TEST_CASE("a non-default layout is CannotLower", "[lowering]") {
  auto m = parse(R"(HloModule t
ENTRY %e {
  %x = f32[8,128]{0,1} parameter(0)
  ROOT %n = f32[8,128]{1,0} negate(%x)
})");
  CHECK_THROWS_WITH(lower::lowerToKernel(*m->entry()->root(), v5e()),
                    Catch::Contains("non-default layout"));
}

TEST_CASE("a custom-call to a library kernel (tpu.rms_norm) runs the library kernel",
          "[lowering]") {
  auto m = parse(R"(HloModule t
ENTRY %e {
  %x = f32[1,64,256] parameter(0)
  %w = f32[256] parameter(1)
  ROOT %n = f32[1,64,256] custom-call(%x, %w), custom_call_target="tpu.rms_norm", backend_config="{\"eps\": 1e-5}"
})");
  const hlo::HloInstruction& call = *m->entry()->root();
  REQUIRE(lower::isComputeInstruction(call));
  lower::LoweredKernel k = lower::lowerToKernel(call, v5e());
  CHECK(k.kernel->name == "n");
  CHECK(k.inputOperand == std::vector<int64_t>{0, 1});
  CHECK(k.outputIndex == std::vector<std::vector<int64_t>>{{}});
  std::mt19937_64 rng(3);
  std::vector<kernels::dsl::HostArray> in{
      kernels::dsl::randomArray(k.kernel->inputs[0].shape, kernels::llo::DType::F32, rng),
      kernels::dsl::randomArray(k.kernel->inputs[1].shape, kernels::llo::DType::F32, rng)};
  kernels::dsl::InterpretResult r = kernels::dsl::interpret(*k.kernel, in);
  const kernels::dsl::HostArray& out = r.outputs.at(0);
  for (int64_t row = 0; row < 64; ++row) {
    double ss = 0;
    for (int64_t c = 0; c < 256; ++c) ss += std::pow(in[0].floatAt(row * 256 + c), 2);
    double scale = 1 / std::sqrt(ss / 256 + 1e-5);
    for (int64_t c = 0; c < 256; ++c) {
      double want = in[0].floatAt(row * 256 + c) * scale * in[1].floatAt(c);
      REQUIRE(out.floatAt(row * 256 + c) == Approx(want).epsilon(1e-5).margin(1e-6));
    }
  }
  // A target the library does not have, and operands that do not fit it.
  auto bad = parse(R"(HloModule t
ENTRY %e {
  %x = f32[64,256] parameter(0)
  %w = f32[128] parameter(1)
  %u = f32[64,256] custom-call(%x), custom_call_target="tpu.no_such_kernel"
  ROOT %n = f32[64,256] custom-call(%x, %w), custom_call_target="tpu.rms_norm"
})");
  CHECK_THROWS_WITH(lower::lowerToKernel(*bad->entry()->findInstruction("u"), v5e()),
                    Catch::Contains("cannot lower %u (custom-call): custom-call target "
                                    "\"tpu.no_such_kernel\""));
  CHECK_THROWS_WITH(
      lower::lowerToKernel(*bad->entry()->root(), v5e()),
      Catch::Contains("operand 1 is f32[128] but the library kernel reads f32[1,256]"));
  // An SPMD library kernel (remote copies) is not callable from HLO yet.
  auto spmd = parse(R"(HloModule t
ENTRY %e {
  %x = f32[64,256] parameter(0)
  ROOT %r = f32[64,256] custom-call(%x), custom_call_target="tpu.ring_all_reduce"
})");
  CHECK_THROWS_WITH(lower::lowerToKernel(*spmd->entry()->root(), v5e()),
                    Catch::Contains("an SPMD library kernel (remote copies over 2 chips)"));
}

TEST_CASE("a library call is built for the chip it is compiled for", "[lowering]") {
  // The overlapped flash form splits p x V per MXU: two 256-key dots per
  // 512-key block on v6e's 256x256 MXUs, four 128-key dots on the default's.
  auto m = parse(R"(HloModule t
ENTRY %e {
  %q = bf16[1,1024,128] parameter(0)
  %k = bf16[1,1024,128] parameter(1)
  %v = bf16[1,1024,128] parameter(2)
  ROOT %o = f32[1,1024,128] custom-call(%q, %k, %v), custom_call_target="tpu.flash_attention", backend_config="{\"block_q\": 512, \"block_k\": 512, \"overlap\": true}"
})");
  const kernels::codegen::TargetInfo v6e = kernels::codegen::loadTargetByName("v6e", chipsDir());
  REQUIRE(v6e.mxuSize == 256);
  lower::LoweredKernel lowered = lower::lowerToKernel(*m->entry()->root(), v6e);
  const std::map<std::string, std::string> params{
      {"bh", "1"},        {"seq_q", "1024"},  {"seq_k", "1024"},    {"head_dim", "128"},
      {"block_q", "512"}, {"block_k", "512"}, {"out_dtype", "f32"}, {"overlap", "true"}};
  auto text = [&](const kernels::codegen::TargetInfo* t) {
    auto k = kernels::lib::buildKernel("flash_attention", params, t).trace();
    k->name = lowered.kernel->name;
    k->loc = lowered.kernel->loc;
    return kernels::llo::printKernel(*k);
  };
  const std::string forV6e = text(&v6e), forDefault = text(nullptr);
  CHECK(forV6e != forDefault);
  CHECK(kernels::llo::printKernel(*lowered.kernel) == forV6e);
}
