#include "compiler/hlo/eval/Reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "compiler/hlo/eval/Half.h"
#include "compiler/hlo/eval/ScalarOps.h"
#include "compiler/hlo/eval/TypeDispatch.h"
#include "isa/support/Numerics.h"

namespace tpusim::hlo::eval {
namespace {

// For every operand element (row-major), the linear index of the result it
// folds into; calls visit(inIndex, outIndex) in row-major operand order.
template <typename Visit>
void forEachReduced(const std::vector<int64_t>& inDims, const std::vector<int64_t>& reduceDims,
                    Visit visit) {
  size_t rank = inDims.size();
  std::vector<int64_t> outDims;
  std::vector<bool> reduced(rank, false);
  for (int64_t d : reduceDims) reduced[static_cast<size_t>(d)] = true;
  for (size_t i = 0; i < rank; ++i)
    if (!reduced[i]) outDims.push_back(inDims[i]);
  std::vector<int64_t> outStrides = stridesOf(outDims), step(rank, 0);
  for (size_t i = 0, o = 0; i < rank; ++i)
    if (!reduced[i]) step[i] = outStrides[o++];
  int64_t n = checkedElementCount(inDims);
  std::vector<int64_t> idx(rank, 0);
  int64_t out = 0;
  for (int64_t i = 0; i < n; ++i) {
    visit(i, out);
    for (size_t k = rank; k-- > 0;) {
      out += step[k];
      if (++idx[k] < inDims[k]) break;
      out -= step[k] * inDims[k];
      idx[k] = 0;
    }
  }
}

std::vector<int64_t> windowOutDims(const std::vector<int64_t>& inDims,
                                   const std::vector<WindowDims>& w) {
  std::vector<int64_t> out(inDims.size());
  for (size_t i = 0; i < inDims.size(); ++i) {
    int64_t padded =
        (inDims[i] == 0 ? 0 : (inDims[i] - 1) * w[i].baseDilation + 1) + w[i].padLow + w[i].padHigh;
    int64_t extent = (w[i].size - 1) * w[i].windowDilation + 1;
    out[i] = padded < extent || w[i].stride <= 0 ? 0 : (padded - extent) / w[i].stride + 1;
  }
  return out;
}

// Calls visit(outIndex, inIndices) for each result, with the operand elements
// its window covers in row-major window order (padding skipped).
template <typename Visit>
void forEachWindow(const std::vector<int64_t>& inDims, const std::vector<WindowDims>& w,
                   Visit visit) {
  size_t rank = inDims.size();
  std::vector<int64_t> outDims = windowOutDims(inDims, w), inStrides = stridesOf(inDims);
  std::vector<int64_t> sizes(rank);
  for (size_t i = 0; i < rank; ++i) sizes[i] = w[i].size;
  int64_t nOut = checkedElementCount(outDims), nWin = checkedElementCount(sizes);
  std::vector<int64_t> o(rank, 0), k(rank, 0), members;
  for (int64_t out = 0; out < nOut; ++out) {
    members.clear();
    std::fill(k.begin(), k.end(), 0);
    for (int64_t wi = 0; wi < nWin; ++wi) {
      int64_t lin = 0;
      bool inside = true;
      for (size_t d = 0; d < rank && inside; ++d) {
        int64_t p = o[d] * w[d].stride + k[d] * w[d].windowDilation - w[d].padLow;
        if (p < 0 || p % w[d].baseDilation != 0) {
          inside = false;
          break;
        }
        int64_t i = p / w[d].baseDilation;
        if (i >= inDims[d]) inside = false;
        lin += i * inStrides[d];
      }
      if (inside) members.push_back(lin);
      for (size_t d = rank; d-- > 0;) {
        if (++k[d] < sizes[d]) break;
        k[d] = 0;
      }
    }
    visit(out, members);
    for (size_t d = rank; d-- > 0;) {
      if (++o[d] < outDims[d]) break;
      o[d] = 0;
    }
  }
}

// The typed fast path: one operand, a recognised reducer. `Driver` calls
// fold(outIndex, inIndex) in order. Returns false if the op does not apply.
template <typename Driver>
bool fastFold(const Literal& in, const Literal& init, BinaryOp op, Literal& out, Driver driver) {
  ElemType t = in.type();
  int64_t nOut = out.numElements();
  auto run = [&](auto tag, const auto* src, auto round, auto* acc) -> bool {
    using T = typename decltype(tag)::type;
    return withScalarOp<T>(op, [&](auto f) {
      driver([&](int64_t o, int64_t i) { acc[o] = round(f(acc[o], src[i])); });
    });
  };
  auto noRound = [](auto x) { return x; };
  if (t == ElemType::F32 || t == ElemType::BF16 || t == ElemType::F16) {
    std::vector<float> src = loadAsF32(in), acc(static_cast<size_t>(nOut), loadAsF32(init)[0]);
    bool ok;
    if (t == ElemType::BF16)
      ok = run(
          TypeTag<float>{}, src.data(), [](float x) { return roundToBf16(x); }, acc.data());
    else if (t == ElemType::F16)
      ok = run(
          TypeTag<float>{}, src.data(), [](float x) { return roundToF16(x); }, acc.data());
    else
      ok = run(TypeTag<float>{}, src.data(), noRound, acc.data());
    if (ok) storeFromF32(out, acc.data());
    return ok;
  }
  if (t == ElemType::Pred) {
    if (op != BinaryOp::And && op != BinaryOp::Or && op != BinaryOp::Max && op != BinaryOp::Min)
      return false;
    uint8_t* acc = out.data<uint8_t>();
    std::fill(acc, acc + nOut, init.data<uint8_t>()[0]);
    return run(TypeTag<uint8_t>{}, in.data<uint8_t>(), noRound, acc);
  }
  return dispatchNative(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* acc = out.data<T>();
    std::fill(acc, acc + nOut, init.data<T>()[0]);
    return run(tag, in.data<T>(), noRound, acc);
  });
}

void checkOperands(const std::vector<const Literal*>& inputs,
                   const std::vector<const Literal*>& inits, const char* op) {
  if (inputs.empty() || inputs.size() != inits.size())
    throw EvalError(fmt::format("{}: needs as many init values as operands", op));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->isTuple() || inits[i]->isTuple() || inits[i]->rank() != 0 ||
        inits[i]->type() != inputs[i]->type() || inputs[i]->dims() != inputs[0]->dims())
      throw EvalError(fmt::format("{}: operand {} ({}) and init {} do not match", op, i,
                                  inputs[i]->shapeString(), inits[i]->shapeString()));
  }
}

