// The HLO files the tests run over: testbench/lit/hlo/**.hlo and, when
// present, the external HLO corpus (HloCorpus.h).
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

// The project's own test inputs and, with `corpus`, the external corpus's files.
inline std::vector<std::string> hloFiles(bool corpus = true) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::vector<fs::path> dirs = {fs::path(envOr("TPUSIM_SOURCE_DIR", TPUSIM_TEST_SOURCE_DIR)) /
                                "testbench" / "lit" / "hlo"};
  if (corpus) dirs.push_back(fs::path(envOr("TPUSIM_HLO_CORPUS", TPUSIM_TEST_HLO_CORPUS)));
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
