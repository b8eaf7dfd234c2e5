// A computation: a named list of instructions with a root, owned by an
// HloModule. Parameters are the `parameter(N)` instructions in it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/HloInstruction.h"

namespace tpusim::hlo {

class HloModule;

class HloComputation {
 public:
  explicit HloComputation(std::string name) : name_(std::move(name)) {}
  ~HloComputation();
  HloComputation(const HloComputation&) = delete;
  HloComputation& operator=(const HloComputation&) = delete;

  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  HloModule* parent() const { return parent_; }
  bool isEntry() const;

  // Instructions in storage order (the order they were parsed or added).
  const std::vector<std::unique_ptr<HloInstruction>>& instructions() const { return instrs_; }
  int64_t instructionCount() const { return static_cast<int64_t>(instrs_.size()); }
  // Every instruction after all of its operands, following storage order
  // where possible; instructions on a cycle are appended at the end.
  std::vector<HloInstruction*> postOrder() const;

  HloInstruction* root() const { return root_; }
  void setRoot(HloInstruction* root) { root_ = root; }

  // The parameter instructions ordered by parameter number (entries for
  // numbers that are missing are nullptr; numbers >= the parameter count are ignored).
  std::vector<HloInstruction*> parameters() const;
  int64_t parameterCount() const;
  HloInstruction* parameter(int64_t number) const;

  // Takes ownership; the instruction's operands must belong to this computation.
  HloInstruction* addInstruction(std::unique_ptr<HloInstruction> inst);
  // Moves `inst` in storage order to just after `anchor` (both of this
  // computation), so the post order takes it as soon as its operands are
  // done rather than just before its first user.
  void placeAfter(HloInstruction* inst, const HloInstruction* anchor);
  // Removes an instruction that has no users and is not the root; returns false otherwise.
  bool removeInstruction(HloInstruction* inst);
  // Removes every instruction that neither the root nor a side-effecting
  // instruction needs (parameters stay); returns the number removed.
  int64_t removeDeadInstructions();
  HloInstruction* findInstruction(const std::string& name) const;

  // A deep copy named `newName` (instructions keep their names; called
  // computations are shared, not copied). Not added to any module.
  std::unique_ptr<HloComputation> clone(std::string newName) const;

  // The signature's shape: (params...) -> root shape, for printing.
  std::string signatureString() const;

 private:
  friend class HloModule;
  std::string name_;
  std::vector<std::unique_ptr<HloInstruction>> instrs_;
  HloInstruction* root_ = nullptr;
  HloModule* parent_ = nullptr;
};

}  // namespace tpusim::hlo
