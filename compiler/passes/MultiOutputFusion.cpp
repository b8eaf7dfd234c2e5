// The multi-output fusion pass (`multi-output-fusion`), run after `fusion`:
// sibling reductions, as XLA's multi-output fusion makes them. Reduces that
// read the same operand (layer norm's sum of x and sum of x * x, the max and
// the sum of a softmax over one input) are each a kInput fusion or an unfused
// reduce after `fusion`, and each kernel reads the operand from HBM. They are
// merged into one fusion whose root is a tuple of the reduces, and their users
// read get-tuple-element: one kernel walks the input once and feeds every
// accumulator (compiler/lower/fusion/ReduceLowering.cpp).
//
// Two candidates (kInput fusions or reduces) merge when
//   - they reduce inputs of one shape over the same dimensions (one loop nest),
//   - they share an operand of that input's element count (the read saved;
//     a shared scalar or bias saves nothing), and
//   - neither depends on the other (merging would make a cycle: a variance
//     computed as mean((x - mean)^2) stays a second kernel).
// A group holds at most kMaxOutputs reduces (each adds an accumulator to the
// kernel's VMEM).
//
// kLoop fusions join by the same rules (an operand of their element count in
// common, no dependence either way):
//   - into a reduce group when their shape is the reduces' input shape and
//     the reduces keep some dims (not to a scalar): the
//     kernel stores them per block as it walks the input (an AQT-quantized
//     dot's input x * scale and its row max |x * scale| are one walk);
//   - else with each other when they have one shape: one kernel computes
//     every output from one load of each leaf block (the scalar kernels of
//     per-row scales, 127 / max and max / 127, become one launch).
// Their bodies must be what a reduce kernel's region computes: element-wise
// ops, broadcasts and unit-dim views (no lane shuffle or strided transpose).
// An element-wise op left unfused counts as a loop fusion of one (SwiGLU's
// backward: dy * silu(g) beside the gate's gradient, both reading dy).

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/hlo/HloPrinter.h"
#include "compiler/passes/DotEpilogueOutputs.h"
#include "compiler/passes/FusionBuilder.h"
#include "compiler/passes/FusionRules.h"
#include "compiler/passes/HloPass.h"
#include "compiler/passes/PassOptions.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

constexpr size_t kMaxOutputs = 8;

// The reduce a candidate computes: an unfused reduce, or a kInput fusion's root.
const HloInstruction* reduceOf(const HloInstruction& inst) {
  if (isReduceHero(inst)) return &inst;
  if (inst.opcode() != HloOpcode::Fusion || !inst.shape().isArray()) return nullptr;
  const HloComputation* body = inst.calledComputation("calls");
  if (!body || !body->root() || !isReduceHero(*body->root())) return nullptr;
  for (const auto& i : body->instructions())
    if (isMatmulHero(*i)) return nullptr;
  return body->root();
}

// A kLoop fusion that may join a group: one array output, nothing but
// element-wise work, broadcasts, constants, iotas and unit-dim views.
bool isMergeableLoop(const HloInstruction& inst) {
  // An element-wise op that `fusion` left alone (nothing to pull in: its
  // operands are shared or are other kernels' results) is a loop fusion of one.
  if (hlo::isElementwise(inst.opcode()) && inst.shape().isArray() && inst.operandCount() > 0)
    return true;
  if (inst.opcode() != HloOpcode::Fusion || !inst.shape().isArray()) return false;
  const HloComputation* body = inst.calledComputation("calls");
  if (!body || !body->root() || !body->root()->shape().isArray()) return false;
  for (const auto& i : body->instructions()) {
    HloOpcode op = i->opcode();
    if (op == HloOpcode::Parameter || op == HloOpcode::Constant) continue;
    if (!isLoopFusible(*i) || isLaneShuffle(*i) || isMajorDimsTranspose(*i)) return false;
  }
  return true;
}

// `inner` (a fused instruction whose operands are now `ops`, in the merged
// body) computes outer `x`: the same element-wise op and attributes, each
// operand the parameter standing for x's operand. Element-wise ops only: their
// attributes (a compare's direction) must match too.
bool computesSame(const HloInstruction& inner, const std::vector<HloInstruction*>& ops,
                  const HloInstruction& x,
                  const std::unordered_map<const HloInstruction*, HloInstruction*>& param) {
  if (x.opcode() != inner.opcode() || !hlo::isElementwise(x.opcode()) || x.hasSideEffect() ||
      !(x.shape() == inner.shape()) || x.operandCount() != inner.operandCount())
    return false;
  for (int64_t k = 0; k < x.operandCount(); ++k) {
    auto it = param.find(x.operand(k));
    if (it == param.end() || it->second != ops[static_cast<size_t>(k)]) return false;
  }
  auto attrs = [](const HloInstruction& i) {
    auto c = i.clone(i.name());
    c->attrs().metadata = {};
    return hlo::printAttributes(*c);
  };
  return attrs(x) == attrs(inner);
}

