// Dispatch of the data-movement lowering and the ops whose geometry is fully
// static: copy, reshape, bitcast, bitcast-convert (same width), transpose,
// slice, concatenate, reverse and broadcast. Each builds a Move in the
// result's dimension order (so the destination side is dense row-major and
// merges well) and emits it (DmaEmit.cpp).
#include "compiler/lower/dma/DataMovement.h"

#include <fmt/format.h>

#include "compiler/lower/CannotLower.h"
#include "compiler/lower/dma/DmaLowering.h"
#include "kernels/codegen/RegAlloc.h"

namespace tpusim::lower {

using hlo::HloOpcode;

void DmaOp::fail(const std::string& reason) const { throw CannotLower::of(instr, reason); }

const hlo::Shape& DmaOp::operandShape(int64_t i) const { return instr.operand(i)->shape(); }

int64_t DmaOp::elemBytes() const {
  int bits = hlo::bitWidth(instr.shape().type);
  if (instr.shape().type == hlo::PrimitiveType::Pred) bits = 8;
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    fail(fmt::format("element type {} is not supported (1, 2, 4 or 8-byte elements only)",
                     hlo::primitiveTypeName(instr.shape().type)));
  return bits / 8;
}

namespace {

std::vector<MoveAxis> denseAxes(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s = rowMajorStrides(dims);
  std::vector<MoveAxis> axes;
  for (size_t i = 0; i < dims.size(); ++i) axes.push_back({dims[i], s[i], s[i]});
  return axes;
}

void lowerWholeCopy(DmaOp& op) {
  if (op.operandAddresses[0] == op.resultAddress) return;  // the bytes are already there
  int64_t e = op.elemBytes();
  emitMove(op, elementMove(e, denseAxes(op.resultShape().dims), 0, 0), op.operandAddresses[0],
           op.resultAddress);
}

void lowerTranspose(DmaOp& op) {
  if (tryXluTranspose(op)) return;
  const std::vector<int64_t>& perm = op.instr.dimensions();
  const hlo::Shape& in = op.operandShape(0);
  std::vector<int64_t> src = rowMajorStrides(in.dims), dst = rowMajorStrides(op.resultShape().dims);
  std::vector<MoveAxis> axes;
  for (size_t i = 0; i < perm.size(); ++i)
    axes.push_back({op.resultShape().dims[i], src.at(size_t(perm[i])), dst[i]});
  emitMove(op, elementMove(op.elemBytes(), axes, 0, 0), op.operandAddresses[0], op.resultAddress);
}

void lowerSlice(DmaOp& op) {
  const auto& slice = *op.instr.attrs().slice;
  const hlo::Shape& in = op.operandShape(0);
  std::vector<int64_t> src = rowMajorStrides(in.dims), dst = rowMajorStrides(op.resultShape().dims);
  std::vector<MoveAxis> axes;
  int64_t start = 0;
  for (size_t i = 0; i < slice.size(); ++i) {
    axes.push_back({op.resultShape().dims[i], src[i] * slice[i].stride, dst[i]});
    start += slice[i].start * src[i];
  }
  emitMove(op, elementMove(op.elemBytes(), axes, start, 0), op.operandAddresses[0],
           op.resultAddress);
}

void lowerConcatenate(DmaOp& op) {
  int64_t dim = op.instr.dimensions().at(0);
  std::vector<int64_t> dst = rowMajorStrides(op.resultShape().dims);
  int64_t at = 0;
  for (int64_t k = 0; k < op.instr.operandCount(); ++k) {
    const hlo::Shape& in = op.operandShape(k);
    std::vector<int64_t> src = rowMajorStrides(in.dims);
    std::vector<MoveAxis> axes;
    for (size_t i = 0; i < in.dims.size(); ++i) axes.push_back({in.dims[i], src[i], dst[i]});
    emitMove(op, elementMove(op.elemBytes(), axes, 0, at * dst[size_t(dim)]),
             op.operandAddresses[size_t(k)], op.resultAddress);
    at += in.dims[size_t(dim)];
  }
}

void lowerReverse(DmaOp& op) {
  const hlo::Shape& in = op.operandShape(0);
  std::vector<int64_t> s = rowMajorStrides(in.dims);
  std::vector<bool> reversed(in.dims.size(), false);
  for (int64_t d : op.instr.dimensions()) reversed.at(size_t(d)) = true;
  std::vector<MoveAxis> axes;
  int64_t start = 0;
  for (size_t i = 0; i < in.dims.size(); ++i) {
    if (reversed[i] && in.dims[i] > 1) {
      axes.push_back({in.dims[i], -s[i], s[i]});
      start += (in.dims[i] - 1) * s[i];
    } else {
      axes.push_back({in.dims[i], s[i], s[i]});
    }
  }
  if (!in.dims.empty() && reversed.back() && in.dims.back() > 1 &&
      in.elementCount() / in.dims.back() > 1 << 16)
    op.fail("reversing the innermost dimension moves single elements; too many for DMA");
  emitMove(op, elementMove(op.elemBytes(), axes, start, 0), op.operandAddresses[0],
           op.resultAddress);
}

void lowerBroadcast(DmaOp& op) {
  const hlo::Shape& in = op.operandShape(0);
  const std::vector<int64_t>& map = op.instr.dimensions();
  std::vector<int64_t> src = rowMajorStrides(in.dims), dst = rowMajorStrides(op.resultShape().dims);
  std::vector<MoveAxis> axes;
  for (size_t i = 0; i < op.resultShape().dims.size(); ++i) {
    int64_t s = 0;  // a broadcast dimension repeats the same source bytes
    for (size_t j = 0; j < map.size(); ++j)
      if (map[j] == int64_t(i)) s = src[j];
    axes.push_back({op.resultShape().dims[i], s, dst[i]});
  }
  Move m = elementMove(op.elemBytes(), axes, 0, 0);
  // Innermost broadcast dims with short runs ([N] -> [N, M], dims={0}) would
  // read every element M times in tiny requests. Instead: write each run
  // once, then double the written part of every row in place (M/2 .. M).
  if (!m.empty() && m.run < 512 && !m.axes.empty() && m.axes.back().src == 0 &&
      m.axes.back().dst == m.run) {
    int64_t copies = m.axes.back().count;
    Move first = m;
    first.axes.pop_back();
    emitMove(op, first, op.operandAddresses[0], op.resultAddress);
    for (int64_t have = 1; have < copies; have *= 2) {
      op.frag.waitAll();  // the part copied from is written
      Move grow = first;
      for (MoveAxis& a : grow.axes) a.src = a.dst;
      grow.run = std::min(have, copies - have) * m.run;
      grow.srcOffset = m.dstOffset;
      grow.dstOffset = m.dstOffset + have * m.run;
      emitMove(op, grow, op.resultAddress, op.resultAddress);
    }
    return;
  }
  emitMove(op, m, op.operandAddresses[0], op.resultAddress);
}

// A bitcast-convert that keeps every byte in place: the same width, or
// 64-bit elements seen as pairs of 32-bit words (s64[S] <-> u32[S,2], the low
// word first, as XLA defines it for little-endian memory).
bool sameWidth(const hlo::HloInstruction& i) {
  if (i.operandCount() != 1) return false;
  const hlo::Shape &r = i.shape(), &o = i.operand(0)->shape();
  if (hlo::bitWidth(r.type) == hlo::bitWidth(o.type)) return true;
  return r.isArray() && o.isArray() &&
         r.elementCount() * hlo::bitWidth(r.type) == o.elementCount() * hlo::bitWidth(o.type);
}

}  // namespace

bool isDataMovement(const hlo::HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::Copy:
    case HloOpcode::Transpose:
    case HloOpcode::Reshape:
    case HloOpcode::Bitcast:
    case HloOpcode::Slice:
    case HloOpcode::Concatenate:
    case HloOpcode::Pad:
    case HloOpcode::Broadcast:
    case HloOpcode::Reverse:
    case HloOpcode::DynamicSlice:
    case HloOpcode::DynamicUpdateSlice:
    case HloOpcode::Gather:
    case HloOpcode::Scatter:
      return true;
    case HloOpcode::BitcastConvert:
      return sameWidth(instr);
    default:
      return false;
  }
}

