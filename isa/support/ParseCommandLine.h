// Command-line parsing for every tool: llvm::cl's own errors ("tpusim: Unknown
// command line argument '--x'") get the "error:" every other tool error has,
// and exit status 1. Header-only: each tool's main is compiled the way
// llvm::cl needs (without RTTI), the helper libraries are not.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tpusim::support {

inline void parseCommandLineOrExit(int argc, char** argv, llvm::StringRef overview) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (llvm::cl::ParseCommandLineOptions(argc, argv, overview, &os)) return;
  os.flush();
  std::string tool = argc > 0 ? argv[0] : "tool";
  if (size_t slash = tool.rfind('/'); slash != std::string::npos) tool = tool.substr(slash + 1);
  const std::string prefix = tool + ": ";
  size_t start = 0;
  while (start < errors.size()) {
    size_t end = errors.find('\n', start);
    if (end == std::string::npos) end = errors.size();
    std::string line = errors.substr(start, end - start);
    if (line.rfind(prefix, 0) == 0 && line.compare(prefix.size(), 7, "error: ") != 0)
      line.insert(prefix.size(), "error: ");
    std::fprintf(stderr, "%s\n", line.c_str());
    start = end + 1;
  }
  std::exit(1);
}

}  // namespace tpusim::support
