#include <catch2/catch.hpp>

#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloPrinter.h"

using namespace tpusim::hlo;

static std::unique_ptr<HloModule> parseOk(const std::string& text) {
  std::string err;
  auto m = parseHloModule(text, &err, "test.hlo");
  INFO(err);
  REQUIRE(m);
  return m;
}

static std::string parseError(const std::string& text) {
  ParseResult r = parseHloText(text, "test.hlo");
  REQUIRE_FALSE(r.ok());
  CHECK(r.modules.empty());
  return r.error;
}

TEST_CASE("modules without header or ENTRY take the last computation", "[hlo][parser]") {
  auto m = parseOk("a {\n ROOT p = f32[] parameter(0)\n}\nb {\n ROOT q = s32[] parameter(0)\n}\n");
  CHECK(m->name() == "module");
  REQUIRE(m->entry());
  CHECK(m->entry()->name() == "b");
  CHECK(m->computations().size() == 2);
}

TEST_CASE("header attributes are kept in order", "[hlo][parser]") {
  auto m = parseOk(
      "HloModule m, is_scheduled=true, replica_count=4, num_partitions=2, "
      "entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n"
      "ENTRY e {\n ROOT p = f32[2]{0} parameter(0)\n}\n");
  CHECK(m->name() == "m");
  REQUIRE(m->headerAttributes().size() == 4);
  CHECK(m->headerAttributes()[3].second == "{(f32[2]{0})->f32[2]{0}}");
  CHECK(m->replicaCount() == 4);
  CHECK(m->numPartitions() == 2);
}

TEST_CASE("several modules separated by // -----", "[hlo][parser]") {
  ParseResult r = parseHloText(
      "HloModule a\nENTRY e {\n ROOT p = f32[] parameter(0)\n}\n// -----\n"
      "HloModule b\nENTRY e {\n ROOT p = f32[] parameter(0)\n}\n// -----\n",
      "x.hlo");
  REQUIRE(r.ok());
  REQUIRE(r.modules.size() == 2);
  CHECK(r.modules[1]->name() == "b");
  // Errors in the second module name its own line.
  std::string err = parseError(
      "HloModule a\nENTRY e {\n ROOT p = f32[] parameter(0)\n}\n// -----\n"
      "HloModule b\nENTRY e {\n ROOT p = f32[] bogus(0)\n}\n");
  CHECK(err.find("test.hlo:8:17: error: unknown opcode 'bogus'") == 0);
}

TEST_CASE("operands with and without shapes, names with and without %", "[hlo][parser]") {
  auto m = parseOk(
      "ENTRY %e {\n  %p = f32[2]{0} parameter(0)\n  q.1..x = f32[2] negate(p)\n"
      "  ROOT r-2 = f32[2] add(f32[2]{0} %p, /*index=1*/q.1..x)\n}\n");
  HloInstruction* r = m->entry()->root();
  CHECK(r->name() == "r-2");
  REQUIRE(r->operandCount() == 2);
  CHECK(r->operand(1)->name() == "q.1..x");
  CHECK(r->operand(0)->users().size() == 2);
}

TEST_CASE("constants: scalars, arrays, specials, tuples, elided", "[hlo][parser]") {
  auto m = parseOk(
      "ENTRY e {\n"
      "  a = f32[2,2] constant({ {1, 2.5}, {-inf, nan} })\n"
      "  b = bf16[] constant(0.1)\n"
      "  c = u64[] constant(18446744073709551615)\n"
      "  d = pred[2] constant({true, false})\n"
      "  e = (s32[], f32[1]) constant((3, {4}))\n"
      "  f = f32[100] constant({...})\n"
      "  ROOT t = (f32[2,2], bf16[], u64[], pred[2]) tuple(a, b, c, d)\n}\n");
  const HloComputation* c = m->entry();
  const Literal* a = c->findInstruction("a")->literal();
  REQUIRE(a);
  CHECK(a->size() == 4);
  CHECK(a->getDouble(1) == 2.5);
  CHECK(std::isinf(a->getDouble(2)));
  CHECK(std::isnan(a->getDouble(3)));
  CHECK(c->findInstruction("b")->literal()->getDouble(0) == 0.10009765625);  // rounded to bf16
  CHECK(c->findInstruction("c")->literal()->getUnsigned(0) == UINT64_MAX);
  CHECK(c->findInstruction("d")->literal()->getInt(1) == 0);
  CHECK(c->findInstruction("e")->literal()->elements.size() == 2);
  CHECK(c->findInstruction("e")->literal()->elements[1].getDouble(0) == 4);
  CHECK(c->findInstruction("f")->literal()->elided);
  CHECK(c->findInstruction("a")->literal()->toString() == "{ {1, 2.5}, {-inf, nan} }");
}

