// The passes `tpuc` runs before lowering, and why in this order:
//   inline            calls become plain instructions, so fusion sees through them;
//   dot-scale-to-output  a dequantization scale (convert(int) * broadcast(scale) off the
//                     contracted dims) moves to the dot's result: the kernel then widens
//                     int8 weights on their way to the MXU instead of scaling each one;
//   attention-backward  the gradient of softmax attention (dq, dk, dv from the
//                     probabilities, dP, dS) becomes a call of the library's fused
//                     attention backward kernel, which recomputes the probabilities;
//                     first, so their backward users are gone when flash-attention
//                     looks at the forward;
//   flash-attention   the materialized attention (scores dot, scale, causal mask,
//                     softmax, second dot) becomes a call of the library's flash
//                     attention kernel, so the scores never reach HBM; before the
//                     dot passes, which would rewrite the dots it matches;
//   dot-precision-split  f32 dots at HIGH / HIGHEST precision become 3 / 6 bf16
//                     passes (the MXU multiplies bf16; DEFAULT is one pass); before
//                     canonicalization, so the operands are split where they are read;
//   dot-canonicalize  every dot becomes [B,M,K] x [B,K,N] (the MXU form the kernel
//                     lowering expects), with explicit transposes/reshapes;
//   algsimp           removes the identity ops those (and the input) left behind;
//   constant-folding  small constant expressions become constants;
//   cse, dce          one copy of each value, nothing unused;
//   fusion            cuts the graph into kernels (reads the chip, PassOptions.h);
//   dce               drops what fusion made dead.
// layout-assignment is not run: HBM arrays are dense row-major in their logical
// shape here (compiler/lower/module/ModuleLowering.h), so tiled layouts and the
// copies that would change them do not apply.
//
// The driver sits above both compiler/passes and compiler/lower: it runs the
// passes, then hands the module to the lowering (which never runs a pass).
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"
#include "compiler/lower/TargetDescription.h"
#include "compiler/lower/module/ModuleLowering.h"
#include "isa/target/ChipConfig.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::driver {

struct ModuleLoweringOptions {
  // Comma-separated passes run before lowering; empty = the default pipeline
  // (defaultLoweringPasses()).
  std::string passes;
  // Write the module after each pass to DIR/<module>.<NN>.<pass>.hlo ("" = no dumps).
  std::string dumpDir;
  lower::LowerOptions lower;  // the kernel cache
};

// The default pipeline, comma-separated (`tpuc --help` prints it).
std::string defaultLoweringPasses();

// `passes` ("" = the default pipeline) without every occurrence of each comma-separated name in
// `skip`. Sets `error` and returns "" when a skipped name is not in the pipeline (a typo would
// otherwise compile with the pass still in).
std::string pipelineWithout(const std::string& passes, const std::string& skip, std::string* error);

// First the input's layouts are dropped (compiler/lower/module/Layouts.h); when the
// list has `fusion`, fusions already in the input are inlined
// (compiler/lower/module/Unfuse.h). Runs `passes` (comma-separated; "" = the default) for
// `chip`, verifying after each and dumping to `dumpDir` if not empty. Returns the names that ran;
// throws lower::ModuleLoweringError on an unknown pass, a verifier failure or a dump that cannot
// be written.
std::vector<std::string> runLoweringPasses(hlo::HloModule& module, const std::string& passes,
                                           const target::ChipConfig& chip,
                                           const std::string& dumpDir);

// A whole HLO module -> one program (what `tpuc` runs): runLoweringPasses (on `module`, changed
// in place) for the chip `target` describes, then lower::lowerModule; the result lists the passes
// that ran. Throws lower::CannotLower or lower::ModuleLoweringError.
lower::LoweredModule compileModule(hlo::HloModule& module, const lower::TargetDescription& target,
                                   const kernels::codegen::TargetInfo& codegenTarget,
                                   const ModuleLoweringOptions& options = {});

}  // namespace tpusim::driver
