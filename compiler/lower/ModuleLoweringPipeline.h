// The passes `tpuc` runs before lowering, and why in this order:
//   inline            calls become plain instructions, so fusion sees through them;
//   dot-canonicalize  every dot becomes [B,M,K] x [B,K,N] (the MXU form the kernel
//                     lowering expects), with explicit transposes/reshapes;
//   algsimp           removes the identity ops those (and the input) left behind;
//   constant-folding  small constant expressions become constants;
//   cse, dce          one copy of each value, nothing unused;
//   fusion            cuts the graph into kernels (reads the chip, PassOptions.h);
//   dce               drops what fusion made dead.
// layout-assignment is not run: HBM arrays are dense row-major in their logical
// shape here (ModuleLowering.h), so tiled layouts and the copies that would
// change them do not apply.
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::lower {

// "inline,dot-canonicalize,algsimp,constant-folding,cse,dce,fusion,dce".
std::string defaultLoweringPasses();

// First the input's layouts are dropped (ModuleLoweringLayouts.h); when the
// list has `fusion`, fusions already in the input are inlined (ModuleLoweringUnfuse.h). Runs
// `passes` (comma-separated; "" = the default) for `chip`, verifying after
// each and dumping to `dumpDir` if not empty. Returns the names that ran; throws
// ModuleLoweringError on an unknown pass, a verifier failure or a dump that cannot be written.
std::vector<std::string> runLoweringPasses(hlo::HloModule& module, const std::string& passes,
                                           const target::ChipConfig& chip,
                                           const std::string& dumpDir);

}  // namespace tpusim::lower
