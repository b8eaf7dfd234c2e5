// The code generator accepts the kernels fusion lowering builds: a few single
// ops and the fusions of a micro trace compile for v5e (bundles, hazard check).
#include "testbench/unit/compiler/LoweringHarness.h"

using namespace lowertest;

namespace {

// Compiles every compute instruction of the entry; returns "name: error" lines.
std::vector<std::string> compileAll(hlo::HloModule& m, int* compiled) {
  std::vector<std::string> errors;
  *compiled = 0;
  for (hlo::HloInstruction* i : m.entry()->postOrder()) {
    if (!lower::isComputeInstruction(*i)) continue;
    std::string e = compileFor(*i);
    if (e.empty())
      ++*compiled;
    else
      errors.push_back(i->name() + ": " + e);
  }
  return errors;
}

}  // namespace

TEST_CASE("single-op kernels compile for v5e", "[lowering][codegen]") {
  auto m = parse(R"(HloModule t
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e {
  %x = f32[256,512] parameter(0)
  %y = f32[256,512] parameter(1)
  %v = f32[512] parameter(2)
  %w = bf16[512,256] parameter(3)
  %z = f32[] constant(0)
  %add = f32[256,512] add(%x, %y)
  %ex = f32[256,512] exponential(%add)
  %b = f32[256,512] broadcast(%v), dimensions={1}
  %mul = f32[256,512] multiply(%ex, %b)
  %red = f32[256] reduce(%mul, %z), dimensions={1}, to_apply=%add
  %xb = bf16[256,512] convert(%x)
  %dot = f32[256,256] dot(%xb, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %r = tuple(%red, %dot)
})");
  int compiled = 0;
  std::vector<std::string> errors = compileAll(*m, &compiled);
  for (const auto& e : errors) UNSCOPED_INFO(e);
  CHECK(errors.empty());
  CHECK(compiled == 7);
}

TEST_CASE("llama_micro_prefill fusions compile for v5e", "[lowering][codegen][traces]") {
  const char* src = std::getenv("TPUSIM_SOURCE_DIR");
  auto m = parseFile(std::string(src ? src : ".") + "/traces/llama_micro_prefill.hlo");
  runPasses(*m, "dce,cse,algsimp,dot-canonicalize,fusion");
  int compiled = 0;
  std::vector<std::string> errors = compileAll(*m, &compiled);
  for (const auto& e : errors) UNSCOPED_INFO(e);
  CHECK(errors.empty());
  CHECK(compiled > 10);
}

TEST_CASE("llama_tiny_prefill fusions compile for v5e", "[lowering][codegen][traces]") {
  const char* src = std::getenv("TPUSIM_SOURCE_DIR");
  auto m = parseFile(std::string(src ? src : ".") + "/traces/llama_tiny_prefill.hlo");
  runPasses(*m, "dce,cse,algsimp,dot-canonicalize,fusion");
  int compiled = 0;
  std::vector<std::string> errors = compileAll(*m, &compiled);
  for (const auto& e : errors) UNSCOPED_INFO(e);
  CHECK(errors.empty());
  CHECK(compiled > 50);
}
