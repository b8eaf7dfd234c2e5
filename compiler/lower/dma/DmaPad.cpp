// pad: the result is first filled with the padding value, then the operand's
// elements are moved to their places (edge padding, interior padding and
// negative padding, which crops, all reduce to one strided move). With edge
// padding only, just the padded slabs are filled, alongside the move.
//
// The fill: a pattern of up to 512 bytes of the value sits in SMEM (in the
// data segment when the value is a constant, else DMA'd from HBM element by
// element with a zero source stride), and one SMEM -> HBM descriptor repeats
// it over the result (zero source stride again), cut across the queues.
#include <fmt/format.h>

#include <cstring>
#include <optional>
#include <vector>

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

// A block of the result to fill: `bytes` contiguous bytes at `offset`, repeated over `outer`.
struct FillRegion {
  int64_t offset = 0, bytes = 0;
  std::vector<MoveAxis> outer;
};

void fillRegions(DmaOp& op, const std::vector<FillRegion>& regions) {
  DmaFragment& f = op.frag;
  int64_t e = op.elemBytes();
  int64_t largest = 0;
  for (const FillRegion& r : regions) largest = std::max(largest, r.bytes);
  int64_t pattern = std::min(kPatternBytes, largest);
  if (pattern == 0) return;
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
  const MoveSpaces spaces{isa::MemorySpace::Smem, isa::MemorySpace::Hbm};
  for (const FillRegion& r : regions) {
    if (r.bytes == 0) continue;
    int64_t repeats = 1;
    for (const MoveAxis& a : r.outer) repeats *= a.count;
    if (repeats == 0) continue;
    if (int64_t full = r.bytes / pattern) {
      Move fill;
      fill.run = pattern;
      fill.axes = r.outer;
      fill.axes.push_back(MoveAxis{full, 0, pattern});
      fill.dstOffset = r.offset;
      emitMove(op, fill, smemAddr, op.resultAddress, std::nullopt, std::nullopt, false, spaces);
    }
    if (int64_t rest = r.bytes % pattern) {
      Move tail;
      tail.run = rest;
      tail.axes = r.outer;
      tail.dstOffset = r.offset + r.bytes - rest;
      emitMove(op, tail, smemAddr, op.resultAddress, std::nullopt, std::nullopt, false, spaces);
    }
    op.info.hbmWritten += uint64_t(r.bytes * repeats);
  }
}

// Edge padding only (no interior padding, no cropping): the padded slabs of
// each dim, between the operand's rows in the dims before it. The operand's
// elements land elsewhere, so the fills and the move need not wait for each
// other, and the result is written once (a whole fill first wrote it twice).
std::optional<std::vector<FillRegion>> edgeRegions(const std::vector<int64_t>& in,
                                                   const std::vector<int64_t>& out,
                                                   const std::vector<hlo::PaddingDim>& padding,
                                                   int64_t e) {
  std::vector<int64_t> d = rowMajorStrides(out);
  for (const hlo::PaddingDim& p : padding)
    if (p.interior != 0 || p.low < 0 || p.high < 0) return std::nullopt;
  std::vector<FillRegion> regions;
  std::vector<MoveAxis> outer;
  int64_t base = 0;  // the operand's first element in the dims so far
  for (size_t i = 0; i < in.size(); ++i) {
    const hlo::PaddingDim& p = padding[i];
    int64_t slab = d[i] * e;
    if (p.low > 0) regions.push_back({base, p.low * slab, outer});
    if (p.high > 0) regions.push_back({base + (p.low + in[i]) * slab, p.high * slab, outer});
    outer.push_back(MoveAxis{in[i], 0, slab});
    base += p.low * slab;
  }
  return regions;
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
    if (auto regions = edgeRegions(in, out, padding, e)) {
      fillRegions(op, *regions);
    } else {
      fillRegions(op, {FillRegion{0, total, {}}});
      op.frag.waitAll();  // the fill lands before the operand's elements
    }
  }
  Move m = elementMove(e, axes, 0, 0);
  m.srcOffset += srcStart * e;
  m.dstOffset += dstStart * e;
  emitMove(op, m, op.operandAddresses[0], op.resultAddress);
}

}  // namespace tpusim::lower
