// dynamic-slice and dynamic-update-slice: the window's start indices are read
// at run time (or folded when they are constants), clamped as XLA clamps them
// (start in [0, dim - size], so the window stays in bounds) and turned into a
// byte offset that is written into the descriptor before the `dma`.
#include <fmt/format.h>

#include "compiler/lower/dma/DmaLowering.h"

namespace tpusim::lower {

namespace {

// The clamped byte offset of a window of `window` dims at the start indices
// held by operands [firstIndex, firstIndex + rank) inside an array of `dims`.
struct WindowOffset {
  ScalarValue offset;
  int64_t max = 0;
};

WindowOffset windowOffset(DmaOp& op, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& window, int64_t firstIndex) {
  size_t rank = dims.size();
  if (op.instr.operandCount() != firstIndex + int64_t(rank))
    op.fail(fmt::format("expected {} start indices (one per dimension), got {}", rank,
                        op.instr.operandCount() - firstIndex));
  std::vector<int64_t> which;
  for (size_t i = 0; i < rank; ++i) which.push_back(firstIndex + int64_t(i));
  std::vector<ScalarValue> starts = loadIndexScalars(op, which);
  std::vector<int64_t> strides = rowMajorStrides(dims);
  int64_t e = op.elemBytes();
  std::vector<ScalarValue> clamped;
  std::vector<int64_t> scale;
  WindowOffset w;
  for (size_t i = 0; i < rank; ++i) {
    int64_t hi = dims[i] - window[i];
    if (hi < 0) op.fail(fmt::format("the window is larger than dimension {}", i));
    hlo::PrimitiveType t = op.instr.operand(which[i])->shape().type;
    clamped.push_back(clampIndex(op, starts[i], hi, t));
    scale.push_back(strides[i] * e);
    w.max += hi * strides[i] * e;
  }
  w.offset = linearOffset(op, clamped, scale);
  return w;
}

std::vector<MoveAxis> windowAxes(const std::vector<int64_t>& window,
                                 const std::vector<int64_t>& srcDims,
                                 const std::vector<int64_t>& dstDims) {
  std::vector<int64_t> s = rowMajorStrides(srcDims), d = rowMajorStrides(dstDims);
  std::vector<MoveAxis> axes;
  for (size_t i = 0; i < window.size(); ++i) axes.push_back({window[i], s[i], d[i]});
  return axes;
}

}  // namespace

void lowerDynamicSlice(DmaOp& op) {
  const std::vector<int64_t>& in = op.operandShape(0).dims;
  const std::vector<int64_t>& out = op.resultShape().dims;
  if (out.size() != in.size()) op.fail("the result rank differs from the operand's");
  WindowOffset w = windowOffset(op, in, out, 1);
  Move m = elementMove(op.elemBytes(), windowAxes(out, in, out), 0, 0);
  if (w.offset.isConst) {
    m.srcOffset += w.offset.c;
    emitMove(op, m, op.operandAddresses[0], op.resultAddress);
  } else {
    emitMove(op, m, op.operandAddresses[0], op.resultAddress, RuntimeOffset{w.offset.reg, w.max});
  }
}

void lowerDynamicUpdateSlice(DmaOp& op) {
  const std::vector<int64_t>& in = op.operandShape(0).dims;
  const std::vector<int64_t>& upd = op.operandShape(1).dims;
  if (upd.size() != in.size()) op.fail("the update's rank differs from the operand's");
  int64_t e = op.elemBytes();
  // Out of place: the operand is copied first; the indices load meanwhile.
  if (op.operandAddresses[0] != op.resultAddress)
    emitMove(op, elementMove(e, windowAxes(in, in, in), 0, 0), op.operandAddresses[0],
             op.resultAddress);
  WindowOffset w = windowOffset(op, in, upd, 2);
  op.frag.waitAll();  // the copy lands before the update overwrites its window
  Move m = elementMove(e, windowAxes(upd, upd, in), 0, 0);
  if (w.offset.isConst) {
    m.dstOffset += w.offset.c;
    emitMove(op, m, op.operandAddresses[1], op.resultAddress);
  } else {
    emitMove(op, m, op.operandAddresses[1], op.resultAddress, std::nullopt,
             RuntimeOffset{w.offset.reg, w.max});
  }
}

}  // namespace tpusim::lower
