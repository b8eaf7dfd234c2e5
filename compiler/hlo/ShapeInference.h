// Result shapes computed from operands and attributes, for the opcodes where
// that is well defined. The parser uses it for instructions written without a
// shape (`t = tuple(a, b)`), the verifier to check written shapes, and passes
// to build new instructions.
#pragma once

#include <optional>
#include <string>

#include "compiler/hlo/HloInstruction.h"

namespace tpusim::hlo {

// The shape `inst` should have (layouts left empty), or nullopt if this opcode
// is not inferred here or the operands do not allow it (then *why, if given,
// says why).
std::optional<Shape> inferShape(const HloInstruction& inst, std::string* why = nullptr);

// dot's result shape: batch dims, lhs free dims, rhs free dims.
std::optional<Shape> inferDotShape(const Shape& lhs, const Shape& rhs,
                                   const DotDimensionNumbers& dnums, PrimitiveType resultType,
                                   std::string* why = nullptr);

}  // namespace tpusim::hlo
