#include "compiler/lower/module/Layouts.h"

#include "compiler/hlo/HloComputation.h"

namespace tpusim::lower {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

namespace {

bool isDefaultOrder(const Shape& s) {
  std::vector<int64_t> order = s.minorToMajorOrDefault();
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != int64_t(order.size() - 1 - i)) return false;
  return true;
}

bool layoutMatters(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::Bitcast || inst.operandCount() != 1) return false;
  const Shape& from = inst.operand(0)->shape();
  const Shape& to = inst.shape();
  return from.isArray() && to.isArray() && !(isDefaultOrder(from) && isDefaultOrder(to));
}

int64_t strip(Shape& s) {
  if (s.isTuple()) {
    int64_t n = 0;
    for (Shape& e : s.tupleShapes) n += strip(e);
    return n;
  }
  if (!s.layout) return 0;
  s.layout.reset();
  return 1;
}

}  // namespace

int64_t dropLayouts(hlo::HloModule& module) {
  for (const auto& comp : module.computations())
    for (const auto& inst : comp->instructions())
      if (layoutMatters(*inst)) return 0;
  int64_t n = 0;
  for (const auto& comp : module.computations())
    for (const auto& inst : comp->instructions()) n += strip(inst->mutableShape());
  return n;
}

}  // namespace tpusim::lower
