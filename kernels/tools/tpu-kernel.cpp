// tpu-kernel: compiles a library kernel for a chip preset into a .tpuprog, and
// optionally runs it in interpret mode on seeded random inputs, writing the
// inputs and outputs as .npy (bf16 as uint16 bits) so a simulator run on the
// same inputs can be compared bit for bit.
//
//   tpu-kernel matmul --m 512 --n 512 --k 512 --dtype bf16 --chip v5e -o mm.tpuprog
//   tpu-kernel softmax --rows 64 --cols 256 --interpret-dir out/ --dump-ir
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include <sys/stat.h>

#include "isa/ProgramFile.h"
#include "isa/support/Npy.h"
#include "isa/support/Numerics.h"
#include "kernels/codegen/Compile.h"
#include "kernels/dsl/HostArrayIo.h"
#include "kernels/lib/Matmul.h"
#include "kernels/lib/Softmax.h"
#include "kernels/llo/Printer.h"

using namespace tpusim;
using namespace tpusim::kernels;
namespace cl = llvm::cl;

static cl::OptionCategory category("tpu-kernel options");
static cl::opt<std::string> kernelName(cl::Positional, cl::desc("<matmul | softmax>"), cl::Required,
                                       cl::cat(category));
static cl::opt<int64_t> optM("m", cl::desc("matmul: rows of x and out"), cl::init(256),
                             cl::cat(category));
static cl::opt<int64_t> optN("n", cl::desc("matmul: columns of y and out"), cl::init(256),
                             cl::cat(category));
static cl::opt<int64_t> optK("k", cl::desc("matmul: contracting size"), cl::init(256),
                             cl::cat(category));
static cl::opt<std::string> optDtype("dtype", cl::desc("matmul inputs: bf16 or s8"),
                                     cl::init("bf16"), cl::cat(category));
static cl::opt<int64_t> optBm("bm", cl::desc("matmul block rows"), cl::init(128),
                              cl::cat(category));
static cl::opt<int64_t> optBn("bn", cl::desc("matmul block columns"), cl::init(128),
                              cl::cat(category));
static cl::opt<int64_t> optBk("bk", cl::desc("matmul block K"), cl::init(128), cl::cat(category));
static cl::opt<int64_t> optRows("rows", cl::desc("softmax rows"), cl::init(64), cl::cat(category));
static cl::opt<int64_t> optCols("cols", cl::desc("softmax columns"), cl::init(256),
                                cl::cat(category));
static cl::opt<int64_t> optBlockRows("block-rows", cl::desc("softmax rows per block"), cl::init(8),
                                     cl::cat(category));
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

int main(int argc, char** argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "compile a library kernel to a .tpuprog\n");
  try {
    std::unique_ptr<llo::Kernel> kernel;
    if (kernelName == "matmul") {
      llo::DType t;
      if (optDtype == "bf16")
        t = llo::DType::Bf16;
      else if (optDtype == "s8")
        t = llo::DType::S8;
      else
        throw dsl::Error("error: --dtype must be bf16 or s8");
      kernel = lib::matmulCall(optM, optN, optK, t, {optBm, optBn, optBk})
                   .trace({{{optM, optK}, t, "x"}, {{optK, optN}, t, "y"}});
    } else if (kernelName == "softmax") {
      kernel = lib::softmaxCall(optRows, optCols, optBlockRows)
                   .trace({{{optRows, optCols}, llo::DType::F32, "x"}});
    } else {
      fmt::print(stderr, "tpu-kernel: error: unknown kernel '{}' (matmul, softmax)\n", kernelName);
      return 1;
    }
    if (optDumpIr) fmt::print("{}", llo::printKernel(*kernel));
    codegen::TargetInfo target = codegen::loadTargetByName(optChip, optChipsDir);
    if (!optInterpretDir.empty()) {
      std::mt19937_64 rng(optSeed);
      std::vector<dsl::HostArray> inputs;
      for (const auto& a : kernel->inputs)
        inputs.push_back(dsl::randomArray(a.shape, a.dtype, rng));
      dsl::InterpretOptions io;
      io.mxuSize = target.mxuSize;
      io.seed = optSeed;
      dsl::InterpretResult r = dsl::interpret(*kernel, inputs, io);
      for (const std::string& race : r.races) fmt::print(stderr, "tpu-kernel: {}\n", race);
      ::mkdir(optInterpretDir.c_str(), 0777);
      for (size_t i = 0; i < inputs.size(); ++i)
        npy::write(optInterpretDir + "/" + kernel->inputs[i].name + ".npy", dsl::toNpy(inputs[i]));
      for (size_t i = 0; i < r.outputs.size(); ++i)
        npy::write(optInterpretDir + "/" + kernel->outputs[i].name + ".npy",
                   dsl::toNpy(r.outputs[i]));
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
  return 0;
}
