// Helpers shared by the config tests: preset text and error capture.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "isa/target/ChipJson.h"
#include "isa/target/ChipLoader.h"
#include "isa/target/ConfigError.h"

namespace tpusim::target::test {

inline std::string readText(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string presetText(const std::string& name) {
  return readText(target::resolveChipPath(name));
}

// Runs `f` and returns the target::ConfigError message it throws ("" when it does not throw).
template <class F>
std::string configError(F&& f) {
  try {
    f();
  } catch (const target::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace tpusim::target::test
