#include <catch2/catch.hpp>

#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloPrinter.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/passes/PassPipeline.h"
#include "compiler/passes/PassRegistry.h"

using namespace tpusim::hlo;
using namespace tpusim::passes;

static std::unique_ptr<HloModule> parse(const std::string& text) {
  std::string err;
  auto m = parseHloModule(text, &err);
  INFO(err);
  REQUIRE(m);
  return m;
}

static bool runPass(const char* name, HloModule& m) {
  auto pass = createPass(name);
  REQUIRE(pass);
  CHECK(pass->name() == name);
  bool changed = pass->run(m);
  VerifierResult v = verifyModule(m);
  INFO(v.message());
  CHECK(v.ok());
  return changed;
}

TEST_CASE("the registry knows every pass", "[hlo][passes]") {
  for (const auto& n : registeredPassNames()) CHECK(createPass(n));
  CHECK_FALSE(createPass("nope"));
  PassPipeline p;
  std::string err;
  CHECK(p.addPasses("dce,,cse", &err));
  CHECK(p.size() == 2);
  CHECK_FALSE(p.addPasses("dce,nope", &err));
  CHECK(err.find("unknown pass 'nope'") != std::string::npos);
}

TEST_CASE("dce removes dead code and reports changes", "[hlo][passes]") {
  auto m = parse(
      "ENTRY e {\n p = f32[2] parameter(0)\n d = f32[2] negate(p)\n"
      " ROOT r = f32[2] abs(p)\n}\n");
  CHECK(runPass("dce", *m));
  CHECK(m->entry()->instructionCount() == 2);
  CHECK_FALSE(runPass("dce", *m));
}

TEST_CASE("cse merges equal instructions", "[hlo][passes]") {
  auto m = parse(
      "ENTRY e {\n p = f32[2] parameter(0)\n a = f32[2] negate(p)\n"
      " b = f32[2] negate(p)\n ROOT r = f32[2] add(a, b)\n}\n");
  CHECK(runPass("cse", *m));
  HloInstruction* r = m->entry()->root();
  CHECK(r->operand(0) == r->operand(1));
  CHECK(m->entry()->instructionCount() == 3);
}

TEST_CASE("algsimp identities", "[hlo][passes]") {
  auto m = parse(
      "ENTRY e {\n p = f32[2,3] parameter(0)\n one = f32[] constant(1)\n"
      " ones = f32[2,3] broadcast(one), dimensions={}\n"
      " m = f32[2,3] multiply(p, ones)\n"
      " t1 = f32[3,2] transpose(m), dimensions={1,0}\n"
      " ROOT t2 = f32[2,3] transpose(t1), dimensions={1,0}\n}\n");
  CHECK(runPass("algsimp", *m));
  CHECK(m->entry()->root()->name() == "p");
  CHECK(m->entry()->instructionCount() == 1);
}

TEST_CASE("constant folding computes values", "[hlo][passes]") {
  auto m = parse(
      "ENTRY e {\n a = s32[2] constant({2147483647, 5})\n"
      " b = s32[2] constant({1, -7})\n ROOT s = s32[2] add(a, b)\n}\n");
  CHECK(runPass("constant-folding", *m));
  const Literal* l = m->entry()->root()->literal();
  REQUIRE(l);
  CHECK(l->getInt(0) == INT32_MIN);  // wraps around
  CHECK(l->getInt(1) == -2);
}

TEST_CASE("dot canonicalization keeps the numbers' layout of dims", "[hlo][passes]") {
  auto m = parse(
      "ENTRY e {\n a = f32[5,2,3] parameter(0)\n b = f32[3,4] parameter(1)\n"
      " ROOT d = f32[5,2,4] dot(a, b), lhs_contracting_dims={2}, "
      "rhs_contracting_dims={0}\n}\n");
  CHECK(runPass("dot-canonicalize", *m));
  HloInstruction* root = m->entry()->root();
  CHECK(root->opcode() == HloOpcode::Reshape);
  HloInstruction* dot = root->operand(0);
  CHECK(dot->opcode() == HloOpcode::Dot);
  CHECK(dot->shape().dims == std::vector<int64_t>{1, 10, 4});
  CHECK(dot->operand(0)->shape().dims == std::vector<int64_t>{1, 10, 3});
  CHECK(dot->operand(1)->shape().dims == std::vector<int64_t>{1, 3, 4});
  CHECK_FALSE(runPass("dot-canonicalize", *m));
}

TEST_CASE("inlining replaces calls", "[hlo][passes]") {
  auto m = parse(
      "f {\n x = f32[2] parameter(0)\n ROOT n = f32[2] negate(x)\n}\n"
      "ENTRY e {\n p = f32[2] parameter(0)\n ROOT c = f32[2] call(p), to_apply=f\n}\n");
  CHECK(runPass("inline", *m));
  CHECK(m->computations().size() == 1);
  CHECK(m->entry()->root()->opcode() == HloOpcode::Negate);
}

TEST_CASE("the pipeline verifies after each pass and dumps", "[hlo][passes]") {
  auto m = parse("ENTRY e {\n p = f32[2] parameter(0)\n ROOT r = f32[2] negate(p)\n}\n");
  // A pass that breaks the module is caught by the verifier.
  struct Breaker : HloPass {
    std::string_view name() const override { return "breaker"; }
    bool run(HloModule& mod) override {
      mod.entry()->root()->setShape(Shape::array(PrimitiveType::F32, {3}));
      return true;
    }
  };
  PassPipeline p;
  p.addPass(std::make_unique<Breaker>());
  std::string err;
  CHECK_FALSE(p.run(*m, &err));
  CHECK(err.find("after pass 'breaker'") != std::string::npos);
}
