// tpu-objdump: shows a .tpuprog file. The output is assembly text (headers
// and the entry signature as comments): with every section selected (the
// default), tpu-as reads it back into the identical file, less the signature.
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include "isa/Disassembler.h"
#include "isa/ProgramFile.h"
#include "isa/support/ParseCommandLine.h"

namespace cl = llvm::cl;
using namespace tpusim::isa;

static cl::OptionCategory category("tpu-objdump options");
static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<file.tpuprog | ->"), cl::Required,
                                      cl::cat(category));
static cl::opt<bool> headers("headers", cl::desc("File header, section table and .chip"),
                             cl::cat(category));
static cl::alias headersShort("h", cl::desc("Alias for --headers"), cl::aliasopt(headers),
                              cl::cat(category));
static cl::opt<bool> buffers("buffers", cl::desc("Buffer table (.buffer)"), cl::cat(category));
static cl::opt<bool> signature("signature",
                               cl::desc("The entry signature: parameters, results and aliases "
                                        "with the buffers holding them (programs from tpuc)"),
                               cl::cat(category));
static cl::opt<bool> data("data", cl::desc("Data segments (.data, .dma_descriptor)"),
                          cl::cat(category));
static cl::opt<bool> symbols("symbols", cl::desc("Symbols (.symbol)"), cl::cat(category));
static cl::alias symbolsShort("t", cl::desc("Alias for --symbols"), cl::aliasopt(symbols),
                              cl::cat(category));
static cl::opt<bool> debugMap("debug-map", cl::desc("Debug map (.op)"), cl::cat(category));
static cl::opt<bool> costs("costs", cl::desc("Cost table (.cost)"), cl::cat(category));
static cl::opt<bool> disassemble("disassemble", cl::desc("Code, annotated with the debug map"),
                                 cl::cat(category));
static cl::alias disassembleShort("d", cl::desc("Alias for --disassemble"),
                                  cl::aliasopt(disassemble), cl::cat(category));
static cl::opt<bool> all("all", cl::desc("Everything (the default when nothing is selected)"),
                         cl::cat(category));
static cl::opt<bool> noAnnotate("no-annotate",
                                cl::desc("No debug-map comments or bundle numbers in the code"),
                                cl::cat(category));

static void printHeaders(const ProgramFileInfo& info) {
  fmt::print("// {}: tpuprog format {}.{}, {} bytes, checksum 0x{:016x}\n", inputPath.getValue(),
             info.versionMajor, info.versionMinor, info.fileSize, info.checksum);
  fmt::print("// ISA fingerprint 0x{:08x}, {}-byte bundles\n", info.isaFingerprint,
             info.bundleBytes);
  fmt::print("// {:<10} {:>10} {:>10} {:>8}\n", "section", "offset", "size", "records");
  for (const ProgramFileInfo::Section& s : info.sections)
    fmt::print("// {:<10} {:>#10x} {:>10} {:>8}\n", s.name, s.offset, s.size, s.count);
  if (info.bodies || info.instances)
    fmt::print(
        "// shared code: {} bundles run, {} stored outside the bodies; {} bodies of {} bundles, "
        "{} instances with {} patched operands\n",
        info.bundles, info.ownBundles, info.bodies, info.bodyBundles, info.instances, info.patches);
}

int main(int argc, char** argv) {
  cl::HideUnrelatedOptions(category);
  tpusim::support::parseCommandLineOrExit(
      argc, argv,
      "tpusim object dumper: shows a .tpuprog as assembly text\n\n"
      "  tpu-objdump kernel.tpuprog          (everything)\n"
      "  tpu-objdump -d kernel.tpuprog       (code only)\n");
  Program program;
  ProgramFileInfo info;
  std::string error;
  if (!readProgramFile(inputPath, &program, &error, &info)) {
    fmt::print(stderr, "tpu-objdump: error: {}\n", error);
    return 1;
  }
  bool none = !headers && !buffers && !signature && !data && !symbols && !debugMap && !costs &&
              !disassemble;
  bool every = all || none;
  DisassemblyOptions options;
  options.chip = every || headers;
  options.buffers = every || buffers;
  options.signature = every || signature;
  options.data = every || data;
  options.symbols = every || symbols;
  options.debugMap = every || debugMap;
  options.costs = every || costs;
  options.code = every || disassemble;
  options.annotate = !noAnnotate;
  if (every || headers) printHeaders(info);
  fmt::print("{}", disassembleProgram(program, options));
  return 0;
}
