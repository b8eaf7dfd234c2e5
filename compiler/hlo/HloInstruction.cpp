#include "compiler/hlo/HloInstruction.h"

#include <algorithm>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloModule.h"
#include "compiler/hlo/HloPrinter.h"

namespace tpusim::hlo {

HloInstruction::HloInstruction(HloOpcode opcode, std::string name, Shape shape)
    : opcode_(opcode), name_(std::move(name)), shape_(std::move(shape)) {}

std::unique_ptr<HloInstruction> HloInstruction::create(HloOpcode opcode, std::string name,
                                                       Shape shape,
                                                       std::vector<HloInstruction*> operands) {
  std::unique_ptr<HloInstruction> inst(
      new HloInstruction(opcode, std::move(name), std::move(shape)));
  inst->setOperands(std::move(operands));
  return inst;
}

void HloInstruction::setName(std::string name) {
  HloModule* module = parent_ ? parent_->parent() : nullptr;
  if (module) {
    module->forgetInstructionName(name_);
    module->noteInstructionName(name);
  }
  name_ = std::move(name);
}

HloInstruction::~HloInstruction() {
  for (HloInstruction* op : operands_)
    if (op) op->removeUser(this);
}

void HloInstruction::dropAllReferences() {
  operands_.clear();
  users_.clear();
}

void HloInstruction::addUser(HloInstruction* user) {
  if (std::find(users_.begin(), users_.end(), user) == users_.end()) users_.push_back(user);
}

void HloInstruction::removeUser(HloInstruction* user) {
  users_.erase(std::remove(users_.begin(), users_.end(), user), users_.end());
}

void HloInstruction::appendOperand(HloInstruction* op) {
  operands_.push_back(op);
  if (op) op->addUser(this);
}

void HloInstruction::replaceOperand(int64_t i, HloInstruction* op) {
  HloInstruction* old = operands_.at(static_cast<size_t>(i));
  operands_[static_cast<size_t>(i)] = op;
  if (old && std::find(operands_.begin(), operands_.end(), old) == operands_.end())
    old->removeUser(this);
  if (op) op->addUser(this);
}

void HloInstruction::replaceOperandWith(HloInstruction* from, HloInstruction* to) {
  for (size_t i = 0; i < operands_.size(); ++i)
    if (operands_[i] == from) replaceOperand(static_cast<int64_t>(i), to);
}

void HloInstruction::setOperands(std::vector<HloInstruction*> ops) {
  for (HloInstruction* op : operands_)
    if (op) op->removeUser(this);
  operands_ = std::move(ops);
  for (HloInstruction* op : operands_)
    if (op) op->addUser(this);
}

void HloInstruction::replaceAllUsesWith(HloInstruction* other) {
  if (other == this) return;
  std::vector<HloInstruction*> users = users_;
  for (HloInstruction* u : users) u->replaceOperandWith(this, other);
  if (parent_ && parent_->root() == this) parent_->setRoot(other);
}

const std::vector<int64_t>& HloInstruction::dimensions() const {
  static const std::vector<int64_t> kEmpty;
  return attrs_.dimensions ? *attrs_.dimensions : kEmpty;
}

std::vector<HloComputation*> HloInstruction::calledComputations() const {
  std::vector<HloComputation*> out;
  for (const auto& c : attrs_.calls)
    for (HloComputation* comp : c.computations) out.push_back(comp);
  return out;
}

HloComputation* HloInstruction::calledComputation(const std::string& key) const {
  for (const auto& c : attrs_.calls)
    if (c.key == key && !c.computations.empty()) return c.computations.front();
  return nullptr;
}

const NamedAttr* HloInstruction::findGeneric(const std::string& key) const {
  for (const auto& a : attrs_.generic)
    if (a.key == key) return &a;
  return nullptr;
}

std::optional<int64_t> HloInstruction::intAttr(const std::string& key) const {
  const NamedAttr* a = findGeneric(key);
  if (!a || a->value.kind != AttrValue::Kind::Int) return std::nullopt;
  return a->value.i;
}

std::optional<std::vector<int64_t>> HloInstruction::intListAttr(const std::string& key) const {
  const NamedAttr* a = findGeneric(key);
  if (!a || a->value.kind != AttrValue::Kind::IntList) return std::nullopt;
  return a->value.list;
}

std::optional<std::string> HloInstruction::identAttr(const std::string& key) const {
  const NamedAttr* a = findGeneric(key);
  if (!a) return std::nullopt;
  auto k = a->value.kind;
  if (k != AttrValue::Kind::Ident && k != AttrValue::Kind::String && k != AttrValue::Kind::Raw)
    return std::nullopt;
  return a->value.s;
}

std::optional<double> HloInstruction::floatAttr(const std::string& key) const {
  const NamedAttr* a = findGeneric(key);
  if (!a) return std::nullopt;
  if (a->value.kind == AttrValue::Kind::Float) return a->value.f;
  if (a->value.kind == AttrValue::Kind::Int) return static_cast<double>(a->value.i);
  return std::nullopt;
}

std::optional<bool> HloInstruction::boolAttr(const std::string& key) const {
  const NamedAttr* a = findGeneric(key);
  if (!a || a->value.kind != AttrValue::Kind::Bool) return std::nullopt;
  return a->value.b;
}

void HloInstruction::setGeneric(const std::string& key, AttrValue value) {
  for (auto& a : attrs_.generic)
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  attrs_.generic.push_back({key, std::move(value)});
}

std::unique_ptr<HloInstruction> HloInstruction::clone(std::string newName) const {
  return cloneWithOperands(std::move(newName), operands_);
}

std::unique_ptr<HloInstruction> HloInstruction::cloneWithOperands(
    std::string newName, std::vector<HloInstruction*> operands) const {
  auto inst = create(opcode_, std::move(newName), shape_, std::move(operands));
  inst->attrs_ = attrs_;
  inst->sourceLine_ = sourceLine_;
  return inst;
}

bool HloInstruction::hasSideEffect() const {
  switch (opcode_) {
    case HloOpcode::Infeed:
    case HloOpcode::Outfeed:
    case HloOpcode::Send:
    case HloOpcode::SendDone:
    case HloOpcode::Recv:
    case HloOpcode::RecvDone:
    case HloOpcode::Rng:
    case HloOpcode::RngGetAndUpdateState:
    case HloOpcode::AllReduceStart:
    case HloOpcode::AllReduceDone:
    case HloOpcode::AllGatherStart:
    case HloOpcode::AllGatherDone:
    case HloOpcode::CollectivePermuteStart:
    case HloOpcode::CollectivePermuteDone:
      return true;
    case HloOpcode::CustomCall: {
      const NamedAttr* a = findGeneric("custom_call_has_side_effect");
      return a && a->value.s == "true";
    }
    default:
      return false;
  }
}

std::string HloInstruction::toString() const { return printInstruction(*this); }

}  // namespace tpusim::hlo