// Parameters no instruction reads any more (their reads replaced by
// computesSame) are removed; the rest are numbered again in order.
void dropUnreadParameters(HloComputation& body, std::vector<HloInstruction*>& operands) {
  body.removeDeadInstructions();
  std::vector<HloInstruction*> params(operands.size(), nullptr);
  for (HloInstruction* i : body.postOrder())
    if (i->opcode() == HloOpcode::Parameter)
      params[static_cast<size_t>(i->attrs().parameterNumber)] = i;
  std::vector<HloInstruction*> kept;
  for (size_t k = 0; k < params.size(); ++k) {
    HloInstruction* p = params[k];
    if (!p) continue;
    if (p->userCount() == 0) {
      body.removeInstruction(p);
      continue;
    }
    p->attrs().parameterNumber = static_cast<int64_t>(kept.size());
    kept.push_back(operands[k]);
  }
  operands = std::move(kept);
}

struct Key {
  std::vector<int64_t> inputDims, dims;
  bool operator<(const Key& o) const {
    return std::tie(inputDims, dims) < std::tie(o.inputDims, o.dims);
  }
};

class MultiOutputFusionPass : public HloPass {
 public:
  std::string_view name() const override { return "multi-output-fusion"; }

  bool run(hlo::HloModule& module) override {
    module_ = &module;
    names_ = std::make_unique<NameTable>(module);
    bool changed = false;
    for (HloComputation* comp : fusionTargets(module)) changed |= runOn(*comp);
    // Then dot kernels with their element-wise consumers (DotEpilogueOutputs.h).
    if (passOptions().fusionDotEpilogueOutputs)
      for (HloComputation* comp : fusionTargets(module))
        changed |= mergeDotEpilogueOutputs(module, *comp, *names_);
    if (changed) {
      module.removeUnreachableComputations();
      cseFusedComputations(module);
    }
    return changed;
  }

 private:
  bool runOn(HloComputation& comp) {
    std::map<Key, std::vector<HloInstruction*>> byKey;
    std::map<std::vector<int64_t>, std::vector<HloInstruction*>> loopsByDims;
    std::unordered_map<const HloInstruction*, size_t> position;
    for (HloInstruction* inst : comp.postOrder()) {
      position[inst] = position.size();
      if (const HloInstruction* red = reduceOf(*inst)) {
        byKey[Key{red->operand(0)->shape().dims, red->dimensions()}].push_back(inst);
      } else if (isMergeableLoop(*inst)) {
        loopsByDims[inst->shape().dims].push_back(inst);
      }
    }
    std::unordered_set<const HloInstruction*> used;
    bool changed = false;
    auto formGroups = [&](std::vector<HloInstruction*> cands, const std::vector<int64_t>& dims,
                          bool seedIsReduce) {
      std::sort(cands.begin(), cands.end(), [&](const HloInstruction* a, const HloInstruction* b) {
        return position.at(a) < position.at(b);
      });
      int64_t inputElements = 1;
      for (int64_t d : dims) inputElements *= d;
      for (size_t a = 0; a < cands.size(); ++a) {
        if (used.count(cands[a]) || (seedIsReduce && !reduceOf(*cands[a]))) continue;
        std::vector<HloInstruction*> group{cands[a]};
        for (size_t b = 0; b < cands.size() && group.size() < kMaxOutputs; ++b) {
          if (b == a || used.count(cands[b]) || !sharesInput(group, cands[b], inputElements))
            continue;
          bool independent = true;
          for (HloInstruction* m : group)
            independent &= !reaches(cands[b], m) && !reaches(m, cands[b]);
          if (!independent) continue;
          group.push_back(cands[b]);
        }
        if (group.size() < 2) continue;
        for (HloInstruction* m : group) used.insert(m);
        // Tuple elements in program order (the reduces' and outputs' users read them so).
        std::sort(group.begin(), group.end(),
                  [&](const HloInstruction* x, const HloInstruction* y) {
                    return position.at(x) < position.at(y);
                  });
        merge(comp, group);
        changed = true;
      }
    };
    for (auto& [key, reduces] : byKey) {
      std::vector<HloInstruction*> cands = reduces;
      auto loops = loopsByDims.find(key.inputDims);
      // Loop fusions join reduces that keep some dims; a kernel that reduces
      // to a scalar and stores a loop output per block ran slower than the
      // two apart (measured on the training step: the loss's sum beside the
      // logits' gradient, 4.8 M -> 5.9 M cycles). A lone element-wise op
      // joins only other loops (the position embedding's batch sum with a
      // convert beside it: 1.1 M -> 2.5 M).
      // Sums to a scalar are the exception: the kernel then walks its blocks once
      // for the loop outputs and the sums (ReduceLowering's one walk; the loss's
      // gradient and one-hot sum read the f32 logits once).
      bool toScalar = key.dims.size() == key.inputDims.size();
      bool floatSums = std::all_of(reduces.begin(), reduces.end(), [](const HloInstruction* c) {
        const HloInstruction* red = reduceOf(*c);
        const HloComputation* f = red->calledComputation("to_apply");
        return f && f->root() && f->root()->opcode() == HloOpcode::Add &&
               red->shape().type == hlo::PrimitiveType::F32;
      });
      if (loops != loopsByDims.end() && (!toScalar || floatSums))
        for (HloInstruction* l : loops->second)
          if (l->opcode() == HloOpcode::Fusion) cands.push_back(l);
      formGroups(cands, key.inputDims, true);
    }
    for (auto& [dims, loops] : loopsByDims) formGroups(loops, dims, false);
    return changed;
  }

