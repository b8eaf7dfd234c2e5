// layout-assignment: gives every array in the module the chip's tiled layout
// (TpuLayout.h) and inserts the copies a consumer needs when an operand's
// physical layout must change:
//   - every value takes the default minor_to_major {rank-1,...,0}, except the
//     entry parameters, whose layouts are the module's calling convention (a
//     parameter with another order is copied once into the default order),
//     and copies, which exist to change a layout and keep the one they name
//     (so a second run adds nothing);
//   - a dot's LHS is stored with its contracting dims most minor and its batch
//     dims most major (the MXU streams LHS rows along K); the RHS needs only its
//     batch dims major (the MXU transposes weights as it loads them); an
//     operand stored otherwise is copied into that layout first;
//   - a bitcast reinterprets bytes, so its operand keeps the layout the input
//     gave it (a copy restores it) and its result keeps its own (a copy moves it
//     to the default order for its users);
//   - the entry root keeps its original minor_to_major (a copy at the end), and
//     entry_computation_layout, if present, is rewritten to the new layouts.
// Copies change layouts only, never values, so the module evaluates the same.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "compiler/hlo/HloModule.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"
#include "compiler/passes/TpuLayout.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

// The minor_to_major a dot wants for an operand of `rank` with these batch and
// contracting dims: contracting most minor (LHS only), free dims, batch most major.
std::vector<int64_t> dotOperandOrder(int64_t rank, const std::vector<int64_t>& batch,
                                     const std::vector<int64_t>& contracting,
                                     bool contractingMinor) {
  std::vector<int64_t> order;
  auto has = [](const std::vector<int64_t>& v, int64_t d) {
    return std::find(v.begin(), v.end(), d) != v.end();
  };
  if (contractingMinor)
    for (auto it = contracting.rbegin(); it != contracting.rend(); ++it) order.push_back(*it);
  for (int64_t d = rank - 1; d >= 0; --d)
    if (!has(batch, d) && (!contractingMinor || !has(contracting, d))) order.push_back(d);
  for (auto it = batch.rbegin(); it != batch.rend(); ++it) order.push_back(*it);
  return order;
}

class LayoutAssignmentPass : public HloPass {
 public:
  std::string_view name() const override { return "layout-assignment"; }

  bool run(hlo::HloModule& module) override {
    module_ = &module;
    changed_ = false;
    inserted_.clear();
    copies_.clear();
    original_.clear();
    // The layouts the input gave, before anything changes.
    for (const auto& comp : module.computations())
      for (const auto& inst : comp->instructions()) original_[inst.get()] = inst->shape();
    for (const auto& comp : module.computations()) assignDefaults(*comp);
    for (const auto& comp : module.computations()) constrain(*comp);
    changed_ |= rewriteEntryComputationLayout(*module_);
    return changed_;
  }

 private:
  void setShape(HloInstruction* inst, Shape s) {
    if (s == inst->shape()) return;
    // A constant's literal carries the shape too (the parser gives it the instruction's).
    if (inst->attrs().literal && inst->attrs().literal->shape.compatible(s))
      inst->attrs().literal->shape = s;
    inst->setShape(std::move(s));
    changed_ = true;
  }

  void assignDefaults(HloComputation& comp) {
    for (const auto& inst : comp.instructions()) {
      HloInstruction* i = inst.get();
      // Entry parameters are the calling convention; a copy exists to change a
      // layout (the input's, or one this pass inserted on an earlier run).
      bool keepOrder = (comp.isEntry() && i->opcode() == HloOpcode::Parameter) ||
                       (i->opcode() == HloOpcode::Copy && i->shape().isArray());
      setShape(i, keepOrder ? withTpuLayout(i->shape()) : withDefaultTpuLayout(i->shape()));
    }
  }

  // A copy of `value` stored with minor_to_major `order` (shared per value and order).
  HloInstruction* copyTo(HloInstruction* value, const std::vector<int64_t>& order) {
    // Look through copies this pass inserted: reuse their source if it is stored right.
    while (inserted_.count(value) && value->operand(0)->shape().minorToMajorOrDefault() == order)
      value = value->operand(0);
    if (value->shape().minorToMajorOrDefault() == order) return value;
    auto key = std::make_pair(value, order);
    auto it = copies_.find(key);
    if (it != copies_.end()) return it->second;
    HloInstruction* copy = addNew(value->parent(), HloOpcode::Copy, "copy",
                                  withTpuLayout(value->shape(), order), {value});
    inserted_.insert(copy);
    copies_[key] = copy;
    changed_ = true;
    return copy;
  }

