#include "compiler/hlo/eval/Sort.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "compiler/hlo/eval/TypeDispatch.h"

namespace tpusim::hlo::eval {

std::vector<Literal> sortLit(const std::vector<const Literal*>& operands, int64_t dim,
                             const SortLess& less) {
  if (operands.empty()) throw EvalError("sort: no operands");
  const std::vector<int64_t>& dims = operands[0]->dims();
  for (const Literal* l : operands)
    if (l->isTuple() || l->dims() != dims)
      throw EvalError("sort: operands must be arrays of equal dims");
  if (dim < 0 || dim >= static_cast<int64_t>(dims.size()))
    throw EvalError(fmt::format("sort: dimension {} is out of range", dim));
  std::vector<Literal> outs;
  for (const Literal* l : operands) outs.push_back(*l);
  std::vector<int64_t> strides = stridesOf(dims);
  int64_t len = dims[static_cast<size_t>(dim)], stride = strides[static_cast<size_t>(dim)];
  int64_t total = checkedElementCount(dims);
  if (len == 0 || total == 0) return outs;
  std::vector<int64_t> order(static_cast<size_t>(len));
  // Each slice starts at an index whose coordinate along `dim` is 0.
  for (int64_t base = 0; base < total; ++base) {
    if ((base / stride) % len != 0) continue;
    for (int64_t k = 0; k < len; ++k) order[static_cast<size_t>(k)] = base + k * stride;
    std::stable_sort(order.begin(), order.end(), less);
    for (size_t j = 0; j < operands.size(); ++j) {
      size_t es = elemSize(operands[j]->type());
      for (int64_t k = 0; k < len; ++k)
        std::memcpy(outs[j].raw() + (base + k * stride) * static_cast<int64_t>(es),
                    operands[j]->raw() + order[static_cast<size_t>(k)] * static_cast<int64_t>(es),
                    es);
    }
  }
  return outs;
}

SortLess compareLess(const Literal& keys, CompareDir dir, bool totalOrder) {
  if (dir != CompareDir::LT && dir != CompareDir::GT)
    throw EvalError("sort: the fast comparator needs direction LT or GT");
  bool gt = dir == CompareDir::GT;
  if (isFloat(keys.type())) {
    // Keys as doubles (exact for every float type), or total-order integers.
    std::vector<double> v(static_cast<size_t>(keys.numElements()));
    for (int64_t i = 0; i < keys.numElements(); ++i) v[static_cast<size_t>(i)] = keys.getDouble(i);
    if (totalOrder) {
      std::vector<int64_t> k(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        int64_t s;
        std::memcpy(&s, &v[i], 8);
        k[i] = s < 0 ? (s ^ INT64_MAX) : s;
      }
      return
          [k = std::move(k), gt](int64_t a, int64_t b) { return gt ? k[a] > k[b] : k[a] < k[b]; };
    }
    return [v = std::move(v), gt](int64_t a, int64_t b) { return gt ? v[a] > v[b] : v[a] < v[b]; };
  }
  if (keys.type() == ElemType::U64) {
    const uint64_t* p = keys.data<uint64_t>();
    return [p, gt](int64_t a, int64_t b) { return gt ? p[a] > p[b] : p[a] < p[b]; };
  }
  std::vector<int64_t> v(static_cast<size_t>(keys.numElements()));
  for (int64_t i = 0; i < keys.numElements(); ++i) v[static_cast<size_t>(i)] = keys.getInt(i);
  return [v = std::move(v), gt](int64_t a, int64_t b) { return gt ? v[a] > v[b] : v[a] < v[b]; };
}

}  // namespace tpusim::hlo::eval
