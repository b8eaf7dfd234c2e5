// promote-to-f32: the module computes in f32 wherever it computed in bf16, so
// that evaluating it gives the values a bf16 module approximates (tpusim
// --check judges bf16 rounding against them, sim/tools/tpusim/ReferenceCheck.h).
//   - every bf16 shape (in every computation, tuples included, constants'
//     literals too) becomes f32; a layout keeps its dimension order but loses
//     its tiles and element size, which were chosen for 16-bit elements;
//   - the entry parameters keep bf16 (they are the calling convention: the
//     caller's bytes) and are converted to f32 for their users;
//   - bitcast-convert reinterprets bits, so it keeps its bf16 operand (a
//     convert back to bf16 first) and its bf16 result (converted to f32 after);
//   - the entry's results become f32 (they carry the extra precision).
// Converts to bf16 inside the module become f32 -> f32 converts: no rounding.
#include <unordered_map>

#include "compiler/hlo/HloModule.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using hlo::Shape;

bool hasBf16(const Shape& s) {
  if (s.isTuple()) {
    for (const Shape& e : s.tupleShapes)
      if (hasBf16(e)) return true;
    return false;
  }
  return s.type == PrimitiveType::BF16;
}

Shape promoted(const Shape& s) {
  Shape out = s;
  if (s.isTuple()) {
    for (Shape& e : out.tupleShapes) e = promoted(e);
    return out;
  }
  if (s.type != PrimitiveType::BF16) return out;
  out.type = PrimitiveType::F32;
  if (out.layout) {
    out.layout->tiles.clear();
    out.layout->elementSizeBits = 0;
  }
  return out;
}

// The name suffix of a value converted to `to`.
const char* suffix(const Shape& to) { return hasBf16(to) ? ".bf16" : ".f32"; }

// `value` (of shape `from`) as shape `to`, which differs only in bf16 <-> f32
// element types: converts where the types differ, through the tuple elements.
HloInstruction* convertedTo(HloComputation* comp, HloInstruction* value, const Shape& from,
                            const Shape& to) {
  if (from == to) return value;
  if (!from.isTuple())
    return addNew(comp, HloOpcode::Convert, value->name() + suffix(to), to, {value});
  std::vector<HloInstruction*> parts;
  for (size_t i = 0; i < from.tupleShapes.size(); ++i) {
    HloInstruction* part = addNew(comp, HloOpcode::GetTupleElement, value->name() + ".element",
                                  from.tupleShapes[i], {value});
    hlo::AttrValue index;
    index.kind = hlo::AttrValue::Kind::Int;
    index.i = static_cast<int64_t>(i);
    part->setGeneric("index", index);
    parts.push_back(convertedTo(comp, part, from.tupleShapes[i], to.tupleShapes[i]));
  }
  return addNew(comp, HloOpcode::Tuple, value->name() + suffix(to), to, parts);
}

// Gives `inst` back its original (bf16) shape and its users the f32 value.
void keepBf16Result(HloInstruction* inst, const Shape& original) {
  Shape wide = inst->shape();
  std::vector<HloInstruction*> users = inst->users();
  bool wasRoot = inst->parent()->root() == inst;
  inst->setShape(original);
  HloInstruction* wideValue = convertedTo(inst->parent(), inst, original, wide);
  for (HloInstruction* user : users) user->replaceOperandWith(inst, wideValue);
  if (wasRoot) inst->parent()->setRoot(wideValue);
}

class PromoteToF32Pass : public HloPass {
 public:
  std::string_view name() const override { return "promote-to-f32"; }

  bool run(hlo::HloModule& module) override {
    std::unordered_map<HloInstruction*, Shape> original;
    std::vector<HloInstruction*> bitcastConverts;
    for (const auto& comp : module.computations())
      for (const auto& inst : comp->instructions()) {
        if (!hasBf16(inst->shape()) && inst->opcode() != HloOpcode::BitcastConvert) continue;
        original.emplace(inst.get(), inst->shape());
        if (inst->opcode() == HloOpcode::BitcastConvert) bitcastConverts.push_back(inst.get());
      }
    if (original.empty()) return false;

    for (auto& [inst, shape] : original) {
      inst->setShape(promoted(shape));
      if (inst->attrs().literal)
        inst->attrs().literal->shape = promoted(inst->attrs().literal->shape);
    }
    if (HloComputation* entry = module.entry())
      for (HloInstruction* param : entry->parameters())
        if (param && original.count(param)) keepBf16Result(param, original.at(param));
    for (HloInstruction* bc : bitcastConverts) {
      HloInstruction* operand = bc->operand(0);
      auto it = original.find(operand);
      if (it != original.end() && hasBf16(it->second) && operand->shape() != it->second)
        bc->replaceOperand(0, convertedTo(bc->parent(), operand, operand->shape(), it->second));
      if (hasBf16(original.at(bc))) keepBf16Result(bc, original.at(bc));
    }
    rewriteEntryComputationLayout(module);
    return true;
  }
};

}  // namespace

std::unique_ptr<HloPass> createPromoteToF32Pass() { return std::make_unique<PromoteToF32Pass>(); }

}  // namespace tpusim::passes
