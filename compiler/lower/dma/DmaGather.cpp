// gather (XLA semantics without operand batching dims): the whole index array
// is DMA'd into SMEM once; a loop over the batch positions loads each start
// index vector with `sld`, clamps every component so the slice stays inside
// the operand (what XLA does), and moves the slice with one descriptor whose
// source and destination addresses are written at run time. The embedding
// lookup (table[V, D], tokens -> rows) moves one D-element row per token.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/lower/dma/DmaLowering.h"

namespace tpusim::lower {

namespace {
constexpr int64_t kMaxStagedIndices = 1 << 16;  // SMEM words for the index array

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
}  // namespace

void lowerGather(DmaOp& op) {
  const hlo::HloInstruction& g = op.instr;
  auto list = [&](const char* key) {
    auto v = g.intListAttr(key);
    return v ? *v : std::vector<int64_t>{};
  };
  std::vector<int64_t> offsetDims = list("offset_dims"), collapsed = list("collapsed_slice_dims"),
                       startMap = list("start_index_map"), sliceSizes = list("slice_sizes");
  if (!list("operand_batching_dims").empty() || !list("start_indices_batching_dims").empty())
    op.fail("gather with operand batching dims is not supported");
  std::optional<int64_t> ivdAttr = g.intAttr("index_vector_dim");
  if (!ivdAttr) op.fail("gather without index_vector_dim");
  const hlo::Shape& operand = op.operandShape(0);
  const hlo::Shape& indices = op.operandShape(1);
  if (indices.type != hlo::PrimitiveType::S32 && indices.type != hlo::PrimitiveType::U32)
    op.fail(fmt::format("gather indices of type {}: only s32 and u32 indices are supported",
                        hlo::primitiveTypeName(indices.type)));
  std::vector<int64_t> idxDims = indices.dims;
  int64_t ivd = *ivdAttr;
  if (ivd == int64_t(idxDims.size())) idxDims.push_back(1);
  if (ivd < 0 || ivd >= int64_t(idxDims.size())) op.fail("index_vector_dim is out of range");
  size_t rank = operand.dims.size();
  if (int64_t(startMap.size()) != idxDims[size_t(ivd)] || sliceSizes.size() != rank)
    op.fail("start_index_map / slice_sizes do not match the operands");
  std::vector<int64_t> offsetOperandDims;
  for (int64_t d = 0; d < int64_t(rank); ++d)
    if (!contains(collapsed, d)) offsetOperandDims.push_back(d);
  const std::vector<int64_t>& out = op.resultShape().dims;
  std::vector<int64_t> batchResultDims;
  for (int64_t d = 0; d < int64_t(out.size()); ++d)
    if (!contains(offsetDims, d)) batchResultDims.push_back(d);
  if (offsetOperandDims.size() != offsetDims.size() || batchResultDims.size() + 1 != idxDims.size())
    op.fail("offset_dims do not match the non-collapsed operand dims");

  int64_t e = op.elemBytes();
  std::vector<int64_t> opStrides = rowMajorStrides(operand.dims), resStrides = rowMajorStrides(out);
  std::vector<int64_t> idxStrides = rowMajorStrides(idxDims);

  // The slice, from its first element in the operand to the result.
  std::vector<MoveAxis> sliceAxes;
  for (size_t j = 0; j < offsetOperandDims.size(); ++j) {
    size_t od = size_t(offsetOperandDims[j]);
    sliceAxes.push_back({sliceSizes[od], opStrides[od], resStrides[size_t(offsetDims[j])]});
  }
  Move slice = elementMove(e, sliceAxes, 0, 0);

  // Batch positions: one step of the index words and of the destination each.
  std::vector<DmaFragment::LoopAxis> batch;
  int64_t points = 1;
  for (size_t d = 0, b = 0; d < idxDims.size(); ++d) {
    if (int64_t(d) == ivd) continue;
    int64_t count = idxDims[d];
    points *= count;
    int64_t dstStep = resStrides[size_t(batchResultDims[b++])] * e;
    if (count == 1) continue;
    if (!batch.empty() && batch.back().steps[0] == idxStrides[d] * count &&
        batch.back().steps[1] == dstStep * count) {
      batch.back() = {batch.back().count * count, {idxStrides[d], dstStep}};
      continue;
    }
    batch.push_back({count, {idxStrides[d], dstStep}});
  }
  if (points == 0 || slice.empty()) return;

  int64_t words = indices.elementCount();
  DmaFragment& f = op.frag;
  f.shareBusyQueues(2 * points * slice.bytes());
  int64_t limit = std::min(kMaxStagedIndices, f.target().smemBytes / 4 / 4);
  if (words > limit)
    op.fail(
        fmt::format("{} gather indices do not fit the SMEM staging area ({} words)", words, limit));
  int64_t staged = f.allocSmem(words);
  isa::DmaDescriptor load;
  load.src = isa::MemorySpace::Hbm;
  load.dst = isa::MemorySpace::Smem;
  load.srcAddr = op.operandAddresses[1];
  load.dstAddr = uint64_t(staged) * 4;
  load.innerBytes = uint32_t(words * 4);
  f.dmaStatic(load);
  f.waitAll();
  op.info.hbmRead += uint64_t(words * 4) + uint64_t(points * slice.bytes());
  op.info.hbmWritten += uint64_t(points * slice.bytes());

  int64_t maxSrc = 0;
  std::vector<int64_t> hi, scale;
  for (int64_t od : startMap) {
    hi.push_back(std::max<int64_t>(0, operand.dims[size_t(od)] - sliceSizes[size_t(od)]));
    scale.push_back(opStrides[size_t(od)] * e);
    maxSrc += hi.back() * scale.back();
  }
  int64_t maxDst = op.resultShape().elementCount() * e;
  int64_t componentStride = idxStrides[size_t(ivd)];
  if (componentStride * int64_t(startMap.size()) > 32767)
    op.fail("the index vector is too far apart in SMEM for sld immediates");

  // One copy of the body per queue, so every queue holds rows in flight (each
  // row is a descriptor of its own; a queue holds queue_depth of them). A
  // single batch axis that the queues do not divide runs the rest after the
  // loop (65,536 tokens on 3 free queues: 2 used before, 18.5 cycles a row).
  int unroll = 1;
  if (!batch.empty())
    for (int u = f.queues(); u > 1; --u)
      if (batch.back().count % u == 0 || (batch.size() == 1 && batch[0].count > u)) {
        unroll = u;
        break;
      }
  std::vector<std::pair<std::vector<DmaFragment::LoopAxis>, int64_t>> parts{{batch, 0}};
  if (batch.size() == 1 && batch[0].count % unroll != 0) {
    int64_t rest = batch[0].count % unroll, main = batch[0].count - rest;
    parts = {{{{main, batch[0].steps}}, 0}, {{{rest, batch[0].steps}}, main}};
  }
  for (auto& [axes, start] : parts) {
    int u = start == 0 ? unroll : int(axes[0].count);
    f.loopNest(axes,
               {f.constant(staged + (start ? start * axes[0].steps[0] : 0)),
                f.constant(start ? start * axes[0].steps[1] : 0)},
               u, [&](const std::vector<MOperand>& cur, int copy) {
                 if (copy == 0) f.deferDmas();
                 std::vector<ScalarValue> starts;
                 for (size_t k = 0; k < startMap.size(); ++k) {
                   ScalarValue v{false, 0, f.loadSmem(cur[0], int64_t(k) * componentStride)};
                   starts.push_back(clampIndex(op, v, hi[k], indices.type));
                 }
                 ScalarValue src = linearOffset(op, starts, scale);
                 if (src.isConst) src = ScalarValue{false, 0, f.constant(src.c)};
                 emitMove(op, slice, op.operandAddresses[0], op.resultAddress,
                          RuntimeOffset{src.reg, maxSrc}, RuntimeOffset{cur[1], maxDst}, false);
                 if (copy == u - 1) f.issueDeferred();
               });
  }
}

}  // namespace tpusim::lower
