// HloModule -> HLO text that parseHloText reads back into an equal module
// (HloEquality.h). The style is XLA's: `%` names, operand shapes, layouts as
// given, instructions of a computation in post order, callees as stored.
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"

namespace tpusim::hlo {

std::string printModule(const HloModule& module);
// Several modules separated by "// -----" lines (the multi-module file form).
std::string printModules(const std::vector<const HloModule*>& modules);
std::string printComputation(const HloComputation& comp);
// One instruction line, without indentation or "ROOT ".
std::string printInstruction(const HloInstruction& inst);
// The attribute part of an instruction: ", key=value, ..." (empty if none).
std::string printAttributes(const HloInstruction& inst);

}  // namespace tpusim::hlo