  void useInstead(HloInstruction* user, int64_t operand, HloInstruction* replacement) {
    if (user->operand(operand) != replacement) user->replaceOperand(operand, replacement);
  }

  // Redirects every user of `inst` (and the root) to a default-order copy of it.
  void copyUsersToDefault(HloInstruction* inst) {
    std::vector<int64_t> order = defaultMinorToMajor(inst->shape().rank());
    if (inst->shape().minorToMajorOrDefault() == order) return;
    std::vector<HloInstruction*> users = inst->users();
    HloInstruction* copy = copyTo(inst, order);
    for (HloInstruction* u : users)
      if (u != copy) u->replaceOperandWith(inst, copy);
    if (inst->parent()->root() == inst) inst->parent()->setRoot(copy);
  }

  void constrain(HloComputation& comp) {
    std::vector<HloInstruction*> order = comp.postOrder();
    if (comp.isEntry())
      for (HloInstruction* i : order)
        if (i->opcode() == HloOpcode::Parameter && i->shape().isArray()) copyUsersToDefault(i);
    for (HloInstruction* i : order) {
      if (inserted_.count(i)) continue;
      if (i->opcode() == HloOpcode::Dot && i->operandCount() == 2) {
        const hlo::DotDimensionNumbers& d = i->attrs().dot;
        HloInstruction* lhs = i->operand(0);
        HloInstruction* rhs = i->operand(1);
        if (lhs->shape().isArray())
          useInstead(i, 0,
                     copyTo(lhs, dotOperandOrder(lhs->shape().rank(), d.lhsBatch, d.lhsContracting,
                                                 true)));
        if (rhs->shape().isArray() && !d.rhsBatch.empty()) {
          std::vector<int64_t> want =
              dotOperandOrder(rhs->shape().rank(), d.rhsBatch, d.rhsContracting, false);
          useInstead(i, 1, copyTo(rhs, want));
        }
      } else if (i->opcode() == HloOpcode::Bitcast && i->operandCount() == 1 &&
                 i->shape().isArray() && i->operand(0)->shape().isArray()) {
        HloInstruction* op = i->operand(0);
        HloInstruction* source = op;  // the value the input named, behind our copies
        while (inserted_.count(source)) source = source->operand(0);
        auto orig = original_.find(source);
        std::vector<int64_t> want = orig != original_.end() ? orig->second.minorToMajorOrDefault()
                                                            : op->shape().minorToMajorOrDefault();
        useInstead(i, 0, copyTo(op, want));
        auto mine = original_.find(i);
        if (mine != original_.end()) {
          setShape(i, withTpuLayout(i->shape(), mine->second.minorToMajorOrDefault()));
          copyUsersToDefault(i);
        }
      }
    }
    if (comp.isEntry() && comp.root() && comp.root()->shape().isArray()) {
      HloInstruction* root = comp.root();
      // The root the input named (before any copy above replaced it).
      auto orig = original_.find(root);
      while (orig == original_.end() && inserted_.count(root)) {
        root = root->operand(0);
        orig = original_.find(root);
      }
      if (orig != original_.end()) {
        std::vector<int64_t> want = orig->second.minorToMajorOrDefault();
        HloInstruction* out = copyTo(comp.root(), want);
        comp.setRoot(out);
      }
    }
  }

  hlo::HloModule* module_ = nullptr;
  bool changed_ = false;
  std::unordered_map<const HloInstruction*, Shape> original_;
  std::unordered_set<const HloInstruction*> inserted_;
  std::map<std::pair<HloInstruction*, std::vector<int64_t>>, HloInstruction*> copies_;
};

}  // namespace

std::unique_ptr<HloPass> createLayoutAssignmentPass() {
  return std::make_unique<LayoutAssignmentPass>();
}

}  // namespace tpusim::passes
