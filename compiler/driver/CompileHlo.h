// Compiling an HLO file into a program in process: what `tpuc` does between
// reading its command line and writing the .tpuprog, as a library for every
// tool that compiles (tpuc itself, tpusim IN.hlo).
//
//   1. parse the file (one or several modules, "// -----"), choose the module;
//   2. verify it;
//   3. lower it for the chip (compiler/lower/module/ModuleLowering.h: passes, buffer
//      assignment, kernels, DMA, control flow);
//   4. record the entry signature in the program (isa/Program.h,
//      ProgramSignature): which input buffer holds which parameter (leaf),
//      which output buffer which part of the result, and the donations.
//
// Errors are returned, not printed, as exactly the text tpuc prints for them:
//   IN.hlo:5:31: error: ...                       (malformed module: the parser's file:line:col)
//   IN.hlo:12: error: cannot lower %r (all-reduce) [...]: why
//   tpuc: error: IN.hlo holds 2 module(s) (a, b); choose one with --module N|NAME
//   tpuc: error: ...                              (target, HBM overflow, code generator limits)
// so a tool that compiles in process reports what running tpuc would have.
// A successful compile may carry notes (CompileResult::notes):
//   IN.hlo:12: note: %attn: flash_attention: score_next falls back ...: why
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"
#include "compiler/lower/module/ModuleLowering.h"
#include "isa/Program.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::driver {

struct CompileOptions {
  // For a file with several modules: the one to compile, by position ("0") or
  // name; "" = the file must hold exactly one.
  std::string module;
  // Passes before lowering, comma-separated ("" = the default pipeline).
  std::string passes;
  // Write the module after each pass here ("" = no dumps).
  std::string dumpDir;
  // lower::LowerOptions: derive repeated kernels from the kernel cache
  // (and check each against a real compilation).
  bool kernelCache = true;
  bool verifyKernelCache = false;
  // lower::LowerOptions::shareCode: repeated kernels stored once, as shared
  // bodies (the same program, a layer count smaller).
  bool shareCode = true;
  // lower::LowerOptions::crossKernelPrefetch: a kernel starts the next
  // kernel's first input blocks in its last grid step.
  bool crossKernelPrefetch = true;
  // lower::LowerOptions::deferWriteBack: the next kernel waits for a
  // kernel's last write-backs (at its start only when it touches them).
  bool deferWriteBack = true;
  // lower::LowerOptions::packedWeights: s8 parameters read only as paired MXU
  // weights stored in the packed s8x2 HBM layout.
  bool packedWeights = true;
};

struct CompileResult {
  // What tpuc would print on stderr (one or more lines, no final newline);
  // empty on success.
  std::string error;
  // On success: the library kernels' notes, one line each, as
  // "IN.hlo:LINE: note: %NAME: ..." (what a kernel builder chose against what
  // the call asked for); tpuc and tpusim print them on stderr.
  std::vector<std::string> notes;
  // On success: the program (with its signature), buffers, stats.
  lower::LoweredModule lowered;
  // The module as compiled (after the passes), which lowered.buffers points
  // into: kept so that a caller (tpusim --profile) can read names and opcodes.
  std::shared_ptr<hlo::HloModule> module;
  bool ok() const { return error.empty(); }
  // tpuc's exit status for this result (0 or 1).
  int exitStatus() const { return ok() ? 0 : 1; }
};

// Compiles `hloPath` for `chip` (a validated preset, overrides applied).
CompileResult compileHloFile(const std::string& hloPath, const target::ChipConfig& chip,
                             const CompileOptions& options = {});

// The entry signature of `module` (parsed, before or after the passes: they
// keep the entry's parameters and result type) bound to the buffers of
// `program` (lowered from it): parameter leaves to the input buffers in table
// order, result leaves to the output buffers named out, out.0, out.1.0, ....
// Throws std::runtime_error when the buffer table does not match the module.
isa::ProgramSignature entrySignature(const hlo::HloModule& module, const isa::Program& program);

}  // namespace tpusim::driver
