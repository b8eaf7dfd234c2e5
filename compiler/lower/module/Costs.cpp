#include "compiler/lower/module/Costs.h"

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/buffers/ShapeBytes.h"

namespace tpusim::lower {

using hlo::HloInstruction;
using hlo::HloOpcode;

uint64_t denseBytes(const hlo::Shape& shape) {
  if (shape.isTuple()) {
    uint64_t sum = 0;
    for (const hlo::Shape& e : shape.tupleShapes) sum += denseBytes(e);
    return sum;
  }
  if (!shape.isArray()) return 0;
  return uint64_t(shape.elementCount()) * uint64_t(elementBytes(shape.type));
}

double hloFlops(const HloInstruction& inst) {
  HloOpcode op = inst.opcode();
  const hlo::Shape& out = inst.shape();
  if (op == HloOpcode::Fusion) {
    double sum = 0;
    for (const hlo::HloComputation* c : inst.calledComputations())
      if (c)
        for (const auto& member : c->instructions()) sum += hloFlops(*member);
    return sum;
  }
  if (op == HloOpcode::Dot && inst.operandCount() == 2) {
    // 2 x (output elements) x (product of the contracting dims).
    const hlo::Shape& lhs = inst.operand(0)->shape();
    double k = 1;
    for (int64_t d : inst.attrs().dot.lhsContracting)
      if (d >= 0 && d < lhs.rank()) k *= double(lhs.dims[size_t(d)]);
    return 2.0 * double(out.elementCount()) * k;
  }
  if (op == HloOpcode::Reduce && inst.operandCount() >= 1)
    return double(inst.operand(0)->shape().elementCount());
  if (hlo::isElementwise(op) && op != HloOpcode::Convert && out.isArray())
    return double(out.elementCount());
  return 0;
}

isa::CostEntry hloCost(const HloInstruction& inst, const std::string& opName) {
  isa::CostEntry c;
  c.opName = opName;
  c.flops = hloFlops(inst);
  for (const HloInstruction* op : inst.operands()) c.hbmBytesRead += denseBytes(op->shape());
  c.hbmBytesWritten = denseBytes(inst.shape());
  return c;
}

}  // namespace tpusim::lower
