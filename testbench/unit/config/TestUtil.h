// Helpers shared by the config tests: preset text and error capture.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/config/ChipJson.h"
#include "sim/config/ChipLoader.h"
#include "sim/config/ConfigError.h"

namespace tpusim::sim::test {

inline std::string readText(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string presetText(const std::string& name) { return readText(resolveChipPath(name)); }

// Runs `f` and returns the ConfigError message it throws ("" when it does not throw).
template <class F>
std::string configError(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace tpusim::sim::test
