// tpu-as: assembles tpusim assembly (isa/README.md, "Assembly language") into
// a .tpuprog file. Errors are printed as file:line:col: error: ... with the
// source line and a caret, every error of the file (up to --max-errors).
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <cstdio>

#include "isa/Assembler.h"
#include "isa/ProgramFile.h"
#include "isa/support/InputFile.h"
#include "isa/support/ParseCommandLine.h"
#include "isa/support/RunFiles.h"

namespace cl = llvm::cl;
using namespace tpusim::isa;

static cl::OptionCategory category("tpu-as options");
static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input.s | ->"), cl::Required,
                                      cl::cat(category));
static cl::opt<std::string> outputPath("o",
                                       cl::desc("Output .tpuprog file ('-' for stdout; default: "
                                                "the input name with .tpuprog)"),
                                       cl::value_desc("file"), cl::cat(category));
static cl::opt<unsigned> maxErrors("max-errors", cl::desc("Stop after this many errors"),
                                   cl::init(20), cl::cat(category));

static int fail(const std::string& message) {
  fmt::print(stderr, "tpu-as: error: {}\n", message);
  return 1;
}

int main(int argc, char** argv) {
  cl::HideUnrelatedOptions(category);
  tpusim::support::parseCommandLineOrExit(argc, argv,
                                          "tpusim assembler: assembly text -> .tpuprog\n\n"
                                          "  tpu-as kernel.s -o kernel.tpuprog\n");
  std::string out = outputPath;
  if (out.empty()) {
    if (inputPath == "-") return fail("reading from stdin needs -o <file>");
    llvm::SmallString<256> p(inputPath.getValue());
    llvm::sys::path::replace_extension(p, "tpuprog");
    out = std::string(p);
  }
  tpusim::support::RunFiles files;
  files.input("the input file", inputPath);
  files.output(outputPath.empty() ? "the output (IN with .tpuprog, no -o given)" : "-o", out);
  if (std::string clash = files.clash(); !clash.empty()) return fail(clash);
  if (inputPath != "-")
    if (auto problem = tpusim::support::inputFileProblem(inputPath))
      return fail(fmt::format("{}: {}", inputPath, *problem));

  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputPath);
  if (!buffer)
    return fail(fmt::format("{}: cannot read: {}", inputPath, buffer.getError().message()));
  std::string name = inputPath == "-" ? "<stdin>" : inputPath.getValue();

  Program program;
  std::vector<Diagnostic> diagnostics;
  AssemblerOptions options;
  options.maxErrors = int(maxErrors ? maxErrors : 1);
  if (!assemble((*buffer)->getBuffer().str(), name, &program, &diagnostics, options)) {
    for (const Diagnostic& d : diagnostics) fmt::print(stderr, "{}", formatDiagnostic(d));
    size_t errors = diagnostics.size();
    if (!diagnostics.empty() && diagnostics.back().line == 0) --errors;  // "too many errors"
    fmt::print(stderr, "{} error{} generated.\n", errors, errors == 1 ? "" : "s");
    return 1;
  }
  std::string error;
  if (!writeProgramFile(program, out, &error)) return fail(error);
  return 0;
}
