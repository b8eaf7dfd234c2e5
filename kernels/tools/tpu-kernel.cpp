// tpu-kernel: compiles a library kernel (kernels/lib/Registry.h) for a chip
// preset into a .tpuprog, and optionally runs it in interpret mode on seeded random inputs, writing
// the inputs and outputs as .npy (bf16 as uint16 bits) so a simulator run on the same inputs can be
// compared bit for bit.
//
//   tpu-kernel --list
//   tpu-kernel matmul --m 512 --n 512 --k 512 --dtype bf16 --chip v5e -o mm.tpuprog
//   tpu-kernel softmax --rows 64 --cols 256 --interpret-dir out/ --dump-ir
//   tpu-kernel rms_norm --param rows=2048 --param cols=4096 --check
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include <sys/stat.h>

#include <map>

#include "isa/ProgramFile.h"
#include "isa/support/Npy.h"
#include "isa/support/Numerics.h"
#include "isa/support/ParseCommandLine.h"
#include "isa/support/RunFiles.h"
#include "kernels/codegen/Compile.h"
#include "kernels/dsl/HostArrayIo.h"
#include "kernels/lib/Registry.h"
#include "kernels/llo/Printer.h"

using namespace tpusim;
using namespace tpusim::kernels;
namespace cl = llvm::cl;

static cl::OptionCategory category("tpu-kernel options");
static cl::opt<std::string> kernelName(cl::Positional, cl::desc("<kernel> (see --list)"),
                                       cl::cat(category));
static cl::opt<bool> optList("list", cl::desc("list the library kernels and their parameters"),
                             cl::cat(category));
static cl::list<std::string> optParams("param", cl::desc("set a kernel parameter (repeatable)"),
                                       cl::value_desc("NAME=VALUE"), cl::cat(category));
// Shorthands for parameters of the same name (dashes become underscores); each
// applies to any kernel that has that parameter.
static cl::opt<std::string> optM("m", cl::desc("--param m: matmul rows of x and out"),
                                 cl::value_desc("int"), cl::cat(category));
static cl::opt<std::string> optN("n", cl::desc("--param n: matmul columns of y and out"),
                                 cl::value_desc("int"), cl::cat(category));
static cl::opt<std::string> optK("k", cl::desc("--param k: matmul contracting size"),
                                 cl::value_desc("int"), cl::cat(category));
static cl::opt<std::string> optDtype("dtype", cl::desc("--param dtype: input dtype"),
                                     cl::value_desc("bf16|s8|f32"), cl::cat(category));
static cl::opt<std::string> optBm("bm", cl::desc("--param bm: matmul block rows"),
                                  cl::value_desc("int"), cl::cat(category));
static cl::opt<std::string> optBn("bn", cl::desc("--param bn: matmul block columns"),
                                  cl::value_desc("int"), cl::cat(category));
static cl::opt<std::string> optBk("bk", cl::desc("--param bk: matmul block K"),
                                  cl::value_desc("int"), cl::cat(category));
static cl::opt<std::string> optRows("rows", cl::desc("--param rows: rows of x"),
                                    cl::value_desc("int"), cl::cat(category));
static cl::opt<std::string> optCols("cols", cl::desc("--param cols: columns of x"),
                                    cl::value_desc("int"), cl::cat(category));
static cl::opt<std::string> optBlockRows("block-rows",
                                         cl::desc("--param block_rows: rows per block"),
                                         cl::value_desc("int"), cl::cat(category));
static cl::opt<std::string> optChip("chip", cl::desc("chip preset name or .json file"),
                                    cl::init("v5e"), cl::cat(category));
static cl::opt<std::string> optChipsDir("chips-dir", cl::desc("where preset names are looked up"),
                                        cl::init(TPUSIM_DEFAULT_CHIPS_DIR), cl::cat(category));
static cl::opt<std::string> optOutput("o", cl::desc("write the program here"),
                                      cl::value_desc("file.tpuprog"), cl::cat(category));
static cl::opt<bool> optDumpIr("dump-ir", cl::desc("print the traced kernel IR"),
                               cl::cat(category));
static cl::opt<bool> optDumpMachine("dump-machine", cl::desc("print the scheduled bundles"),
                                    cl::cat(category));
static cl::opt<bool> optStats("print-stats", cl::desc("print code size, registers and memory used"),
                              cl::cat(category));