  static bool sharesInput(const std::vector<HloInstruction*>& group, const HloInstruction* c,
                          int64_t inputElements) {
    for (const HloInstruction* m : group)
      for (const HloInstruction* op : m->operands())
        if (op->shape().isArray() && op->shape().elementCount() == inputElements &&
            std::find(c->operands().begin(), c->operands().end(), op) != c->operands().end())
          return true;
    return false;
  }

  // One fusion computing every member; each member's users read its element.
  void merge(HloComputation& comp, const std::vector<HloInstruction*>& group) {
    auto body =
        std::make_unique<HloComputation>(module_->uniqueComputationName("fused_multi_output"));
    BodyParameters params(*body, *names_);
    auto parameterFor = [&](HloInstruction* outer) { return params.of(outer); };
    // What the merged kernel reads anyway: a member's fused copy of one of
    // these (an add both recomputed from its operands and read by another
    // member) becomes that read, and its operands' reads may go.
    std::vector<HloInstruction*> outerReads;
    for (HloInstruction* m : group)
      for (HloInstruction* op : m->operands()) outerReads.push_back(op);
    auto readInstead = [&](const HloInstruction& i,
                           const std::vector<HloInstruction*>& ops) -> HloInstruction* {
      for (HloInstruction* x : outerReads)
        if (computesSame(i, ops, *x, params.map())) return parameterFor(x);
      return nullptr;
    };
    std::vector<HloInstruction*> roots;
    std::vector<hlo::Shape> shapes;
    for (HloInstruction* m : group) {
      shapes.push_back(m->shape());
      roots.push_back(inlineMember(*body, *m, parameterFor, *names_, readInstead));
    }
    hlo::Shape tupleShape = hlo::Shape::tuple(shapes);
    HloInstruction* root = body->addInstruction(
        HloInstruction::create(HloOpcode::Tuple, names_->fresh("tuple"), tupleShape, roots));
    body->setRoot(root);
    std::vector<HloInstruction*>& operands = params.operands();
    dropUnreadParameters(*body, operands);

    HloComputation* bodyPtr = module_->addComputationBefore(std::move(body), &comp);
    auto fusion = HloInstruction::create(HloOpcode::Fusion, names_->fresh("fusion.multi_output"),
                                         tupleShape, operands);
    fusion->attrs().metadata = group.front()->attrs().metadata;
    fusion->attrs().calls.push_back(hlo::CalledComputations{"calls", {bodyPtr}, false});
    hlo::AttrValue kind;
    kind.kind = hlo::AttrValue::Kind::Ident;
    bool anyReduce = false;
    for (const HloInstruction* m : group) anyReduce |= reduceOf(*m) != nullptr;
    kind.s = anyReduce ? "kInput" : "kLoop";
    fusion->setGeneric("kind", kind);
    HloInstruction* f = comp.addInstruction(std::move(fusion));
    f->setSourceLine(group.front()->sourceLine());
    for (size_t k = 0; k < group.size(); ++k)
      replaceByTupleElement(comp, group[k], f, static_cast<int64_t>(k), *names_);
  }

  hlo::HloModule* module_ = nullptr;
  std::unique_ptr<NameTable> names_;
};

}  // namespace

std::unique_ptr<HloPass> createMultiOutputFusionPass() {
  return std::make_unique<MultiOutputFusionPass>();
}

}  // namespace tpusim::passes
