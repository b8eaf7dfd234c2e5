// Run-time index scalars of dynamic-slice, dynamic-update-slice and pad
// values: folded from constant operands, otherwise DMA'd HBM -> SMEM, waited
// for, and loaded into scalar registers; clamping and address arithmetic.
#include <fmt/format.h>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/dma/DmaLowering.h"

namespace tpusim::lower {

using isa::Opcode;

namespace {
bool isIndexType(hlo::PrimitiveType t) {
  switch (t) {
    case hlo::PrimitiveType::S8:
    case hlo::PrimitiveType::S16:
    case hlo::PrimitiveType::S32:
    case hlo::PrimitiveType::U8:
    case hlo::PrimitiveType::U16:
    case hlo::PrimitiveType::U32:
      return true;
    default:
      return false;
  }
}
}  // namespace

std::vector<ScalarValue> loadIndexScalars(DmaOp& op, const std::vector<int64_t>& operandIndices) {
  DmaFragment& f = op.frag;
  std::vector<ScalarValue> out(operandIndices.size());
  std::vector<std::pair<size_t, int64_t>> fromSmem;  // (position, SMEM word)
  for (size_t i = 0; i < operandIndices.size(); ++i) {
    const hlo::HloInstruction* operand = op.instr.operand(operandIndices[i]);
    const hlo::Shape& shape = operand->shape();
    if (!shape.isScalar() || !isIndexType(shape.type))
      op.fail(
          fmt::format("index operand {} is {}; only s8/s16/s32/u8/u16/u32 scalars are supported",
                      operandIndices[i], shape.toString(false)));
    if (operand->opcode() == hlo::HloOpcode::Constant && operand->literal() &&
        !operand->literal()->elided && operand->literal()->size() == 1) {
      out[i] = ScalarValue{true, operand->literal()->getInt(0), {}};
      continue;
    }
    int64_t bytes = int64_t(hlo::bitWidth(shape.type) / 8);
    int64_t word = f.allocSmem(1);
    isa::DmaDescriptor d;
    d.src = isa::MemorySpace::Hbm;
    d.dst = isa::MemorySpace::Smem;
    d.srcAddr = op.operandAddresses.at(size_t(operandIndices[i]));
    d.dstAddr = uint64_t(word) * 4;
    d.innerBytes = uint32_t(bytes);
    f.dmaStatic(d);
    op.info.hbmRead += uint64_t(bytes);
    fromSmem.push_back({i, word});
  }
  if (fromSmem.empty()) return out;
  f.waitAll();
  for (auto [i, word] : fromSmem) {
    MOperand v = f.loadSmem(f.constant(word), 0);
    // The DMA wrote the low bytes of a word that is otherwise zero (the
    // fragment owns it and loads it as zero): sign-extend narrow signed types.
    hlo::PrimitiveType t = op.instr.operand(operandIndices[i])->shape().type;
    int bits = hlo::bitWidth(t);
    if (bits < 32 && hlo::isSignedIntegralType(t)) {
      MOperand up = f.binary(Opcode::SShl, v, f.constant(32 - bits));
      v = f.binary(Opcode::SSra, up, f.constant(32 - bits));
    }
    out[i] = ScalarValue{false, 0, v};
  }
  return out;
}

ScalarValue clampIndex(DmaOp& op, const ScalarValue& v, int64_t hi, hlo::PrimitiveType type) {
  if (hi < 0) hi = 0;
  bool isUnsigned = hlo::isUnsignedIntegralType(type);
  if (v.isConst) {
    int64_t c = v.c;
    if (isUnsigned && c < 0) c = hi;  // a huge unsigned value
    return ScalarValue{true, std::max<int64_t>(0, std::min(c, hi)), {}};
  }
  DmaFragment& f = op.frag;
  MOperand limit = f.constant(hi);
  if (isUnsigned) {
    // v <u hi + 1 ? v : hi  (values >= 2^31 are large, not negative)
    MOperand inRange = f.binary(Opcode::SCmpLtu, v.reg, f.constant(hi + 1));
    return ScalarValue{false, 0, f.select(inRange, v.reg, limit)};
  }
  MOperand low = f.binary(Opcode::SMax, v.reg, f.constant(0));
  return ScalarValue{false, 0, f.binary(Opcode::SMin, low, limit)};
}

ScalarValue linearOffset(DmaOp& op, const std::vector<ScalarValue>& values,
                         const std::vector<int64_t>& scale) {
  int64_t c = 0;
  std::optional<MOperand> sum;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].isConst) {
      c += values[i].c * scale[i];
      continue;
    }
    if (scale[i] == 0) continue;
    MOperand term = op.frag.mulImm(values[i].reg, scale[i]);
    sum = sum ? op.frag.binary(Opcode::SAdd, *sum, term) : term;
  }
  if (!sum) return ScalarValue{true, c, {}};
  if (c != 0) sum = op.frag.addImm(*sum, c);
  return ScalarValue{false, 0, *sum};
}

}  // namespace tpusim::lower
