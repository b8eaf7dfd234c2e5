#include "compiler/hlo/eval/GatherScatter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace tpusim::hlo::eval {
namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Reads start indices: for a batch position (the index dims other than the
// index vector dim), the index vector's entries.
class IndexReader {
 public:
  IndexReader(const Literal& indices, int64_t indexVectorDim)
      : indices_(indices), ivd_(indexVectorDim) {
    if (indices.isTuple() || !isInteger(indices.type()))
      throw EvalError(
          fmt::format("start indices must be an integer array, not {}", indices.shapeString()));
    dims_ = indices.dims();
    if (ivd_ == static_cast<int64_t>(dims_.size())) dims_.push_back(1);
    if (ivd_ < 0 || ivd_ >= static_cast<int64_t>(dims_.size()))
      throw EvalError(fmt::format("index_vector_dim {} is out of range", ivd_));
    strides_ = stridesOf(dims_);
    vectorSize_ = dims_[static_cast<size_t>(ivd_)];
  }
  int64_t vectorSize() const { return vectorSize_; }
  // batch: one value per index dim except the index vector dim, in order.
  std::vector<int64_t> read(const std::vector<int64_t>& batch) const {
    int64_t base = 0;
    for (size_t d = 0, b = 0; d < dims_.size(); ++d)
      if (static_cast<int64_t>(d) != ivd_) base += batch[b++] * strides_[d];
    std::vector<int64_t> v(static_cast<size_t>(vectorSize_));
    for (int64_t k = 0; k < vectorSize_; ++k)
      v[static_cast<size_t>(k)] = indices_.getInt(base + k * strides_[static_cast<size_t>(ivd_)]);
    return v;
  }
  // Position in `batch` of index dim d (d != index vector dim).
  size_t batchPos(int64_t d) const { return static_cast<size_t>(d < ivd_ ? d : d - 1); }

 private:
  const Literal& indices_;
  int64_t ivd_;
  std::vector<int64_t> dims_, strides_;
  int64_t vectorSize_ = 1;
};

void next(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t d = dims.size(); d-- > 0;) {
    if (++idx[d] < dims[d]) return;
    idx[d] = 0;
  }
}

}  // namespace

Literal gatherLit(const Literal& operand, const Literal& indices, const GatherDims& g,
                  const std::vector<int64_t>& outDims) {
  IndexReader reader(indices, g.indexVectorDim);
  size_t rank = operand.dims().size();
  if (g.startIndexMap.size() != static_cast<size_t>(reader.vectorSize()) ||
      g.sliceSizes.size() != rank)
    throw EvalError("gather: start_index_map / slice_sizes do not match the operands");
  std::vector<int64_t> offsetOperandDims;  // operand dims that appear in the output, in order
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
    if (!contains(g.collapsedSliceDims, d) && !contains(g.operandBatchingDims, d))
      offsetOperandDims.push_back(d);
  if (offsetOperandDims.size() != g.offsetDims.size())
    throw EvalError("gather: offset_dims does not match the non-collapsed operand dims");
  Literal out = Literal::array(operand.type(), outDims);
  size_t es = elemSize(operand.type());
  std::vector<int64_t> inStrides = stridesOf(operand.dims());
  std::vector<int64_t> o(outDims.size(), 0), batch, start(rank);
  for (int64_t lin = 0, n = out.numElements(); lin < n; ++lin, next(o, outDims)) {
    batch.clear();
    for (int64_t d = 0; d < static_cast<int64_t>(outDims.size()); ++d)
      if (!contains(g.offsetDims, d)) batch.push_back(o[static_cast<size_t>(d)]);
    std::vector<int64_t> s = reader.read(batch);
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < s.size(); ++k) start[static_cast<size_t>(g.startIndexMap[k])] = s[k];
    for (size_t i = 0; i < g.operandBatchingDims.size(); ++i)
      start[static_cast<size_t>(g.operandBatchingDims[i])] =
          batch[reader.batchPos(g.startIndicesBatchingDims[i])];
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t hi = std::max<int64_t>(0, operand.dims()[d] - g.sliceSizes[d]);
      src += std::clamp<int64_t>(start[d], 0, hi) * inStrides[d];
    }
    for (size_t j = 0; j < offsetOperandDims.size(); ++j)
      src += o[static_cast<size_t>(g.offsetDims[j])] *
             inStrides[static_cast<size_t>(offsetOperandDims[j])];
    std::memcpy(out.raw() + lin * static_cast<int64_t>(es),
                operand.raw() + src * static_cast<int64_t>(es), es);
  }
  return out;
}

