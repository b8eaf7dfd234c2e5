// Structural equality of modules, the contract of the printer round trip:
// two modules are equal when they have the same name, header attributes, entry
// name and computations (matched by name), and each computation has the same
// root name and the same instructions matched by name: opcode, shape
// (including layout), operand names in order, every attribute (called
// computations by name) and literal values. Instruction storage order is not
// compared (the printer prints in post order).
#pragma once

#include <string>

#include "compiler/hlo/HloModule.h"

namespace tpusim::hlo {

// True if equal; otherwise false and, if `why` is set, the first difference.
bool modulesEqual(const HloModule& a, const HloModule& b, std::string* why = nullptr);
bool instructionsEqual(const HloInstruction& a, const HloInstruction& b,
                       std::string* why = nullptr);

}  // namespace tpusim::hlo
