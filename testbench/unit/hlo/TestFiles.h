// The HLO files the tests run over: ../shared/hlo/*.hlo and testbench/lit/hlo/**.hlo.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hlotest {

inline std::string envOr(const char* var, const char* fallback) {
  const char* v = std::getenv(var);
  return v && *v ? v : fallback;
}

inline std::vector<std::string> hloFiles(bool includeOwn = true) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::vector<fs::path> dirs = {fs::path(envOr("TPUSIM_SHARED_DIR", TPUSIM_TEST_SHARED_DIR)) /
                                "hlo"};
  if (includeOwn)
    dirs.push_back(fs::path(envOr("TPUSIM_SOURCE_DIR", TPUSIM_TEST_SOURCE_DIR)) / "testbench" /
                   "lit" / "hlo");
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".hlo") files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace hlotest
