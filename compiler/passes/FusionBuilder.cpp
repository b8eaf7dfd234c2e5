#include "compiler/passes/FusionBuilder.h"

#include <fmt/format.h>

#include <algorithm>

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

std::string freshName(NameTable* names, const std::string& base) {
  return names ? names->fresh(base) : base;
}

HloInstruction* addParameter(FusedBody& fb, HloInstruction* outer, NameTable* names) {
  int64_t number = static_cast<int64_t>(fb.operands.size());
  auto p = HloInstruction::create(
      HloOpcode::Parameter, freshName(names, fmt::format("param_{}", number)), outer->shape());
  p->attrs().parameterNumber = number;
  fb.operands.push_back(outer);
  return fb.comp->addInstruction(std::move(p));
}

HloInstruction* parameterFor(FusedBody& fb, HloInstruction* outer, NameTable* names) {
  auto it = std::find(fb.operands.begin(), fb.operands.end(), outer);
  if (it != fb.operands.end())
    return fb.comp->parameter(static_cast<int64_t>(it - fb.operands.begin()));
  return addParameter(fb, outer, names);
}

}  // namespace

NameTable::NameTable(const hlo::HloModule& module) {
  for (const auto& c : module.computations())
    for (const auto& i : c->instructions()) used_.insert(i->name());
}

std::string NameTable::fresh(const std::string& base) {
  if (used_.insert(base).second) return base;
  for (int64_t n = 1;; ++n) {
    std::string candidate = base + "." + std::to_string(n);
    if (used_.insert(candidate).second) return candidate;
  }
}

FusedBody startFusedBody(const HloInstruction& consumer, const std::string& bodyName,
                         NameTable* names) {
  FusedBody fb;
  fb.body = std::make_unique<HloComputation>(bodyName);
  fb.comp = fb.body.get();
  std::vector<HloInstruction*> ops;
  for (HloInstruction* op : consumer.operands()) ops.push_back(parameterFor(fb, op, names));
  HloInstruction* root = fb.comp->addInstruction(consumer.cloneWithOperands(consumer.name(), ops));
  fb.comp->setRoot(root);
  return fb;
}

FusedBody copyFusedBody(const HloComputation& comp, const std::vector<HloInstruction*>& operands) {
  FusedBody fb;
  fb.body = comp.clone(comp.name());
  fb.comp = fb.body.get();
  fb.operands = operands;
  return fb;
}

HloInstruction* fuseProducer(FusedBody& fb, HloInstruction* producer, NameTable* names) {
  auto it = std::find(fb.operands.begin(), fb.operands.end(), producer);
  if (it == fb.operands.end()) return nullptr;
  int64_t k = it - fb.operands.begin();
  HloInstruction* param = fb.comp->parameter(k);
  std::vector<HloInstruction*> ops;
  for (HloInstruction* op : producer->operands()) ops.push_back(parameterFor(fb, op, names));
  HloInstruction* clone =
      fb.comp->addInstruction(producer->cloneWithOperands(freshName(names, producer->name()), ops));
  param->replaceAllUsesWith(clone);
  if (names) names->release(param->name());
  fb.comp->removeInstruction(param);
  fb.operands.erase(fb.operands.begin() + k);
  // (parameters() skips numbers beyond the count, so walk every instruction.)
  for (const auto& i : fb.comp->instructions())
    if (i->opcode() == HloOpcode::Parameter && i->attrs().parameterNumber > k)
      --i->attrs().parameterNumber;
  return clone;
}

HloInstruction* BodyParameters::of(HloInstruction* outer) {
  auto it = param_.find(outer);
  if (it != param_.end()) return it->second;
  auto p = HloInstruction::create(HloOpcode::Parameter,
                                  names_.fresh(fmt::format("param_{}", operands_.size())),
                                  outer->shape());
  p->attrs().parameterNumber = static_cast<int64_t>(operands_.size());
  operands_.push_back(outer);
  return param_[outer] = body_.addInstruction(std::move(p));
}

HloInstruction* inlineMember(HloComputation& body, const HloInstruction& member,
                             const OperandValue& operandValue, NameTable& names,
                             const ReuseValue& reuse) {
  if (member.opcode() != HloOpcode::Fusion) {
    std::vector<HloInstruction*> ops;
    for (HloInstruction* op : member.operands()) ops.push_back(operandValue(op));
    return body.addInstruction(member.cloneWithOperands(names.fresh(member.name()), ops));
  }
  const HloComputation* fused = member.calledComputation("calls");
  std::unordered_map<const HloInstruction*, HloInstruction*> copy;
  for (HloInstruction* i : fused->postOrder()) {
    if (i->opcode() == HloOpcode::Parameter) {
      copy[i] = operandValue(member.operand(i->attrs().parameterNumber));
      continue;
    }
    std::vector<HloInstruction*> ops;
    for (HloInstruction* op : i->operands()) ops.push_back(copy.at(op));
    if (reuse && i != fused->root())
      if (HloInstruction* v = reuse(*i, ops)) {
        copy[i] = v;
        continue;
      }
    copy[i] = body.addInstruction(i->cloneWithOperands(names.fresh(i->name()), ops));
  }
  return copy.at(fused->root());
}

HloInstruction* addTupleElement(HloComputation& comp, HloInstruction* fusion, int64_t index,
                                const std::string& name, const hlo::Shape& shape) {
  auto gte = HloInstruction::create(hlo::HloOpcode::GetTupleElement, name, shape, {fusion});
  hlo::AttrValue i;
  i.kind = hlo::AttrValue::Kind::Int;
  i.i = index;
  gte->setGeneric("index", i);
  return comp.addInstruction(std::move(gte));
}

void replaceByTupleElement(HloComputation& comp, HloInstruction* member, HloInstruction* fusion,
                           int64_t index, NameTable& names) {
  std::string name = member->name();
  member->setName(names.fresh(name + ".merged"));
  HloInstruction* g = addTupleElement(comp, fusion, index, name, member->shape());
  g->attrs().metadata = member->attrs().metadata;
  member->replaceAllUsesWith(g);
  member->setOperands({});
  comp.removeInstruction(member);
}

}  // namespace tpusim::passes