kernels::codegen::CompiledKernel lowerDataMovement(const hlo::HloInstruction& instr,
                                                   const std::vector<uint64_t>& operandAddresses,
                                                   uint64_t resultAddress,
                                                   const kernels::codegen::TargetInfo& target,
                                                   const FragmentPlacement& placement) {
  if (!isDataMovement(instr)) throw CannotLower::of(instr, "not a data-movement instruction");
  if (int64_t(operandAddresses.size()) != instr.operandCount())
    throw CannotLower::of(instr, fmt::format("{} operand addresses given for {} operands",
                                             operandAddresses.size(), instr.operandCount()));
  if (!instr.shape().isArray()) throw CannotLower::of(instr, "the result is not an array");
  for (const hlo::HloInstruction* o : instr.operands())
    if (!o->shape().isArray()) throw CannotLower::of(instr, "an operand is not an array");

  const hlo::OpMetadata& md = instr.attrs().metadata;
  FragmentInfo info;
  info.name = instr.name();
  info.hloInstruction = md.opName.empty() ? instr.name() : hlo::unescapeHloString(md.opName);
  info.sourceFile = hlo::unescapeHloString(md.sourceFile);
  info.sourceLine = uint32_t(md.sourceLine ? *md.sourceLine : instr.sourceLine());
  DmaFragment frag(target, placement);
  DmaOp op{instr, operandAddresses, resultAddress, frag, info};
  op.elemBytes();  // checks the element type
  try {
    switch (instr.opcode()) {
      case HloOpcode::Copy:
      case HloOpcode::Reshape:
      case HloOpcode::Bitcast:
      case HloOpcode::BitcastConvert:
        lowerWholeCopy(op);
        break;
      case HloOpcode::Transpose:
        lowerTranspose(op);
        break;
      case HloOpcode::Slice:
        lowerSlice(op);
        break;
      case HloOpcode::Concatenate:
        lowerConcatenate(op);
        break;
      case HloOpcode::Reverse:
        lowerReverse(op);
        break;
      case HloOpcode::Broadcast:
        lowerBroadcast(op);
        break;
      case HloOpcode::Pad:
        lowerPad(op);
        break;
      case HloOpcode::DynamicSlice:
        lowerDynamicSlice(op);
        break;
      case HloOpcode::DynamicUpdateSlice:
        lowerDynamicUpdateSlice(op);
        break;
      case HloOpcode::Gather:
        lowerGather(op);
        break;
      case HloOpcode::Scatter:
        lowerScatter(op);
        break;
      default:
        op.fail("not a data-movement instruction");
    }
    return frag.finish(info);
  } catch (const kernels::codegen::CodegenError& e) {
    throw CannotLower::of(instr, e.what());
  }
}

}  // namespace tpusim::lower
