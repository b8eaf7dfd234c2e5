// The external HLO corpus (real dumps of real models and XLA's tests): the
// folder CMake's TPUSIM_HLO_CORPUS names, which ctest passes in the
// environment. A user's clone may not have it, so test cases that read it are
// tagged [corpus] and run as their own ctest test (NAME:corpus, see
// tpusim_add_unit_test's CORPUS), which requireHloCorpus() ends with exit
// status 77 (ctest: skipped) and the reason when the folder is not there.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace tpusim::testing {

// The corpus folder, or "" when it is not configured or not a directory.
inline std::string hloCorpusDir() {
  const char* dir = std::getenv("TPUSIM_HLO_CORPUS");
  if (!dir || !*dir) return "";
  std::error_code ec;
  return std::filesystem::is_directory(dir, ec) ? std::string(dir) : "";
}

// The corpus's .hlo files, sorted (none without the corpus).
inline std::vector<std::string> hloCorpusFiles() {
  std::vector<std::string> files;
  std::string dir = hloCorpusDir();
  if (dir.empty()) return files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".hlo") files.push_back(it->path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// The corpus's files; without the corpus, says why and exits as skipped.
inline std::vector<std::string> requireHloCorpus() {
  std::vector<std::string> files = hloCorpusFiles();
  if (files.empty()) {
    const char* dir = std::getenv("TPUSIM_HLO_CORPUS");
    std::printf(
        "skipped: the external HLO corpus is not there (TPUSIM_HLO_CORPUS='%s'); configure with "
        "-DTPUSIM_HLO_CORPUS=<folder of .hlo files> to run these tests\n",
        dir ? dir : "");
    std::fflush(stdout);
    std::exit(77);
  }
  return files;
}

}  // namespace tpusim::testing
