// What the HLO-level unit tests (fusion, lowering, data movement) share:
// parsing with the error in the test's output, and the chip presets folder.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <memory>
#include <string>

#include "compiler/hlo/HloModule.h"
#include "compiler/hlo/HloParser.h"

namespace tpusim::testing {

// HLO text -> module; the test fails with the parser's error.
inline std::unique_ptr<hlo::HloModule> parseHlo(const std::string& text) {
  std::string err;
  auto m = hlo::parseHloModule(text, &err, "test.hlo");
  INFO(err);
  REQUIRE(m);
  return m;
}

// The one module of an .hlo file; the test fails with the parser's error.
inline std::unique_ptr<hlo::HloModule> parseHloFileModule(const std::string& path) {
  hlo::ParseResult r = hlo::parseHloFile(path);
  INFO(r.error);
  REQUIRE(r.ok());
  REQUIRE(r.modules.size() == 1);
  return std::move(r.modules[0]);
}

// sim/chips of the source tree: $TPUSIM_SOURCE_DIR (set by ctest), else the
// directory CMake compiled in, else the working directory.
inline std::string presetsDir() {
  const char* src = std::getenv("TPUSIM_SOURCE_DIR");
#ifdef TPUSIM_TEST_SOURCE_DIR
  const char* fallback = TPUSIM_TEST_SOURCE_DIR;
#else
  const char* fallback = ".";
#endif
  return std::string(src ? src : fallback) + "/sim/chips";
}

}  // namespace tpusim::testing
