// One HLO instruction: opcode, name, shape, operands (in order), users, and its
// typed attributes. Instructions are owned by an HloComputation; operands are
// instructions of the same computation. Users are kept up to date by every
// operand-changing method here, so passes never edit them by hand.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/HloAttributes.h"
#include "compiler/hlo/HloOpcode.h"
#include "compiler/hlo/Literal.h"
#include "compiler/hlo/Shape.h"

namespace tpusim::hlo {

class HloComputation;

class HloInstruction {
 public:
  // Every attribute an instruction may carry. An absent attribute is an empty
  // optional / empty vector. Which ones an opcode uses:
  //   dimensions: broadcast, reduce, transpose, concatenate, reverse, map, sort,
  //               all-gather, reduce-scatter, all-to-all, ...
  //   slice: slice;  dot: dot;  direction: compare;  padding: pad;
  //   window: reduce-window, select-and-scatter, convolution;
  //   literal: constant;  parameterNumber: parameter;
  //   calls: to_apply / calls / condition / body / branch_computations ...;
  //   generic: everything else, e.g. index (get-tuple-element), iota_dimension,
  //            slice_sizes, dynamic_slice_sizes, gather/scatter dimension lists,
  //            kind (fusion), epsilon, feature_index, ... (see genericAttrKind),
  //            and unknown attributes verbatim, all in source order.
  struct Attributes {
    std::optional<std::vector<int64_t>> dimensions;
    std::optional<std::vector<SliceDim>> slice;
    DotDimensionNumbers dot;
    std::optional<ComparisonDirection> direction;
    std::optional<std::vector<PaddingDim>> padding;
    std::optional<std::vector<WindowDim>> window;
    std::optional<Literal> literal;
    int64_t parameterNumber = -1;
    std::vector<CalledComputations> calls;
    std::optional<ReplicaGroups> replicaGroups;
    std::optional<int64_t> channelId;
    std::optional<std::string> customCallTarget;  // escaped, without quotes
    std::optional<BackendConfig> backendConfig;
    std::optional<std::string> sharding;  // the "{...}" text verbatim
    std::vector<std::pair<std::string, std::string>> frontendAttributes;  // values escaped
    OpMetadata metadata;
    std::vector<NamedAttr> generic;
  };

  // A new instruction, not yet in a computation; `operands` get this as a user.
  static std::unique_ptr<HloInstruction> create(HloOpcode opcode, std::string name, Shape shape,
                                                std::vector<HloInstruction*> operands = {});
  ~HloInstruction();
  HloInstruction(const HloInstruction&) = delete;
  HloInstruction& operator=(const HloInstruction&) = delete;

  HloOpcode opcode() const { return opcode_; }
  const std::string& name() const { return name_; }
  void setName(std::string name);  // keeps the module's name index current
  const Shape& shape() const { return shape_; }
  Shape& mutableShape() { return shape_; }
  void setShape(Shape s) { shape_ = std::move(s); }
  HloComputation* parent() const { return parent_; }

  // Operands, in order (duplicates allowed: add(x, x)).
  const std::vector<HloInstruction*>& operands() const { return operands_; }
  HloInstruction* operand(int64_t i) const { return operands_.at(static_cast<size_t>(i)); }
  int64_t operandCount() const { return static_cast<int64_t>(operands_.size()); }
  void appendOperand(HloInstruction* op);
  void replaceOperand(int64_t i, HloInstruction* op);
  // Replaces every occurrence of `from` among the operands by `to`.
  void replaceOperandWith(HloInstruction* from, HloInstruction* to);
  void setOperands(std::vector<HloInstruction*> ops);

  // Distinct instructions that use this one as an operand, in first-use order.
  const std::vector<HloInstruction*>& users() const { return users_; }
  int64_t userCount() const { return static_cast<int64_t>(users_.size()); }
  // Makes every user use `other` instead, and makes `other` the computation's
  // root if this was it. `other` must be in the same computation.
  void replaceAllUsesWith(HloInstruction* other);

  Attributes& attrs() { return attrs_; }
  const Attributes& attrs() const { return attrs_; }

  // Convenience readers of common attributes (nullopt / nullptr if absent).
  const std::vector<int64_t>& dimensions() const;  // empty if absent
  std::optional<int64_t> tupleIndex() const { return intAttr("index"); }
  const Literal* literal() const { return attrs_.literal ? &*attrs_.literal : nullptr; }
  // All called computations, flattened in attribute order.
  std::vector<HloComputation*> calledComputations() const;
  // The computation called under `key` ("to_apply", "calls", "body", ...), or nullptr.
  HloComputation* calledComputation(const std::string& key) const;
  HloComputation* toApply() const { return calledComputation("to_apply"); }
  const NamedAttr* findGeneric(const std::string& key) const;
  std::optional<int64_t> intAttr(const std::string& key) const;
  std::optional<std::vector<int64_t>> intListAttr(const std::string& key) const;
  std::optional<std::string> identAttr(const std::string& key) const;  // Ident/String/Raw text
  std::optional<double> floatAttr(const std::string& key) const;
  std::optional<bool> boolAttr(const std::string& key) const;
  // Adds or replaces a generic attribute.
  void setGeneric(const std::string& key, AttrValue value);

  // True for instructions that must stay even when unused: infeed/outfeed,
  // send/recv, rng, async collective starts/dones, custom-calls marked
  // custom_call_has_side_effect=true.
  bool hasSideEffect() const;

  // A copy with the same opcode, shape, attributes and operands (registered as
  // a user of them), not in any computation.
  std::unique_ptr<HloInstruction> clone(std::string newName) const;
  // The same, with other operands (must have the same count semantics).
  std::unique_ptr<HloInstruction> cloneWithOperands(std::string newName,
                                                    std::vector<HloInstruction*> operands) const;

  // Source line in the parsed file (0 if created by a pass), for diagnostics.
  int sourceLine() const { return sourceLine_; }
  void setSourceLine(int line) { sourceLine_ = line; }

  // "%name = f32[2]{0} add(f32[2]{0} %a, f32[2]{0} %b), ..." (HloPrinter.h).
  std::string toString() const;

 private:
  friend class HloComputation;
  HloInstruction(HloOpcode opcode, std::string name, Shape shape);
  void addUser(HloInstruction* user);
  void removeUser(HloInstruction* user);
  void dropAllReferences();  // forgets operands and users without touching others

  HloOpcode opcode_;
  std::string name_;
  Shape shape_;
  std::vector<HloInstruction*> operands_;
  std::vector<HloInstruction*> users_;
  Attributes attrs_;
  HloComputation* parent_ = nullptr;
  int sourceLine_ = 0;
};

}  // namespace tpusim::hlo
