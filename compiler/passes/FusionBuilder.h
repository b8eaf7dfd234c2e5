// Building fused computations: a body computation plus the outer operands its
// parameters stand for (parameter k <-> operands[k]). The fusion pass uses the
// same steps on a throw-away copy to price a candidate before it commits.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/hlo/HloModule.h"

namespace tpusim::passes {

// The instruction names in use in a module, so that new names are made unique
// without rescanning the module each time (HloModule::uniqueInstructionName
// does, which is quadratic over a whole model's fusion).
class NameTable {
 public:
  explicit NameTable(const hlo::HloModule& module);
  // base, base.1, base.2, ...: the first one not in use, now marked used.
  std::string fresh(const std::string& base);
  // `name` is free again (its instruction was renamed or removed).
  void release(const std::string& name) { used_.erase(name); }

 private:
  std::unordered_set<std::string> used_;
};

struct FusedBody {
  std::unique_ptr<hlo::HloComputation> body;   // owned until added to a module
  hlo::HloComputation* comp = nullptr;         // the body, owned or not
  std::vector<hlo::HloInstruction*> operands;  // outer values, one per parameter
};

// A body computing `consumer` from one parameter per distinct operand.
// `names` (may be null: a throw-away body) makes instruction names unique.
FusedBody startFusedBody(const hlo::HloInstruction& consumer, const std::string& bodyName,
                         NameTable* names);
// A deep copy of `comp` (a fusion's body) with `operands`, for pricing.
FusedBody copyFusedBody(const hlo::HloComputation& comp,
                        const std::vector<hlo::HloInstruction*>& operands);
// Moves outer `producer` into the body: its parameter is replaced by a clone of
// it whose operands are parameters (new ones appended for operands the body did
// not take yet). `producer` must be one of fb.operands. Returns the clone.
hlo::HloInstruction* fuseProducer(FusedBody& fb, hlo::HloInstruction* producer, NameTable* names);

// The parameters of a body built from several outer instructions (a merged
// kernel): one per distinct outer value, numbered in order of first use.
class BodyParameters {
 public:
  BodyParameters(hlo::HloComputation& body, NameTable& names) : body_(body), names_(names) {}
  // The parameter standing for `outer`, made on first use.
  hlo::HloInstruction* of(hlo::HloInstruction* outer);
  // The outer values, parameter k <-> operands()[k].
  std::vector<hlo::HloInstruction*>& operands() { return operands_; }
  // outer -> parameter, for callers that compare a body value with an outer one.
  const std::unordered_map<const hlo::HloInstruction*, hlo::HloInstruction*>& map() const {
    return param_;
  }

 private:
  hlo::HloComputation& body_;
  NameTable& names_;
  std::vector<hlo::HloInstruction*> operands_;
  std::unordered_map<const hlo::HloInstruction*, hlo::HloInstruction*> param_;
};

// Reads outer operand `o` of the member being copied, as a body value.
using OperandValue = std::function<hlo::HloInstruction*(hlo::HloInstruction* o)>;
// A body value to use instead of a fresh clone of fused instruction `i` (whose
// operands are now `ops`), or null to clone it.
using ReuseValue = std::function<hlo::HloInstruction*(
    const hlo::HloInstruction& i, const std::vector<hlo::HloInstruction*>& ops)>;

// Copies outer instruction `member` into `body`: a fusion's computation
// instruction by instruction (its parameter k reads `operandValue(member's
// operand k)`; `reuse`, if set, may replace a non-root clone), any other
// instruction as one clone. Returns the copy of its result.
hlo::HloInstruction* inlineMember(hlo::HloComputation& body, const hlo::HloInstruction& member,
                                  const OperandValue& operandValue, NameTable& names,
                                  const ReuseValue& reuse = {});

// A new get-tuple-element `name` reading element `index` (of `shape`) of the
// multi-output fusion `fusion`, added to `comp`.
hlo::HloInstruction* addTupleElement(hlo::HloComputation& comp, hlo::HloInstruction* fusion,
                                     int64_t index, const std::string& name,
                                     const hlo::Shape& shape);
// `member`, merged into `fusion` as its element `index`, gives way to that
// element: the get-tuple-element takes its name and metadata, its users read
// it, and `member` is removed.
void replaceByTupleElement(hlo::HloComputation& comp, hlo::HloInstruction* member,
                           hlo::HloInstruction* fusion, int64_t index, NameTable& names);

}  // namespace tpusim::passes
