// Bridges between the HLO IR and evaluator literals: element types, constants,
// zero values of a shape, and .npy arrays (bf16 as uint16 bits, see Npy.h).
#pragma once

#include <string>

#include "compiler/hlo/HloInstruction.h"
#include "compiler/hlo/Shape.h"
#include "compiler/hlo/eval/Literal.h"
#include "isa/support/Npy.h"

namespace tpusim::hlo::eval {

// The evaluator's type for an IR element type; throws EvalError naming `what`
// for the kinds it does not evaluate (f8/f4, s2/s4/u2/u4, complex).
ElemType toElemType(PrimitiveType t, const std::string& what);
PrimitiveType toPrimitiveType(ElemType t);

// A zero value of `shape` (tuples element-wise; a token is an empty tuple).
Literal zerosOf(const Shape& shape, const std::string& what);
// The value of a constant instruction's literal; an elided constant is an error.
Literal fromConstant(const hlo::Literal& c, const std::string& what);
// Does the literal have exactly the dims and element type of `shape`?
bool matchesShape(const Literal& l, const Shape& shape);

// A literal as a .npy array: bf16 becomes uint16 holding the bits, f16 float16.
npy::Array toNpy(const Literal& l);
// A .npy array as a value of `shape` (an array shape). The dtype must match the
// element type, except that a bf16 value may come from uint16 bits or from
// float32 (rounded to nearest even). `what` names the file in errors.
Literal fromNpy(const npy::Array& a, const Shape& shape, const std::string& what);

}  // namespace tpusim::hlo::eval
