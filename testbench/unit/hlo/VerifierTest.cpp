#include <catch2/catch.hpp>

#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloVerifier.h"

using namespace tpusim::hlo;

static std::string verifyError(const std::string& text) {
  std::string err;
  auto m = parseHloModule(text, &err, "v.hlo");
  INFO(err);
  REQUIRE(m);
  VerifierResult r = verifyModule(*m);
  REQUIRE_FALSE(r.ok());
  return r.errors.front();
}

TEST_CASE("verifier accepts well-formed modules", "[hlo][verifier]") {
  std::string err;
  auto m = parseHloModule(
      "add {\n x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y)\n}\n"
      "ENTRY e {\n  p = f32[2,3] parameter(0)\n  z = f32[] constant(0)\n"
      "  r = f32[2] reduce(p, z), dimensions={1}, to_apply=add\n"
      "  b = f32[2,3] broadcast(r), dimensions={0}\n"
      "  t = f32[3,2] transpose(b), dimensions={1,0}\n"
      "  d = f32[2,2] dot(p, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  c = pred[2,2] compare(d, d), direction=EQ\n"
      "  s = f32[2,2] select(c, d, d)\n"
      "  i = s32[2,2] iota(), iota_dimension=1\n"
      "  cv = f32[2,2] convert(i)\n"
      "  cat = f32[4,2] concatenate(s, cv), dimensions={0}\n"
      "  ROOT tup = (f32[4,2], f32[6]) tuple(cat, f32[6] reshape(p))\n}\n",
      &err);
  // "reshape(p)" inline is not HLO: the operand list only takes names.
  CHECK_FALSE(m);
  m = parseHloModule(
      "add {\n x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y)\n}\n"
      "ENTRY e {\n  p = f32[2,3] parameter(0)\n  z = f32[] constant(0)\n"
      "  r = f32[2] reduce(p, z), dimensions={1}, to_apply=add\n"
      "  b = f32[2,3] broadcast(r), dimensions={0}\n"
      "  t = f32[3,2] transpose(b), dimensions={1,0}\n"
      "  d = f32[2,2] dot(p, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  c = pred[2,2] compare(d, d), direction=EQ\n"
      "  s = f32[2,2] select(c, d, d)\n"
      "  i = s32[2,2] iota(), iota_dimension=1\n"
      "  cv = f32[2,2] convert(i)\n"
      "  cat = f32[4,2] concatenate(s, cv), dimensions={0}\n"
      "  rs = f32[6] reshape(p)\n"
      "  ROOT tup = (f32[4,2], f32[6]) tuple(cat, rs)\n}\n",
      &err);
  REQUIRE(m);
  VerifierResult r = verifyModule(*m);
  INFO(r.message());
  CHECK(r.ok());
}

TEST_CASE("verifier errors name the instruction and the problem", "[hlo][verifier]") {
  CHECK(verifyError("ENTRY e {\n a = f32[2] parameter(0)\n ROOT r = f32[3] negate(a)\n}\n") ==
        "v.hlo:3: error: in computation %e, instruction %r (negate): operand 0 has shape "
        "f32[2], the result has f32[3]");
  CHECK(verifyError("ENTRY e {\n a = f32[2,3] parameter(0)\n ROOT r = f32[5] reshape(a)\n}\n")
            .find("changes the element count") != std::string::npos);
  CHECK(verifyError("ENTRY e {\n a = f32[2,3] parameter(0)\n b = f32[2,3] parameter(1)\n"
                    " ROOT r = f32[2,2] dot(a, b), lhs_contracting_dims={1}, "
                    "rhs_contracting_dims={0}\n}\n")
            .find("contracting dimension 0 has size 3 in lhs and 2 in rhs") != std::string::npos);
  CHECK(verifyError("ENTRY e {\n a = f32[2] parameter(0)\n ROOT r = (f32[2]) tuple(a, a)\n}\n")
            .find("does not match") != std::string::npos);
  CHECK(verifyError("ENTRY e {\n a = (f32[2]) parameter(0)\n ROOT r = f32[2] "
                    "get-tuple-element(a), index=1\n}\n")
            .find("out of range") != std::string::npos);
  CHECK(verifyError("ENTRY e {\n a = f32[2] parameter(0)\n ROOT r = f32[2] custom-call(a)\n}\n")
            .find("custom_call_target") != std::string::npos);
}

TEST_CASE("verifier catches broken IR built by hand", "[hlo][verifier]") {
  std::string err;
  auto m =
      parseHloModule("ENTRY e {\n a = f32[2] parameter(0)\n ROOT r = f32[2] negate(a)\n}\n", &err);
  REQUIRE(m);
  HloComputation* e = m->entry();
  // An operand from another module's computation.
  HloModule other("other");
  auto* oc = other.addComputation(std::make_unique<HloComputation>("x"));
  auto* foreign = oc->addInstruction(
      HloInstruction::create(HloOpcode::Parameter, "f", Shape::array(PrimitiveType::F32, {2})));
  e->root()->replaceOperand(0, foreign);
  VerifierResult r = verifyModule(*m);
  REQUIRE_FALSE(r.ok());
  CHECK(r.errors.front().find("not an instruction of this computation") != std::string::npos);
  e->root()->replaceOperand(0, e->findInstruction("a"));
  CHECK(verifyModule(*m).ok());
}
