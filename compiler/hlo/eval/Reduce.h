// reduce and reduce-window, variadic, with any reducer computation.
// Order: each result starts from the init value and folds the operand elements
// in row-major order of the reduced (window) indices, as XLA's evaluator does;
// for bf16/f16 every fold step is rounded to the type (the reducer is a bf16
// computation). Window positions in the padding are skipped.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "compiler/hlo/eval/Elementwise.h"
#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

// Applies a computation to scalars and returns its results (a tuple's elements
// as separate literals, or one literal).
using ScalarFn = std::function<std::vector<Literal>(const std::vector<Literal>&)>;

struct Reducer {
  // Set when the computation is just `op(p0, p1)` on scalars of the operand's
  // type; enables a typed loop instead of one interpreter call per element.
  std::optional<BinaryOp> fast;
  // Set when the computation returns its second parameter (scatter's "replace").
  bool takeSecond = false;
  // Called with (accumulators..., values...) scalars.
  ScalarFn call;
};

std::vector<Literal> reduceLit(const std::vector<const Literal*>& inputs,
                               const std::vector<const Literal*>& inits,
                               const std::vector<int64_t>& dims, const Reducer& reducer);

struct WindowDims {
  int64_t size = 1, stride = 1, padLow = 0, padHigh = 0, baseDilation = 1, windowDilation = 1;
};

std::vector<Literal> reduceWindowLit(const std::vector<const Literal*>& inputs,
                                     const std::vector<const Literal*>& inits,
                                     const std::vector<WindowDims>& window, const Reducer& reducer);

// Scalar element i of l, and the reverse.
Literal scalarAt(const Literal& l, int64_t i);
void setScalarAt(Literal& l, int64_t i, const Literal& scalar);

}  // namespace tpusim::hlo::eval