static cl::opt<std::string> optInterpretDir(
    "interpret-dir", cl::desc("run interpret mode; write inputs and outputs as NAME.npy here"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<uint64_t> optSeed("seed", cl::desc("seed of the random inputs"), cl::init(1),
                                 cl::cat(category));
static cl::opt<bool> optCheck(
    "check", cl::desc("run interpret mode and compare the outputs with the kernel's reference"),
    cl::cat(category));

namespace {

// The parameter values given on the command line: --param NAME=VALUE and the shorthands.
std::map<std::string, std::string> paramValues(const lib::KernelEntry& entry) {
  std::map<std::string, std::string> values;
  for (const std::string& p : optParams) {
    size_t eq = p.find('=');
    if (eq == 0 || eq == std::string::npos)
      throw lib::RegistryError(fmt::format("error: --param '{}': expected NAME=VALUE", p));
    if (!values.emplace(p.substr(0, eq), p.substr(eq + 1)).second)
      throw lib::RegistryError(
          fmt::format("error: parameter '{}' is given twice", p.substr(0, eq)));
  }
  const std::pair<cl::opt<std::string>*, const char*> shorthands[] = {
      {&optM, "m"},       {&optN, "n"},
      {&optK, "k"},       {&optDtype, "dtype"},
      {&optBm, "bm"},     {&optBn, "bn"},
      {&optBk, "bk"},     {&optRows, "rows"},
      {&optCols, "cols"}, {&optBlockRows, "block_rows"}};
  for (const auto& [opt, name] : shorthands) {
    if (opt->getNumOccurrences() == 0) continue;
    bool known = false;
    for (const lib::ParamSpec& p : entry.params) known = known || p.name == name;
    if (!known)
      throw lib::RegistryError(
          fmt::format("error: --{} does not apply to kernel '{}' (see tpu-kernel --list)",
                      opt->ArgStr, entry.name));
    if (!values.emplace(name, opt->getValue()).second)
      throw lib::RegistryError(fmt::format(
          "error: parameter '{}' is given twice (--{} and --param)", name, opt->ArgStr));
  }
  return values;
}

std::vector<double> asDoubles(const dsl::HostArray& a) {
  std::vector<double> v(size_t(a.size()));
  for (int64_t i = 0; i < a.size(); ++i) v[size_t(i)] = dsl::valueAt(a, i);
  return v;
}

// Compares interpret-mode outputs with the reference; false when out of tolerance.
bool checkAgainstReference(const llo::Kernel& kernel, const lib::LibraryKernel& lk,
                           const std::vector<dsl::HostArray>& inputs,
                           const std::vector<dsl::HostArray>& outputs) {
  if (!lk.reference)
    throw lib::RegistryError(
        fmt::format("error: --check: kernel '{}' has no reference", kernel.name));
  std::vector<std::vector<double>> in, got;
  for (const auto& a : inputs) in.push_back(asDoubles(a));
  for (const auto& a : outputs) got.push_back(asDoubles(a));
  std::vector<std::vector<double>> want = lk.reference(in);
  lib::ErrorReport r = lib::compareWithReference(got, want, lk.tolerance);
  fmt::print(
      "{}: interpret mode vs reference: max abs error {:.3g}, max relative error {:.3g} "
      "(tolerance {:.3g}): {}\n",
      kernel.name, r.maxAbs, r.maxRel, lk.tolerance.rel, r.pass ? "ok" : "FAIL");
  if (!r.pass && r.worstIndex >= 0)
    fmt::print("{}: worst element: output '{}'{} index {}: got {}, want {}\n", kernel.name,
               kernel.outputs[r.worstOutput % kernel.outputs.size()].name,
               lk.devices == 1
                   ? std::string()
                   : fmt::format(" of device {}", r.worstOutput / kernel.outputs.size()),
               r.worstIndex, got[r.worstOutput][size_t(r.worstIndex)],
               want[r.worstOutput][size_t(r.worstIndex)]);
  return r.pass;
}

}  // namespace

int main(int argc, char** argv) {
  cl::HideUnrelatedOptions(category);
  tpusim::support::parseCommandLineOrExit(argc, argv, "compile a library kernel to a .tpuprog\n");
  bool checked = true;
  try {
    if (optList) {
      for (const lib::KernelEntry& e : lib::registeredKernels())
        fmt::print("{}", lib::describeKernel(e));
      return 0;
    }
    if (kernelName.empty())
      throw lib::RegistryError("error: no kernel named (tpu-kernel --list shows them)");
    const lib::KernelEntry& entry = lib::findKernel(kernelName);
    // The chip first: blocks left to "auto" are chosen for it.
    codegen::TargetInfo target = codegen::loadTargetByName(optChip, optChipsDir);
    lib::LibraryKernel lk = lib::buildKernel(entry.name, paramValues(entry), &target);
    for (const std::string& note : lk.notes) fmt::print(stderr, "tpu-kernel: note: {}\n", note);
    std::unique_ptr<llo::Kernel> kernel = lk.trace();
    if (optDumpIr) fmt::print("{}", llo::printKernel(*kernel));
    const int devices = lk.devices;
    // An SPMD kernel's files are NAME.dD.npy per device, as tpusim --output-dir names them.
    auto fileName = [&](const std::string& name, int device) {
      return devices == 1 ? name + ".npy" : fmt::format("{}.d{}.npy", name, device);
    };
    {
      support::RunFiles files;
      const std::string& chip = optChip.getValue();
      if (chip.find('/') != std::string::npos ||
          (chip.size() > 5 && chip.compare(chip.size() - 5, 5, ".json") == 0))
        files.input("the --chip file", chip);
      files.output("-o", optOutput);
      std::vector<std::string> names;
      for (int d = 0; d < devices; ++d) {
        for (const auto& in : kernel->inputs) names.push_back(fileName(in.name, d));
        for (const auto& out : kernel->outputs) names.push_back(fileName(out.name, d));
      }
      files.outputsIn("--interpret-dir", optInterpretDir, names);
      if (std::string clash = files.clash(); !clash.empty())
        throw lib::RegistryError("error: " + clash);
    }
    if (!optInterpretDir.empty() || optCheck) {
      std::mt19937_64 rng(optSeed);
      std::vector<std::vector<dsl::HostArray>> inputs = lk.sampleDeviceInputs(rng);
      dsl::InterpretOptions io;
      io.mxuSize = target.mxuSize;
      io.seed = optSeed;
      std::vector<dsl::InterpretResult> r = lib::interpretLibraryKernel(lk, *kernel, inputs, io);
      std::vector<dsl::HostArray> allIn, allOut;
      for (int d = 0; d < devices; ++d) {
        for (const std::string& race : r[size_t(d)].races)
          fmt::print(stderr, "tpu-kernel: {}{}\n",
                     devices == 1 ? "" : fmt::format("device {}: ", d), race);
        allIn.insert(allIn.end(), inputs[size_t(d)].begin(), inputs[size_t(d)].end());
        allOut.insert(allOut.end(), r[size_t(d)].outputs.begin(), r[size_t(d)].outputs.end());
      }
      if (optCheck) checked = checkAgainstReference(*kernel, lk, allIn, allOut);
      if (!optInterpretDir.empty()) {
        ::mkdir(optInterpretDir.c_str(), 0777);
        for (int d = 0; d < devices; ++d) {
          for (size_t i = 0; i < inputs[size_t(d)].size(); ++i)
            npy::write(optInterpretDir + "/" + fileName(kernel->inputs[i].name, d),
                       dsl::toNpy(inputs[size_t(d)][i]));
          for (size_t i = 0; i < r[size_t(d)].outputs.size(); ++i)
            npy::write(optInterpretDir + "/" + fileName(kernel->outputs[i].name, d),
                       dsl::toNpy(r[size_t(d)].outputs[i]));
        }
      }
    }
    if (!optOutput.empty() || optDumpMachine || optStats) {
      codegen::CompiledKernel c = codegen::compileKernel(*kernel, target);
      if (optDumpMachine) fmt::print("{}", c.machineText);
      if (optStats)
        fmt::print(
            "kernel {} on {}: {} bundles, {} instructions, registers s{} v{} m{}, VMEM {} "
            "rows, SMEM {} words, {} flags, {:.0f} FLOPs\n",
            kernel->name, target.name, c.stats.bundles, c.stats.instructions, c.stats.scalarRegs,
            c.stats.vectorRegs, c.stats.maskRegs, c.stats.vmemRows, c.stats.smemWords,
            c.stats.flags, c.program.costs[0].flops);
      if (!optOutput.empty()) {
        // A multi-chip kernel says how many devices it was built for, so
        // tpusim picks that slice (or refuses a --topology of another size)
        // instead of faulting at the first remote DMA.
        if (devices > 1) {
          c.program.hasSignature = true;
          c.program.signature.module = kernel->name;
          c.program.signature.devices = devices;
        }
        std::string error;
        if (!isa::writeProgramFile(c.program, optOutput, &error)) {
          fmt::print(stderr, "tpu-kernel: error: {}\n", error);
          return 1;
        }
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpu-kernel: {}\n", e.what());
    return 1;
  }
  return checked ? 0 : 1;
}
