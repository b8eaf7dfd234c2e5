// sort: sorts every 1-D slice along `dim` of one or more operands of equal
// dims together, by a comparator. The sort is stable (a valid result for
// is_stable=false too), so the output is deterministic.
#pragma once

#include <functional>
#include <vector>

#include "compiler/hlo/eval/Elementwise.h"
#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

// less(i, j): whether the element at linear index i of the operands goes
// before the one at linear index j.
using SortLess = std::function<bool(int64_t, int64_t)>;

std::vector<Literal> sortLit(const std::vector<const Literal*>& operands, int64_t dim,
                             const SortLess& less);

// A less-than on the elements of `keys` for comparator `compare(p0, p1)` with
// direction LT or GT (any other direction throws), total order or IEEE.
SortLess compareLess(const Literal& keys, CompareDir dir, bool totalOrder);

}  // namespace tpusim::hlo::eval
