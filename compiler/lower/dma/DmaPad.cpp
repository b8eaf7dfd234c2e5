// pad: the result is first filled with the padding value, then the operand's
// elements are moved to their places (edge padding, interior padding and
// negative padding, which crops, all reduce to one strided move).
//
// The fill: a pattern of up to 512 bytes of the value sits in SMEM (in the
// data segment when the value is a constant, else DMA'd from HBM element by
// element with a zero source stride), and one SMEM -> HBM descriptor repeats
// it over the result (zero source stride again), cut across the queues.
#include <fmt/format.h>

#include <cstring>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/dma/DmaLowering.h"
#include "isa/support/Numerics.h"

namespace tpusim::lower {

namespace {

constexpr int64_t kPatternBytes = 512;  // one DMA request

// The padding value's bits as one element, when it is a constant we can encode.
std::optional<uint32_t> constantBits(const hlo::HloInstruction& value) {
  const hlo::Literal* lit = value.literal();
  if (value.opcode() != hlo::HloOpcode::Constant || !lit || lit->elided || lit->size() != 1)
    return std::nullopt;
  switch (value.shape().type) {
    case hlo::PrimitiveType::F32: {
      float f = float(lit->getDouble(0));
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      return bits;
    }
    case hlo::PrimitiveType::BF16:
      return f32ToBf16Bits(float(lit->getDouble(0)));
    case hlo::PrimitiveType::Pred:
    case hlo::PrimitiveType::S8:
    case hlo::PrimitiveType::U8:
    case hlo::PrimitiveType::S16:
    case hlo::PrimitiveType::U16:
    case hlo::PrimitiveType::S32:
    case hlo::PrimitiveType::U32:
      return uint32_t(uint64_t(lit->getInt(0)));
    default:
      return std::nullopt;  // read from HBM instead
  }
}

uint32_t replicate(uint32_t bits, int64_t elemBytes) {
  if (elemBytes == 1) return (bits & 0xFF) * 0x01010101u;
  if (elemBytes == 2) return (bits & 0xFFFF) * 0x00010001u;
  return bits;
}

void fillResult(DmaOp& op, int64_t total) {
  DmaFragment& f = op.frag;
  int64_t e = op.elemBytes();
  int64_t pattern = std::min(kPatternBytes, total);
  int64_t word = f.allocSmem((pattern + 3) / 4);
  uint64_t smemAddr = uint64_t(word) * 4;
  if (auto bits = constantBits(*op.instr.operand(1))) {
    for (int64_t w = 0; w < (pattern + 3) / 4; ++w) f.initSmem(word + w, replicate(*bits, e));
  } else {
    isa::DmaDescriptor d;
    d.src = isa::MemorySpace::Hbm;
    d.dst = isa::MemorySpace::Smem;
    d.srcAddr = op.operandAddresses[1];
    d.dstAddr = smemAddr;
    d.innerBytes = uint32_t(e);
    if (pattern / e > 1) {
      d.numDims = 2;
      d.counts[0] = uint32_t(pattern / e);
      d.srcStrides[0] = 0;
      d.dstStrides[0] = uint32_t(e);
    }
    f.dmaStatic(d);
    op.info.hbmRead += uint64_t(e);
    f.waitAll();
  }
  Move fill;
  fill.run = pattern;
  fill.axes = {MoveAxis{total / pattern, 0, pattern}};
  emitMove(op, fill, smemAddr, op.resultAddress, std::nullopt, std::nullopt, false,
           MoveSpaces{isa::MemorySpace::Smem, isa::MemorySpace::Hbm});
  if (int64_t rest = total % pattern) {
    Move tail;
    tail.run = rest;
    tail.dstOffset = total - rest;
    emitMove(op, tail, smemAddr, op.resultAddress, std::nullopt, std::nullopt, false,
             MoveSpaces{isa::MemorySpace::Smem, isa::MemorySpace::Hbm});
  }
  op.info.hbmWritten += uint64_t(total);
}

}  // namespace

void lowerPad(DmaOp& op) {
  const std::vector<int64_t>& in = op.operandShape(0).dims;
  const std::vector<int64_t>& out = op.resultShape().dims;
  const auto& padding = *op.instr.attrs().padding;
  if (padding.size() != in.size()) op.fail("the padding has the wrong number of dimensions");
  int64_t e = op.elemBytes();
  std::vector<int64_t> s = rowMajorStrides(in), d = rowMajorStrides(out);
  std::vector<MoveAxis> axes;
  int64_t srcStart = 0, dstStart = 0;
  bool coversResult = true;
  for (size_t i = 0; i < in.size(); ++i) {
    const hlo::PaddingDim& p = padding[i];
    int64_t step = p.interior + 1;
    // Operand index j lands at p.low + j * step; keep those inside [0, out).
    int64_t first = p.low < 0 ? (-p.low + step - 1) / step : 0;
    int64_t last = std::min(in[i] - 1, out[i] - 1 - p.low < 0 ? -1 : (out[i] - 1 - p.low) / step);
    int64_t count = std::max<int64_t>(0, last - first + 1);
    axes.push_back({count, s[i], d[i] * step});
    srcStart += first * s[i];
    dstStart += (p.low + first * step) * d[i];
    if (count != out[i] || step != 1) coversResult = false;
  }
  int64_t total = op.resultShape().elementCount() * e;
  if (total == 0) return;
  if (!coversResult) {
    fillResult(op, total);
    op.frag.waitAll();  // the fill lands before the operand's elements
  }
  Move m = elementMove(e, axes, 0, 0);
  m.srcOffset += srcStart * e;
  m.dstOffset += dstStart * e;
  emitMove(op, m, op.operandAddresses[0], op.resultAddress);
}

}  // namespace tpusim::lower