// The generic path: folds with the reducer computation, one call per element.
template <typename Driver>
std::vector<Literal> genericFold(const std::vector<const Literal*>& inputs,
                                 const std::vector<const Literal*>& inits,
                                 const std::vector<int64_t>& outDims, const Reducer& reducer,
                                 Driver driver) {
  size_t n = inputs.size();
  std::vector<Literal> outs;
  for (size_t j = 0; j < n; ++j) {
    outs.push_back(Literal::array(inputs[j]->type(), outDims));
    for (int64_t o = 0; o < outs[j].numElements(); ++o) setScalarAt(outs[j], o, *inits[j]);
  }
  std::vector<Literal> args(2 * n);
  driver([&](int64_t o, int64_t i) {
    for (size_t j = 0; j < n; ++j) {
      args[j] = scalarAt(outs[j], o);
      args[n + j] = scalarAt(*inputs[j], i);
    }
    std::vector<Literal> r = reducer.call(args);
    if (r.size() != n)
      throw EvalError(fmt::format("reducer returned {} values, expected {}", r.size(), n));
    for (size_t j = 0; j < n; ++j) {
      if (r[j].isTuple() || r[j].rank() != 0 || r[j].type() != outs[j].type())
        throw EvalError(fmt::format("reducer returned {} where {}[] was expected",
                                    r[j].shapeString(), elemTypeName(outs[j].type())));
      setScalarAt(outs[j], o, r[j]);
    }
  });
  return outs;
}

}  // namespace

Literal scalarAt(const Literal& l, int64_t i) {
  Literal s = Literal::array(l.type(), {});
  size_t es = elemSize(l.type());
  std::memcpy(s.raw(), l.raw() + i * static_cast<int64_t>(es), es);
  return s;
}

void setScalarAt(Literal& l, int64_t i, const Literal& scalar) {
  size_t es = elemSize(l.type());
  std::memcpy(l.raw() + i * static_cast<int64_t>(es), scalar.raw(), es);
}

std::vector<Literal> reduceLit(const std::vector<const Literal*>& inputs,
                               const std::vector<const Literal*>& inits,
                               const std::vector<int64_t>& dims, const Reducer& reducer) {
  checkOperands(inputs, inits, "reduce");
  const std::vector<int64_t>& inDims = inputs[0]->dims();
  std::vector<int64_t> outDims;
  for (int64_t d = 0; d < static_cast<int64_t>(inDims.size()); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) outDims.push_back(inDims[d]);
  auto driver = [&](auto fold) {
    forEachReduced(inDims, dims, [&](int64_t i, int64_t o) { fold(o, i); });
  };
  if (inputs.size() == 1 && reducer.fast) {
    Literal out = Literal::array(inputs[0]->type(), outDims);
    if (fastFold(*inputs[0], *inits[0], *reducer.fast, out, driver)) return {std::move(out)};
  }
  return genericFold(inputs, inits, outDims, reducer, driver);
}

std::vector<Literal> reduceWindowLit(const std::vector<const Literal*>& inputs,
                                     const std::vector<const Literal*>& inits,
                                     const std::vector<WindowDims>& window,
                                     const Reducer& reducer) {
  checkOperands(inputs, inits, "reduce-window");
  const std::vector<int64_t>& inDims = inputs[0]->dims();
  if (window.size() != inDims.size())
    throw EvalError(fmt::format("reduce-window: window has {} dims but the operand has {}",
                                window.size(), inDims.size()));
  for (const auto& w : window)
    if (w.size < 1 || w.stride < 1 || w.baseDilation < 1 || w.windowDilation < 1)
      throw EvalError("reduce-window: window sizes, strides and dilations must be >= 1");
  std::vector<int64_t> outDims = windowOutDims(inDims, window);
  auto driver = [&](auto fold) {
    forEachWindow(inDims, window, [&](int64_t o, const std::vector<int64_t>& members) {
      for (int64_t i : members) fold(o, i);
    });
  };
  if (inputs.size() == 1 && reducer.fast) {
    Literal out = Literal::array(inputs[0]->type(), outDims);
    if (fastFold(*inputs[0], *inits[0], *reducer.fast, out, driver)) return {std::move(out)};
  }
  return genericFold(inputs, inits, outDims, reducer, driver);
}

}  // namespace tpusim::hlo::eval
