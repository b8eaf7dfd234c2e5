// A module: header attributes and computations, one of them the entry.
// A module parsed from text with no ENTRY takes its last computation as the
// entry, as XLA does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/hlo/HloComputation.h"

namespace tpusim::hlo {

class HloModule {
 public:
  explicit HloModule(std::string name) : name_(std::move(name)) {}
  HloModule(const HloModule&) = delete;
  HloModule& operator=(const HloModule&) = delete;

  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  // The file the module was parsed from ("" if built in memory), for diagnostics.
  const std::string& sourceFile() const { return sourceFile_; }
  void setSourceFile(std::string f) { sourceFile_ = std::move(f); }

  // Header attributes after "HloModule name, " as (key, verbatim value) pairs in
  // order: entry_computation_layout, is_scheduled, replica_count, num_partitions,
  // input_output_alias, frontend_attributes, ...
  std::vector<std::pair<std::string, std::string>>& headerAttributes() { return header_; }
  const std::vector<std::pair<std::string, std::string>>& headerAttributes() const {
    return header_;
  }
  std::optional<std::string> headerAttribute(const std::string& key) const;
  int64_t replicaCount() const;   // replica_count, 1 if absent
  int64_t numPartitions() const;  // num_partitions, 1 if absent

  // Computations in storage order (callees usually first, as XLA prints them).
  const std::vector<std::unique_ptr<HloComputation>>& computations() const { return comps_; }
  HloComputation* entry() const { return entry_; }
  void setEntry(HloComputation* c) { entry_ = c; }
  HloComputation* addComputation(std::unique_ptr<HloComputation> c);
  // Adds `c` just before `before` (or at the end if before is null/absent).
  HloComputation* addComputationBefore(std::unique_ptr<HloComputation> c, HloComputation* before);
  // Removes a computation no instruction calls and that is not the entry.
  bool removeComputation(HloComputation* c);
  // Removes computations not reachable from the entry; returns how many.
  int64_t removeUnreachableComputations();
  HloComputation* findComputation(const std::string& name) const;
  // Instructions that call `c` (any computation of the module).
  std::vector<HloInstruction*> callersOf(const HloComputation* c) const;

  // A name not used by any instruction of the module: base, base.1, base.2 ...
  // (amortized O(1): an index of the names, kept up to date as instructions are
  // added, removed and renamed, so that passes adding many instructions stay linear).
  std::string uniqueInstructionName(const std::string& base) const;
  // A name not used by any computation of the module.
  std::string uniqueComputationName(const std::string& base) const;

  // A deep copy (computations, instructions, called-computation references remapped).
  std::unique_ptr<HloModule> clone() const;

  // HLO text of the module (HloPrinter.h).
  std::string toString() const;

 private:
  std::string name_;
  std::string sourceFile_;
  std::vector<std::pair<std::string, std::string>> header_;
  std::vector<std::unique_ptr<HloComputation>> comps_;
  HloComputation* entry_ = nullptr;

  // Instruction names in use -> how many instructions carry each; built on
  // first use, then updated by the computations and instructions of the module
  // (dropped when a computation is added or removed).
  friend class HloComputation;
  friend class HloInstruction;
  void noteInstructionName(const std::string& name);
  void forgetInstructionName(const std::string& name);
  mutable std::unordered_map<std::string, int64_t> instructionNames_;
  mutable bool instructionNamesIndexed_ = false;
};

}  // namespace tpusim::hlo
