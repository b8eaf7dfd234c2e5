// tpu-isa-doc: prints the ISA reference (docs/isa-reference.md) generated from
// the tables. --check FILE compares instead, for the staleness test.
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstdio>

#include "isa/IsaDoc.h"
#include "isa/support/ParseCommandLine.h"
#include "isa/support/RunFiles.h"

namespace cl = llvm::cl;

static cl::OptionCategory category("tpu-isa-doc options");
static cl::opt<std::string> outputPath("o", cl::desc("Write to this file instead of stdout"),
                                       cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> checkPath(
    "check", cl::desc("Compare with this file; exit 1 with a message if it differs"),
    cl::value_desc("file"), cl::cat(category));

int main(int argc, char** argv) {
  cl::HideUnrelatedOptions(category);
  tpusim::support::parseCommandLineOrExit(
      argc, argv,
      "tpusim ISA reference generator (Markdown, from isa/*.def)\n\n"
      "  tpu-isa-doc -o docs/isa-reference.md\n");
  tpusim::support::RunFiles files;
  files.input("the --check file", checkPath);
  files.output("-o", outputPath);
  if (std::string clash = files.clash(); !clash.empty()) {
    fmt::print(stderr, "tpu-isa-doc: error: {}\n", clash);
    return 1;
  }
  std::string doc = tpusim::isa::generateIsaReference();
  if (!checkPath.empty()) {
    auto buffer = llvm::MemoryBuffer::getFile(checkPath);
    if (!buffer) {
      fmt::print(stderr, "tpu-isa-doc: error: {}: cannot read: {}\n", checkPath.getValue(),
                 buffer.getError().message());
      return 1;
    }
    if ((*buffer)->getBuffer() != doc) {
      fmt::print(stderr,
                 "tpu-isa-doc: error: {} is stale: it differs from what the tables in isa/*.def "
                 "generate.\nRegenerate it with: build/bin/tpu-isa-doc -o docs/isa-reference.md\n",
                 checkPath.getValue());
      return 1;
    }
    return 0;
  }
  if (outputPath.empty() || outputPath == "-") {
    fmt::print("{}", doc);
    return 0;
  }
  FILE* f = std::fopen(outputPath.c_str(), "wb");
  if (!f || std::fwrite(doc.data(), 1, doc.size(), f) != doc.size() || std::fclose(f) != 0) {
    fmt::print(stderr, "tpu-isa-doc: error: {}: cannot write\n", outputPath.getValue());
    return 1;
  }
  return 0;
}
