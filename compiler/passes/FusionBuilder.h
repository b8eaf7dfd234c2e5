// Building fused computations: a body computation plus the outer operands its
// parameters stand for (parameter k <-> operands[k]). The fusion pass uses the
// same steps on a throw-away copy to price a candidate before it commits.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"

namespace tpusim::passes {

struct FusedBody {
  std::unique_ptr<hlo::HloComputation> body;   // owned until added to a module
  hlo::HloComputation* comp = nullptr;         // the body, owned or not
  std::vector<hlo::HloInstruction*> operands;  // outer values, one per parameter
};

// A body computing `consumer` from one parameter per distinct operand.
// `names` (may be null) makes instruction names unique in that module.
FusedBody startFusedBody(const hlo::HloInstruction& consumer, const std::string& bodyName,
                         const hlo::HloModule* names);
// A deep copy of `comp` (a fusion's body) with `operands`, for pricing.
FusedBody copyFusedBody(const hlo::HloComputation& comp,
                        const std::vector<hlo::HloInstruction*>& operands);
// Moves outer `producer` into the body: its parameter is replaced by a clone of
// it whose operands are parameters (new ones appended for operands the body did
// not take yet). `producer` must be one of fb.operands. Returns the clone.
hlo::HloInstruction* fuseProducer(FusedBody& fb, hlo::HloInstruction* producer,
                                  const hlo::HloModule* names);

}  // namespace tpusim::passes
