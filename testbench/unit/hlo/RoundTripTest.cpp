// Every test input and every file of the external HLO corpus: parse -> print ->
// parse -> print gives equal text and structurally equal modules, and verifies.
#include <catch2/catch.hpp>

#include "TestFiles.h"
#include "compiler/hlo/HloEquality.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloPrinter.h"
#include "compiler/hlo/HloVerifier.h"
#include "testbench/unit/HloCorpus.h"

using namespace tpusim::hlo;

static std::string printAll(const ParseResult& r) {
  std::vector<const HloModule*> ms;
  for (const auto& m : r.modules) ms.push_back(m.get());
  return printModules(ms);
}

static void checkRoundTrips(const std::vector<std::string>& files) {
  for (const auto& f : files) {
    INFO(f);
    ParseResult first = parseHloFile(f);
    INFO(first.error);
    REQUIRE(first.ok());
    for (const auto& m : first.modules) {
      VerifierResult v = verifyModule(*m);
      INFO(v.message());
      CHECK(v.ok());
    }
    std::string text1 = printAll(first);
    ParseResult second = parseHloText(text1, f + ".printed");
    INFO(second.error);
    REQUIRE(second.ok());
    REQUIRE(second.modules.size() == first.modules.size());
    for (size_t i = 0; i < first.modules.size(); ++i) {
      std::string why;
      bool equal = modulesEqual(*first.modules[i], *second.modules[i], &why);
      INFO(why);
      CHECK(equal);
    }
    CHECK(printAll(second) == text1);
  }
}

TEST_CASE("every test input round-trips through the printer", "[hlo][roundtrip]") {
  auto files = hlotest::hloFiles(/*corpus=*/false);
  REQUIRE(files.size() >= 10);
  checkRoundTrips(files);
}

TEST_CASE("every corpus HLO file round-trips through the printer", "[hlo][roundtrip][corpus]") {
  auto files = tpusim::testing::requireHloCorpus();
  REQUIRE(files.size() >= 20);
  checkRoundTrips(files);
}
