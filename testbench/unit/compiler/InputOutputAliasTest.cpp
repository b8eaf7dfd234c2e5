// The module header's input_output_alias (compiler/lower/buffers/InputOutputAlias.h).
#include <catch2/catch.hpp>

#include "compiler/hlo/HloParser.h"
#include "compiler/lower/buffers/InputOutputAlias.h"

using namespace tpusim;

namespace {

std::unique_ptr<hlo::HloModule> moduleWithHeader(const std::string& header) {
  std::string text = "HloModule m" + header +
                     "\n\nENTRY main {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
                     "  ROOT t = (f32[4], f32[4]) tuple(a, b)\n}\n";
  std::string error;
  auto m = hlo::parseHloModule(text, &error);
  INFO(error);
  REQUIRE(m);
  return m;
}

}  // namespace

TEST_CASE("input_output_alias: whole-parameter donations by output index") {
  auto m = moduleWithHeader(
      ", input_output_alias={ {1}: (0, {}, may-alias), {0}: (1, {}, must-alias), "
      "{2, 1}: (1, {0}, may-alias) }");
  auto aliases = lower::inputOutputAliases(*m);
  REQUIRE(aliases.size() == 2);  // the parameter-element alias {0} is not used
  CHECK(lower::donatedParameter(aliases, {1}) == 0);
  CHECK(lower::donatedParameter(aliases, {0}) == 1);
  CHECK_FALSE(lower::donatedParameter(aliases, {2, 1}));
  CHECK_FALSE(lower::donatedParameter(aliases, {}));
}

TEST_CASE("input_output_alias: absent, empty and malformed") {
  CHECK(lower::inputOutputAliases(*moduleWithHeader("")).empty());
  CHECK(lower::inputOutputAliases(*moduleWithHeader(", input_output_alias={}")).empty());
  CHECK_THROWS_WITH(
      lower::inputOutputAliases(*moduleWithHeader(", input_output_alias={ {1}: (x, {}) }")),
      Catch::Contains("expected a number at character"));
}