std::vector<Literal> scatterLit(const std::vector<const Literal*>& operands, const Literal& indices,
                                const std::vector<const Literal*>& updates, const ScatterDims& sd,
                                const Reducer& combiner) {
  if (operands.empty() || operands.size() != updates.size())
    throw EvalError("scatter: needs as many updates as operands");
  IndexReader reader(indices, sd.indexVectorDim);
  const std::vector<int64_t>& opDims = operands[0]->dims();
  const std::vector<int64_t>& upDims = updates[0]->dims();
  size_t rank = opDims.size();
  if (sd.scatterDimsToOperandDims.size() != static_cast<size_t>(reader.vectorSize()))
    throw EvalError("scatter: scatter_dims_to_operand_dims does not match the index vector");
  std::vector<int64_t> windowOperandDims;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
    if (!contains(sd.insertedWindowDims, d) && !contains(sd.inputBatchingDims, d))
      windowOperandDims.push_back(d);
  if (windowOperandDims.size() != sd.updateWindowDims.size())
    throw EvalError("scatter: update_window_dims does not match the operand's window dims");
  std::vector<int64_t> windowSize(rank, 1);
  for (size_t j = 0; j < windowOperandDims.size(); ++j)
    windowSize[static_cast<size_t>(windowOperandDims[j])] =
        upDims[static_cast<size_t>(sd.updateWindowDims[j])];

  std::vector<Literal> outs;
  for (const Literal* l : operands) outs.push_back(*l);
  size_t n = operands.size();
  std::vector<int64_t> inStrides = stridesOf(opDims);
  std::vector<int64_t> u(upDims.size(), 0), batch, start(rank);
  std::vector<Literal> args(2 * n);
  int64_t total = checkedElementCount(upDims);
  for (int64_t lin = 0; lin < total; ++lin, next(u, upDims)) {
    batch.clear();
    for (int64_t d = 0; d < static_cast<int64_t>(upDims.size()); ++d)
      if (!contains(sd.updateWindowDims, d)) batch.push_back(u[static_cast<size_t>(d)]);
    std::vector<int64_t> s = reader.read(batch);
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < s.size(); ++k)
      start[static_cast<size_t>(sd.scatterDimsToOperandDims[k])] = s[k];
    for (size_t i = 0; i < sd.inputBatchingDims.size(); ++i)
      start[static_cast<size_t>(sd.inputBatchingDims[i])] =
          batch[reader.batchPos(sd.scatterIndicesBatchingDims[i])];
    bool fits = true;
    for (size_t d = 0; d < rank; ++d)
      fits &= start[d] >= 0 && start[d] + windowSize[d] <= opDims[d];
    if (!fits) continue;
    int64_t dst = 0;
    for (size_t d = 0; d < rank; ++d) dst += start[d] * inStrides[d];
    for (size_t j = 0; j < windowOperandDims.size(); ++j)
      dst += u[static_cast<size_t>(sd.updateWindowDims[j])] *
             inStrides[static_cast<size_t>(windowOperandDims[j])];
    if (combiner.takeSecond) {
      for (size_t j = 0; j < n; ++j) setScalarAt(outs[j], dst, scalarAt(*updates[j], lin));
      continue;
    }
    for (size_t j = 0; j < n; ++j) {
      args[j] = scalarAt(outs[j], dst);
      args[n + j] = scalarAt(*updates[j], lin);
    }
    std::vector<Literal> r = combiner.call(args);
    if (r.size() != n) throw EvalError("scatter: the combiner returned the wrong number of values");
    for (size_t j = 0; j < n; ++j) {
      if (r[j].isTuple() || r[j].type() != outs[j].type() || r[j].rank() != 0)
        throw EvalError("scatter: the combiner returned a value of the wrong type");
      setScalarAt(outs[j], dst, r[j]);
    }
  }
  return outs;
}

}  // namespace tpusim::hlo::eval
