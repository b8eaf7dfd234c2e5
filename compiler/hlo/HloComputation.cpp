#include "compiler/hlo/HloComputation.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "compiler/hlo/HloModule.h"

namespace tpusim::hlo {

HloComputation::~HloComputation() {
  for (auto& inst : instrs_) inst->dropAllReferences();
}

bool HloComputation::isEntry() const { return parent_ && parent_->entry() == this; }

std::vector<HloInstruction*> HloComputation::postOrder() const {
  // Iterative DFS: 0 = unvisited, 1 = on stack, 2 = done.
  std::unordered_map<const HloInstruction*, int> state;
  std::unordered_set<const HloInstruction*> mine;
  for (const auto& i : instrs_) mine.insert(i.get());
  std::vector<HloInstruction*> order;
  order.reserve(instrs_.size());
  for (const auto& start : instrs_) {
    if (state[start.get()]) continue;
    std::vector<std::pair<HloInstruction*, size_t>> stack{{start.get(), 0}};
    state[start.get()] = 1;
    while (!stack.empty()) {
      auto& [inst, next] = stack.back();
      if (next < inst->operands().size()) {
        HloInstruction* op = inst->operands()[next++];
        if (op && mine.count(op) && state[op] == 0) {
          state[op] = 1;
          stack.push_back({op, 0});
        }
        continue;
      }
      state[inst] = 2;
      order.push_back(inst);
      stack.pop_back();
    }
  }
  return order;
}

int64_t HloComputation::parameterCount() const {
  int64_t n = 0;
  for (const auto& i : instrs_)
    if (i->opcode() == HloOpcode::Parameter) ++n;
  return n;
}

std::vector<HloInstruction*> HloComputation::parameters() const {
  std::vector<HloInstruction*> params(static_cast<size_t>(parameterCount()), nullptr);
  for (const auto& i : instrs_) {
    if (i->opcode() != HloOpcode::Parameter) continue;
    int64_t n = i->attrs().parameterNumber;
    if (n >= 0 && static_cast<size_t>(n) < params.size() && !params[n]) params[n] = i.get();
  }
  return params;
}

HloInstruction* HloComputation::parameter(int64_t number) const {
  for (const auto& i : instrs_)
    if (i->opcode() == HloOpcode::Parameter && i->attrs().parameterNumber == number) return i.get();
  return nullptr;
}

HloInstruction* HloComputation::addInstruction(std::unique_ptr<HloInstruction> inst) {
  inst->parent_ = this;
  if (parent_) parent_->noteInstructionName(inst->name());
  instrs_.push_back(std::move(inst));
  return instrs_.back().get();
}

void HloComputation::placeAfter(HloInstruction* inst, const HloInstruction* anchor) {
  auto find = [&](const HloInstruction* x) {
    return std::find_if(instrs_.begin(), instrs_.end(),
                        [&](const auto& p) { return p.get() == x; });
  };
  auto from = find(inst);
  if (from == instrs_.end() || find(anchor) == instrs_.end()) return;
  std::unique_ptr<HloInstruction> held = std::move(*from);
  instrs_.erase(from);
  instrs_.insert(find(anchor) + 1, std::move(held));
}

bool HloComputation::removeInstruction(HloInstruction* inst) {
  if (!inst || inst == root_ || !inst->users().empty()) return false;
  auto it =
      std::find_if(instrs_.begin(), instrs_.end(), [&](const auto& p) { return p.get() == inst; });
  if (it == instrs_.end()) return false;
  if (parent_) parent_->forgetInstructionName(inst->name());
  instrs_.erase(it);  // the destructor unregisters it from its operands
  return true;
}

int64_t HloComputation::removeDeadInstructions() {
  std::unordered_set<const HloInstruction*> live;
  std::vector<const HloInstruction*> work;
  if (root_) work.push_back(root_);
  for (const auto& i : instrs_)
    if (i->hasSideEffect()) work.push_back(i.get());
  while (!work.empty()) {
    const HloInstruction* i = work.back();
    work.pop_back();
    if (!live.insert(i).second) continue;
    for (const HloInstruction* op : i->operands())
      if (op) work.push_back(op);
  }
  int64_t removed = 0;
  // Users first, so every removed instruction has no users left.
  auto order = postOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    HloInstruction* i = *it;
    if (live.count(i) || i->opcode() == HloOpcode::Parameter) continue;
    if (removeInstruction(i)) ++removed;
  }
  return removed;
}

HloInstruction* HloComputation::findInstruction(const std::string& name) const {
  for (const auto& i : instrs_)
    if (i->name() == name) return i.get();
  return nullptr;
}

std::unique_ptr<HloComputation> HloComputation::clone(std::string newName) const {
  auto c = std::make_unique<HloComputation>(std::move(newName));
  std::unordered_map<const HloInstruction*, HloInstruction*> map;
  for (HloInstruction* i : postOrder()) {
    std::vector<HloInstruction*> ops;
    for (HloInstruction* op : i->operands()) {
      auto it = map.find(op);
      ops.push_back(it == map.end() ? nullptr : it->second);
    }
    map[i] = c->addInstruction(i->cloneWithOperands(i->name(), ops));
  }
  if (root_ && map.count(root_)) c->setRoot(map[root_]);
  return c;
}

std::string HloComputation::signatureString() const {
  std::string s = "(";
  bool first = true;
  for (HloInstruction* p : parameters()) {
    if (!p) continue;
    if (!first) s += ", ";
    first = false;
    s += p->name() + ": " + p->shape().toString(false);
  }
  s += ") -> ";
  s += root_ ? root_->shape().toString(false) : std::string("()");
  return s;
}

}  // namespace tpusim::hlo
