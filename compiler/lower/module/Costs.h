// The static cost of one HLO instruction for the program's cost table (what
// the profiler's roofline divides by time): FLOPs counted at the HLO level
// (a dot 2 x batch x M x N x K, an element-wise op or a compare/select one per
// output element, a reduce one per input element, a fusion the sum of its
// members) and the dense bytes of its operands read and of its result written
// in HBM.
#pragma once

#include <cstdint>

#include "compiler/hlo/HloInstruction.h"
#include "isa/Program.h"

namespace tpusim::lower {

// FLOPs of `inst` (recursively through fusions).
double hloFlops(const hlo::HloInstruction& inst);
// Dense bytes of every array in `shape` (pred: 1 byte per element).
uint64_t denseBytes(const hlo::Shape& shape);
// A cost entry named `opName`: HLO FLOPs and operand / result bytes of `inst`.
isa::CostEntry hloCost(const hlo::HloInstruction& inst, const std::string& opName);

}  // namespace tpusim::lower