TEST_CASE("typed attributes", "[hlo][parser]") {
  auto m = parseOk(
      "add {\n x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y)\n}\n"
      "ENTRY e {\n"
      "  p = f32[4,6] parameter(0)\n"
      "  s = f32[2,3] slice(p), slice={[0:4:2], [1:4]}\n"
      "  d = f32[4,4] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
      "  z = f32[] constant(0)\n"
      "  pd = f32[6,7] pad(p, z), padding=1_1x0_1_0\n"
      "  ar = f32[4,6] all-reduce(p), replica_groups=[2,2]<=[2,2]T(1,0), channel_id=3, "
      "to_apply=add, backend_config={\"x\": 1}\n"
      "  rw = f32[2,3] reduce-window(p, z), window={size=2x2 stride=2x2 pad=0_0x0_0}, "
      "to_apply=add\n"
      "  cc = f32[1] custom-call(p), custom_call_target=\"foo\", backend_config=\"\\000a\", "
      "sharding={maximal device=0}, frontend_attributes={k=\"v\"}, "
      "metadata={op_name=\"n\" source_line=7 profile_type={1}}, unknown_thing=[1,2]<=[2]\n"
      "  ROOT t = tuple(s, d, pd, ar, rw, cc)\n}\n");
  const HloComputation* c = m->entry();
  const auto& s = c->findInstruction("s")->attrs();
  REQUIRE(s.slice);
  CHECK((*s.slice)[0].stride == 2);
  CHECK((*s.slice)[1].stride == 1);
  CHECK(c->findInstruction("d")->attrs().dot.rhsContracting == std::vector<int64_t>{1});
  const auto& pad = *c->findInstruction("pd")->attrs().padding;
  CHECK(pad[1].high == 1);
  const auto& ar = *c->findInstruction("ar");
  REQUIRE(ar.attrs().replicaGroups);
  CHECK(ar.attrs().replicaGroups->expand() == std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}});
  CHECK(*ar.attrs().channelId == 3);
  CHECK(ar.toApply() == m->findComputation("add"));
  CHECK(ar.attrs().backendConfig->kind == BackendConfig::Kind::Braced);
  CHECK((*c->findInstruction("rw")->attrs().window)[1].stride == 2);
  const auto& cc = *c->findInstruction("cc");
  CHECK(*cc.attrs().customCallTarget == "foo");
  CHECK(unescapeHloString(cc.attrs().backendConfig->text) == std::string("\0a", 2));
  CHECK(*cc.attrs().sharding == "{maximal device=0}");
  CHECK(cc.attrs().metadata.sourceLine == 7);
  CHECK(cc.attrs().metadata.other.size() == 1);
  REQUIRE(cc.findGeneric("unknown_thing"));
  CHECK(cc.findGeneric("unknown_thing")->value.s == "[1,2]<=[2]");
  CHECK(printAttributes(cc).find("unknown_thing=[1,2]<=[2]") != std::string::npos);
  // Shape inferred for the tuple written without one.
  CHECK(c->root()->shape().tupleShapes.size() == 6);
}

TEST_CASE("errors carry file:line:col, the line and a caret", "[hlo][parser]") {
  std::string err = parseError("ENTRY e {\n  ROOT p = f32[2] parameter(0), dimensions={1,\n}\n");
  CHECK(err.find("test.hlo:3:1: error:") == 0);
  err = parseError("ENTRY e {\n\tROOT x = f32[2] nope(p)\n}\n");
  CHECK(err ==
        "test.hlo:2:18: error: unknown opcode 'nope'\n\tROOT x = f32[2] nope(p)\n\t"
        "                ^");
  CHECK(parseError("").find("no HLO module") != std::string::npos);
  CHECK(parseError("HloModule").find("expected a module name") != std::string::npos);
}
