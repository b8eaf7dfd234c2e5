// The fusion pass (Fusion.h): decisions, fusion instructions, and the report.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compiler/passes/Fusion.h"
#include "compiler/passes/FusionBuilder.h"
#include "compiler/passes/FusionCostModel.h"
#include "compiler/passes/FusionRules.h"
#include "compiler/passes/PassOptions.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"
#include "compiler/passes/SiblingDots.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

class FusionPass : public HloPass {
 public:
  FusionPass(FusionConfig config, FusionResult* result, bool fromOptions)
      : config_(std::move(config)), external_(result), fromOptions_(fromOptions) {}

  std::string_view name() const override { return "fusion"; }

  bool run(hlo::HloModule& module) override {
    if (fromOptions_ && !loadTargetFromOptions()) return false;
    module_ = &module;
    names_ = std::make_unique<NameTable>(module);
    result_ = FusionResult{};
    result_.module = module.name();
    result_.chip = config_.target.name;
    result_.vmemBudget = budget();
    dead_.clear();
    created_.clear();
    for (HloComputation* comp : fusionTargets(module)) fuseComputation(*comp);
    for (HloComputation* comp : fusionTargets(module))
      for (HloInstruction* d : std::vector<HloInstruction*>(dead_.begin(), dead_.end()))
        if (d->parent() == comp && comp->removeInstruction(d)) dead_.erase(d);
    cseFusedComputations(module);
    renameInProgramOrder(module);
    summarize();
    if (external_) *external_ = result_;
    if (fromOptions_ && passOptions().fusionReport) fmt::print(stderr, "{}", result_.report());
    return !created_.empty();
  }

 private:
  bool loadTargetFromOptions() {
    try {
      const PassOptions& o = passOptions();
      config_.target =
          o.chipConfig ? lower::describeTarget(*o.chipConfig) : lower::loadTarget(o.chip);
      config_.maxDuplication = passOptions().fusionMaxDuplication;
      config_.vmemFraction = passOptions().fusionVmemFraction;
      config_.siblingDots = passOptions().fusionSiblingDots;
      config_.headEpilogues = passOptions().fusionHeadEpilogues;
      return true;
    } catch (const lower::TargetError& e) {
      fmt::print(stderr, "fusion: {}\n", e.what());
      return false;
    }
  }
  int64_t budget() const {
    return static_cast<int64_t>(static_cast<double>(config_.target.vmemBytes) *
                                config_.vmemFraction);
  }

  // A fusion being grown from `seed` (a plain consumer until the first producer joins).
  struct Growing {
    HloInstruction* seed = nullptr;
    HloInstruction* fusion = nullptr;
    HloComputation* body = nullptr;
    HloInstruction* current() const { return fusion ? fusion : seed; }
  };

  void fuseComputation(HloComputation& comp) {
    lastBody_ = nullptr;
    std::vector<HloInstruction*> order = comp.postOrder();
    std::unordered_map<const HloInstruction*, size_t> position;
    for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
    // Sibling dots and their combiner are claimed first (consumers first,
    // another fusion would take the combiner into its prologue): each group
    // starts its fusion when the walk reaches its root.
    claimed_.clear();
    std::unordered_map<const HloInstruction*, SiblingDotGroup> groups;
    std::vector<SiblingDotRefusal> refusedSiblings;
    std::vector<SiblingDotGroup> found;
    if (config_.siblingDots) found = findSiblingDotGroups(comp, config_.target, &refusedSiblings);
    for (SiblingDotGroup& sg : found) {
      for (const HloInstruction* d : sg.dots) claimed_[d] = sg.root;
      for (const HloInstruction* m : sg.combiner) claimed_[m] = sg.root;
      groups[sg.root] = std::move(sg);
    }
    for (const SiblingDotRefusal& r : refusedSiblings) {
      FusionDecision d;
      d.producer = r.dots[1];
      d.producerOpcode = "dot";
      d.consumer = d.root = r.dots[0];
      d.reason = "not fused with its sibling dot: " + r.reason;
      result_.decisions.push_back(std::move(d));
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      HloInstruction* x = *it;
      if (dead_.count(x) || !isFusibleConsumer(*x)) continue;
      Growing g;
      g.seed = x;
      auto group = groups.find(x);
      if (group != groups.end()) fuseSiblingDots(g, comp, group->second, position);
      // Retried only when the producer's users changed (it may no longer need copying).
      std::set<std::pair<const HloInstruction*, int64_t>> tried;
      for (bool progress = true; progress;) {
        progress = false;
        HloInstruction* cur = g.current();
        for (int64_t k = 0; k < cur->operandCount(); ++k) {
          HloInstruction* p = cur->operand(k);
          if (!tried.insert({p, p->userCount()}).second) continue;
          std::string why;
          if (!shouldFuse(g, p, &why)) {
            if (!why.empty()) result_.decisions.push_back(describe(false, p, g, std::move(why)));
            continue;
          }
          FusionDecision d = describe(true, p, g, "");
          // A producer refused before the fusion existed (a data-movement seed
          // takes element-wise work first) is tried again.
          if (!g.body && isDataMovementSeed(*g.seed)) tried.clear();
          // A head split joins with its dot (shouldFuse checked both).
          HloInstruction* splitDot = isDotLaneSplit(*p) ? p->operand(0) : nullptr;
          fuse(g, comp, p);
          d.consumer = g.fusion->name();
          d.root = g.body->root()->name();
          result_.decisions.push_back(std::move(d));
          if (splitDot) {
            FusionDecision dd = describe(true, splitDot, g, "");
            dd.reason =
                "with its result's split into 128-lane heads: the element-wise work "
                "and lane shuffles on them are its epilogue";
            fuse(g, comp, splitDot);
            dd.consumer = g.fusion->name();
            dd.root = g.body->root()->name();
            result_.decisions.push_back(std::move(dd));
          }
          progress = true;
          break;
        }
      }
      if (g.body) {
        orderOperands(g, position);
        nameParameters(*g.body);
      }
    }
  }

  // The group's combiner and dots into the fusion its root seeds, consumers first.
  void fuseSiblingDots(Growing& g, HloComputation& comp, const SiblingDotGroup& sg,
                       const std::unordered_map<const HloInstruction*, size_t>& position) {
    std::vector<HloInstruction*> members(sg.combiner.begin(), sg.combiner.end() - 1);
    members.insert(members.end(), sg.dots.begin(), sg.dots.end());
    std::sort(members.begin(), members.end(),
              [&](const HloInstruction* a, const HloInstruction* b) {
                return position.at(a) > position.at(b);
              });
    const std::string note = fmt::format(
        "sibling dots %{} and %{} in one kernel: about {:.0f} cycles against {:.0f} for two",
        sg.dots[0]->name(), sg.dots[1]->name(), sg.fusedCycles, sg.separateCycles);
    for (HloInstruction* p : members) {
      const bool isDot = p->opcode() == HloOpcode::Dot;
      FusionDecision d = describe(true, p, g, "");
      fuse(g, comp, p);
      d.consumer = g.fusion->name();
      d.root = g.body->root()->name();
      if (isDot) d.reason = note;  // fused: the reason says why (the report prints it)
      result_.decisions.push_back(std::move(d));
    }
  }

  // Operands in program order (parameters of the body renumbered to match), so
  // fusion(%x, %w, %bias) reads like the instructions it replaced.
  void orderOperands(Growing& g,
                     const std::unordered_map<const HloInstruction*, size_t>& position) {
    std::vector<HloInstruction*> ops = g.fusion->operands();
    std::vector<size_t> perm(ops.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = k;
    auto pos = [&](size_t k) {
      auto it = position.find(ops[k]);
      return it == position.end() ? position.size() : it->second;
    };
    std::stable_sort(perm.begin(), perm.end(), [&](size_t a, size_t b) { return pos(a) < pos(b); });
    std::vector<int64_t> newNumber(ops.size());
    std::vector<HloInstruction*> sorted;
    for (size_t k = 0; k < perm.size(); ++k) {
      newNumber[perm[k]] = static_cast<int64_t>(k);
      sorted.push_back(ops[perm[k]]);
    }
    for (const auto& i : g.body->instructions())
      if (i->opcode() == HloOpcode::Parameter)
        i->attrs().parameterNumber = newNumber[static_cast<size_t>(i->attrs().parameterNumber)];
    g.fusion->setOperands(sorted);
  }

  // param_<number>, as XLA names a fused computation's parameters (unique in the module).
  void nameParameters(HloComputation& body) {
    for (const auto& i : body.instructions())
      if (i->opcode() == HloOpcode::Parameter) names_->release(i->name());
    for (const auto& i : body.instructions())
      if (i->opcode() == HloOpcode::Parameter)
        i->setName(names_->fresh(fmt::format("param_{}", i->attrs().parameterNumber)));
  }

  // Users of `p` other than the fusion it would join, plus one if it is a root.
  // Bytes of an array shape (0 for tuples and tokens).
  static int64_t arrayBytes(const hlo::Shape& s) {
    if (!s.isArray()) return 0;
    return s.elementCount() * std::max<int64_t>(1, hlo::bitWidth(s.type) / 8);
  }

  // Bytes a kernel reads for value o: a constant or iota is generated in the
  // kernel, a broadcast reads its operand (it folds into the loads).
  static int64_t readBytes(const HloInstruction* o) {
    while (o->opcode() == HloOpcode::Broadcast && o->operandCount() == 1) o = o->operand(0);
    if (o->opcode() == HloOpcode::Constant || o->opcode() == HloOpcode::Iota) return 0;
    return arrayBytes(o->shape());
  }

  // Bytes of p's operands the fusion does not read yet (what fusing p adds).
  // `lookThrough`: an element-wise operand that only p reads follows p into
  // the kernel (the fusion takes it next), so its own operands are what the
  // kernel reads: the sigmoid inside silu(g) = g * logistic(g) reads g, which
  // g * ... reads anyway, so a copy of silu(g) reads one array, not two.
  int64_t newOperandBytes(const Growing& g, const HloInstruction* p,
                          bool lookThrough = false) const {
    std::vector<const HloInstruction*> have;
    if (g.body)
      have.assign(g.fusion->operands().begin(), g.fusion->operands().end());
    else
      have.assign(g.seed->operands().begin(), g.seed->operands().end());
    int64_t bytes = 0;
    std::set<const HloInstruction*> counted;
    std::vector<std::pair<const HloInstruction*, int>> stack;
    for (const HloInstruction* o : p->operands()) stack.push_back({o, 0});
    while (!stack.empty()) {
      auto [o, depth] = stack.back();
      stack.pop_back();
      if (std::find(have.begin(), have.end(), o) != have.end() || !counted.insert(o).second)
        continue;
      if (lookThrough && depth < kLookThroughDepth && followsIntoKernel(o, p)) {
        for (const HloInstruction* oo : o->operands()) stack.push_back({oo, depth + 1});
        continue;
      }
      bytes += readBytes(o);
    }
    return bytes;
  }

  // Element-wise operand chains newOperandBytes looks through (a bound on the
  // walk; silu needs one).
  static constexpr int kLookThroughDepth = 4;

  // Does o, an operand of p (or of such an operand), join p's kernel once p
  // does? Element-wise, fusible and read by nothing else. A chain of single
  // users all ends at p.
  static bool followsIntoKernel(const HloInstruction* o, const HloInstruction* p) {
    if (!hlo::isElementwise(o->opcode()) || !o->shape().isArray() || isOutput(o) ||
        !isFusibleProducer(*o) || o->userCount() != 1)
      return false;
    const HloInstruction* u = o->users().front();
    while (u != p) {
      if (!hlo::isElementwise(u->opcode()) || u->userCount() != 1) return false;
      u = u->users().front();
    }
    return true;
  }

  // Does p read a value computed in the module (not a parameter or a constant)
  // that other instructions read too?
  static bool readsSharedComputedValue(const HloInstruction* p) {
    for (const HloInstruction* o : p->operands()) {
      while (o->opcode() == HloOpcode::Broadcast && o->operandCount() == 1) o = o->operand(0);
      if (o->opcode() != HloOpcode::Parameter && o->opcode() != HloOpcode::Constant &&
          o->opcode() != HloOpcode::Iota && o->userCount() > 1)
        return true;
    }
    return false;
  }

  // A transpose of major dims or a lane slice / concatenate: loop-fusible data
  // movement, which starts a fusion only with element-wise work.
  static bool isDataMovementSeed(const HloInstruction& i) {
    return !hlo::isElementwise(i.opcode()) && (isMajorDimsTranspose(i) || isLaneShuffle(i));
  }

  // Is p the computation's root or an element of its root tuple?
  static bool isOutput(const HloInstruction* p) {
    const HloInstruction* root = p->parent() ? p->parent()->root() : nullptr;
    if (!root) return false;
    if (root == p) return true;
    return root->opcode() == HloOpcode::Tuple &&
           std::find(root->operands().begin(), root->operands().end(), p) != root->operands().end();
  }

  int64_t otherUses(const HloInstruction* p, const HloInstruction* consumer) const {
    int64_t n = 0;
    for (const HloInstruction* u : p->users())
      if (u != consumer) ++n;
    if (p->parent() && p->parent()->root() == p) ++n;
    return n;
  }

  bool shouldFuse(const Growing& g, HloInstruction* p, std::string* why) {
    if (p->opcode() == HloOpcode::Parameter || dead_.count(p)) return false;
    auto claim = claimed_.find(p);
    if (claim != claimed_.end() && claim->second != g.seed) {
      *why = fmt::format("%{} belongs to the sibling-dot kernel of %{}", p->name(),
                         claim->second->name());
      return false;
    }
    std::string never = neverFusesReason(*p);
    if (!never.empty()) {
      *why =
          fmt::format("%{} ({}) never fuses: {}", p->name(), hlo::opcodeName(p->opcode()), never);
      return false;
    }
    if (!isFusibleProducer(*p)) return false;  // tuples, big constants, ...: nothing to report
    if (g.body && int64_t(g.body->instructions().size()) >= config_.maxInstructions) {
      *why = fmt::format("the fusion holds {} instructions, the limit (keeps compile time linear)",
                         g.body->instructions().size());
      return false;
    }
    if (isReduceHero(*p)) {
      *why = "a reduce is only the root of its own kInput fusion";
      return false;
    }
    // Where the producer would be used inside the fusion.
    std::vector<const HloInstruction*> uses;
    const HloInstruction* hero = nullptr;
    std::vector<const HloInstruction*> members;
    if (g.body) {
      hero = fusionHero(*g.body);
      for (const auto& i : g.body->instructions()) {
        if (i->opcode() != HloOpcode::Parameter) members.push_back(i.get());
      }
      const auto& ops = g.fusion->operands();
      auto at = std::find(ops.begin(), ops.end(), p);
      if (at != ops.end())
        for (const HloInstruction* u : g.body->parameter(at - ops.begin())->users())
          uses.push_back(u);
    } else {
      if (isMatmulHero(*g.seed) || isReduceHero(*g.seed)) hero = g.seed;
      members.push_back(g.seed);
      uses.push_back(g.seed);
    }
    // A transpose or lane slice / concatenate alone is data movement, which
    // its DMA program does better than a kernel through VMEM: such a seed
    // starts a fusion only with element-wise work.
    if (!g.body && isDataMovementSeed(*g.seed) && !hlo::isElementwise(p->opcode())) {
      *why = fmt::format(
          "%{} ({}) would make a kernel of data movement only: its DMA program "
          "moves it",
          g.seed->name(), hlo::opcodeName(g.seed->opcode()));
      return false;
    }
    if (isDotLaneSplit(*p)) {
      std::string no = headEpilogueRefusal(g, p, hero, members, uses);
      if (!no.empty()) {
        *why = no;
        return false;
      }
    }
    // A lane slice or concatenate is a lane rotation or select in the loop
    // kernel's tiles: the lanes it moves must be the root's lanes.
    // In a dot's head epilogue (the dot came in with its split) the shuffles
    // and the element-wise work on them are the epilogue's, below the split.
    const bool headEpilogue = hero && inHeadEpilogue(g, p, hero);
    if (headEpilogue) {
      const int64_t rank = g.body->root()->shape().rank();
      bool ok = headLanesOk(*p, rank);
      if (hlo::isElementwise(p->opcode()))
        for (const HloInstruction* o : p->operands()) ok = ok && headLeafOk(o->shape(), rank);
      if (!ok) {
        *why = fmt::format(
            "%{} would bring in a value that varies along the heads but not along whole "
            "128-lane heads (the head epilogue of %{})",
            p->name(), hero->name());
        return false;
      }
    }
    if (isLaneShuffle(*p)) {
      if (hero && !headEpilogue) {
        *why = fmt::format(
            "a lane slice or concatenate fuses only into a loop fusion (this one has %{})",
            hero->name());
        return false;
      }
      if (!lanesStayToRoot(uses, g.body != nullptr)) {
        *why =
            "a value between it and the fusion's root is not element-wise (its lanes would not "
            "be the root's)";
        return false;
      }
    }
    // Element-wise work on a lane slice / concatenate stays with it in a loop
    // fusion: in a dot's fusion it would leave the shuffle alone, a kernel of
    // data movement only (decode's q rotary embedding, rotate-half form: its
    // halves' slices and concatenate became three kernels).
    if (hero && isMatmulHero(*hero) && hlo::isElementwise(p->opcode()) && !headEpilogue)
      for (const HloInstruction* o : p->operands())
        if (isLaneShuffle(*o)) {
          *why = fmt::format(
              "%{} reads the lane {} %{}, which fuses only into a loop fusion: they stay together",
              p->name(), hlo::opcodeName(o->opcode()), o->name());
          return false;
        }
    // A transpose of major dims is read in place by a dot kernel's strided
    // DMA: as a dot operand its own operand stays in HBM. In a loop fusion
    // (no hero) it only permutes the index space: the leaves below it are
    // read through strides, and anything element-wise fuses around it.
    auto inPlace = [](const HloInstruction& i) {
      return isMajorDimsTranspose(i) && !isDotRhsTranspose(i);
    };
    if (inPlace(*p) && hero) {
      const HloInstruction* value = p;
      if (g.body) {
        const auto& ops = g.fusion->operands();
        value = g.body->parameter(std::find(ops.begin(), ops.end(), p) - ops.begin());
      }
      if (!hero || hero->opcode() != HloOpcode::Dot ||
          !(inCone(value, hero->operand(0)) || inCone(value, hero->operand(1)))) {
        *why = "a transpose of major dims fuses only into a dot's operand (read in place)";
        return false;
      }
      // Only where the dot is bound by reading this operand: the other side
      // is one row tile (decode's M = 1 against a KV cache), so the dot reads
      // it once and a transpose would triple its HBM traffic. With more rows
      // the MXU work dominates, and the batch entries a step then takes (for
      // whole-interleave-line reads) run one after another (measured: the
      // tiny prefill's attention dots 45% slower than transpose + dense reads).
      DotBlocks b = dotBlocks(*hero, config_.target);
      int64_t otherRows = inCone(value, hero->operand(0)) ? b.n : b.m;
      if (otherRows > 8) {
        *why = fmt::format(
            "%{} has {} rows on its other side (more than one row tile): "
            "transposed once, it is read densely",
            hero->name(), otherRows);
        return false;
      }
    }
    for (const HloInstruction* u : uses)
      if (inPlace(*u) && hero) {
        *why = fmt::format("%{} reads it in place through strides: it stays in HBM", u->name());
        return false;
      }
    if (isMatmulHero(*p)) {
      if (hero) {
        *why = fmt::format("the fusion already has a hero, %{} ({}); one per fusion", hero->name(),
                           hlo::opcodeName(hero->opcode()));
        return false;
      }
      for (const HloInstruction* m : members) {
        HloOpcode op = m->opcode();
        if (!hlo::isElementwise(op) && op != HloOpcode::Broadcast && op != HloOpcode::Constant &&
            op != HloOpcode::Iota) {
          *why =
              fmt::format("%{} ({}) reorders the {}'s output tiles: not an element-wise epilogue",
                          m->name(), hlo::opcodeName(op), hlo::opcodeName(p->opcode()));
          return false;
        }
      }
    }
    int64_t weight = recomputeWeight(*p, config_.target);
    if (hero && isMatmulHero(*hero) && !isOperandPrologueOp(*p)) {
      // The value standing for p inside the fusion (its parameter, or p itself).
      const HloInstruction* value = p;
      if (g.body) {
        const auto& ops = g.fusion->operands();
        value = g.body->parameter(std::find(ops.begin(), ops.end(), p) - ops.begin());
      }
      // A producer of a dot operand runs once per block of the other side.
      int64_t reuse = 0;
      if (hero->opcode() == HloOpcode::Dot) {
        DotBlocks b = dotBlocks(*hero, config_.target);
        if (inCone(value, hero->operand(0))) reuse = std::max(reuse, b.lhsReuse());
        if (inCone(value, hero->operand(1))) reuse = std::max(reuse, b.rhsReuse());
      } else if (inCone(value, hero->operand(0)) || inCone(value, hero->operand(1))) {
        reuse = kNeverDuplicate;  // a convolution's window re-reads every input element
      }
      // A sibling-dot kernel (SiblingDots.h) spends its VALU slots on the
      // combiner epilogue and issues twice the MXU work per step: its
      // operand producers are held to the duplication limit alone (measured:
      // the 7B prefill's RMS norm scale recomputed for each of 43 column
      // blocks made the pair's kernel 33% slower than with the scale in HBM).
      const bool siblings = g.body && countDots(*g.body) > 1;
      if (reuse > 0 && (reuse >= kNeverDuplicate ||
                        (weight * (reuse - 1) > config_.maxDuplication &&
                         (siblings || !recomputeBeatsHbmRoundTrip(*p, weight, reuse - 1,
                                                                  otherUses(p, g.current()) > 0,
                                                                  config_.target))))) {
        *why = reuse >= kNeverDuplicate
                   ? fmt::format("would be recomputed for every output tile of %{}", hero->name())
                   : fmt::format(
                         "would be recomputed for each of the {} output tiles of %{} that read "
                         "it: cost {} (weight {} x {}) > limit {}{}",
                         reuse, hero->name(), weight * (reuse - 1), weight, reuse - 1,
                         config_.maxDuplication,
                         siblings ? " (a sibling-dot kernel's limit)"
                                  : ", and more VALU cycles than its HBM round trip");
        return false;
      }
    }
    // An f32 -> bf16 convert in a dot's operand prologue is redone for every
    // grid step that reads the block: kept apart when that costs more than
    // converting once through HBM (prologueConvertBeatsHbmRoundTrip).
    if (hero && hero->opcode() == HloOpcode::Dot && p->opcode() == HloOpcode::Convert &&
        p->shape().type == hlo::PrimitiveType::BF16 &&
        p->operand(0)->shape().type == hlo::PrimitiveType::F32) {
      const HloInstruction* value = p;
      if (g.body) {
        const auto& ops = g.fusion->operands();
        value = g.body->parameter(std::find(ops.begin(), ops.end(), p) - ops.begin());
      }
      DotBlocks b = dotBlocks(*hero, config_.target);
      int64_t copies = 0;
      if (inCone(value, hero->operand(0))) copies = std::max(copies, b.lhsReuse());
      if (inCone(value, hero->operand(1))) copies = std::max(copies, b.rhsReuse());
      if (copies > 1 && !prologueConvertBeatsHbmRoundTrip(*p, copies, config_.target)) {
        *why = fmt::format(
            "would be converted again in each of the {} grid steps of %{} that read it: more "
            "store cycles than converting once through HBM",
            copies, hero->name());
        return false;
      }
    }
    if (weight > 1)
      for (const HloInstruction* u : uses)
        if (u->opcode() == HloOpcode::Broadcast &&
            u->shape().elementCount() > p->shape().elementCount()) {
          *why = fmt::format("would be recomputed for every element of %{} (weight {})", u->name(),
                             weight);
          return false;
        }
    int64_t others = otherUses(p, g.current());
    // A value that is an output of the computation goes to HBM whatever its
    // consumers do: recomputing it inside one only pays when that reads fewer
    // bytes than the value itself.
    if (others > 0 && isOutput(p)) {
      int64_t operandBytes = newOperandBytes(g, p), resultBytes = arrayBytes(p->shape());
      if (operandBytes > resultBytes) {
        *why = fmt::format(
            "it is an output (written to HBM anyway), and fused the kernel would read {} bytes "
            "of its operands instead of the {}-byte result",
            operandBytes, resultBytes);
        return false;
      }
    }
    // The epilogue of a dot it alone reads (a residual add, algsimp's view of
    // it in the dot's shape) is fused into that dot when the walk reaches it:
    // a copy here would make the dot's result a second HBM read.
    if (others > 0 && hlo::isElementwise(p->opcode()))
      for (const HloInstruction* o : p->operands())
        if (o->opcode() == HloOpcode::Dot && o->userCount() == 1 && !isOutput(o)) {
          *why = fmt::format(
              "it is the epilogue of %{}, its only user: not copied for {} other user(s)",
              o->name(), others);
          return false;
        }
    if (others > 0) {
      if (weight >= kNeverDuplicate) {
        *why = fmt::format("%{} has {} other user(s) and a {} is never duplicated", p->name(),
                           others, hlo::opcodeName(p->opcode()));
        return false;
      }
      if (weight * others > config_.maxDuplication &&
          !(config_.maxDuplication > 0 &&
            (weight <= 1 ? newOperandBytes(g, p) <= arrayBytes(p->shape())
                         : recomputeHidesUnderHbm(g, p)))) {
        *why = fmt::format(
            "would duplicate it for {} other user(s): cost {} (weight {} x {}) > limit {}, and {}",
            others, weight * others, weight, others, config_.maxDuplication,
            weight <= 1 ? "each copy would read more bytes than the result"
                        : "the kernel's transcendental work would outlast its HBM traffic");
        return false;
      }
      // Copied into several consumers, the producer makes each read its
      // operands instead of its result. That compounds when an operand is
      // itself a shared computed value (a residual stream's chain of adds,
      // fused layer after layer, had layer 7's kernels read 16 arrays
      // instead of one), so then much more bytes is refused; a small vector
      // beside one array (a normalizing scale) is not much more.
      int64_t operandBytes = newOperandBytes(g, p, true), resultBytes = arrayBytes(p->shape());
      if (readsSharedComputedValue(p) && operandBytes > resultBytes + resultBytes / 4) {
        *why = fmt::format(
            "its result stays in HBM for {} other user(s), and fused the kernel would read {} "
            "bytes of its operands instead of the {}-byte result",
            others, operandBytes, resultBytes);
        return false;
      }
    }
    FusedBody trial = g.body ? copyFusedBody(*g.body, g.fusion->operands())
                             : startFusedBody(*g.seed, "trial", nullptr);
    fuseProducer(trial, p, nullptr);
    if (isDotLaneSplit(*p)) fuseProducer(trial, p->operand(0), nullptr);  // they join together
    VmemEstimate est = estimateFusionVmem(*trial.comp, config_.target);
    if (est.bytes > budget()) {
      *why = fmt::format(
          "VMEM working set {} bytes (inputs {}, output {}, intermediates {}, accumulator {}; "
          "block {}) exceeds the budget of {} bytes",
          est.bytes, est.inputBytes, est.outputBytes, est.intermediateBytes, est.accumulatorBytes,
          est.block, budget());
      return false;
    }
    return true;
  }

  // May an expensive element-wise producer (exp, logistic, divide) be copied
  // into this consumer although other users keep its result? The copy costs
  // EUP / VALU cycles and saves reading the result from HBM. The kernel's
  // expensive element-wise ops (weight x f32 vregs of 1024 elements) run
  // beside its DMAs: the copy pays while they take at most the cycles of the
  // bytes the kernel still reads and writes plus those of the read it saves
  // (and once every user has a copy, the producer's own write goes too). A
  // softmax's exp is then recomputed by the sum and by the gradient instead
  // of written once and read twice (1 GiB each in the training step's loss).
  bool recomputeHidesUnderHbm(const Growing& g, const HloInstruction* p) const {
    const lower::TargetDescription& t = config_.target;
    // An output is written anyway: copies would add EUP work and save no write.
    // Below one (8, 128) tile (AdamW's scalar bias corrections) the read saved
    // is a few bytes, and the copy's EUP latency lands in every grid step.
    if (!hlo::isElementwise(p->opcode()) || !p->shape().isArray() || isOutput(p) ||
        p->shape().elementCount() < 8 * 128 || t.clockHz <= 0 || t.hbmBytesPerSecond <= 0)
      return false;
    // Not into a dot's kernel: its bound is the MXU, which this does not price.
    if (g.body ? classifyFusion(*g.body) == FusionKind::Output : isMatmulHero(*g.seed))
      return false;
    auto eupCycles = [&](const HloInstruction* i) -> double {
      if (!hlo::isElementwise(i->opcode()) || !i->shape().isArray()) return 0;
      int64_t w = recomputeWeight(*i, t);
      if (w <= 1 || w >= kNeverDuplicate) return 0;
      return static_cast<double>(w) *
             static_cast<double>((i->shape().elementCount() + 1023) / 1024);
    };
    double work = eupCycles(p);
    std::vector<const HloInstruction*> operands;
    if (g.body) {
      for (const auto& i : g.body->instructions())
        if (i->opcode() != HloOpcode::Parameter) work += eupCycles(i.get());
      operands.assign(g.fusion->operands().begin(), g.fusion->operands().end());
    } else {
      work += eupCycles(g.seed);
      operands.assign(g.seed->operands().begin(), g.seed->operands().end());
    }
    operands.erase(std::remove(operands.begin(), operands.end(), p), operands.end());
    for (const HloInstruction* o : p->operands())
      if (std::find(operands.begin(), operands.end(), o) == operands.end()) operands.push_back(o);
    int64_t bytes = arrayBytes(g.current()->shape());
    for (const HloInstruction* o : operands) bytes += readBytes(o);
    const double bytesPerCycle = t.hbmBytesPerSecond / t.clockHz;
    return work <= static_cast<double>(bytes + arrayBytes(p->shape())) / bytesPerCycle;
  }

  // In a head epilogue of split rank `rank` (heads at rank - 2, lanes at
  // rank - 1), may `s` be a kernel input? It does not vary along the heads,
  // or it spans whole 128-lane heads (the dot kernel merges heads and lanes
  // into one axis; a leaf along the lanes alone is read as one periodic block).
  static bool headLeafOk(const hlo::Shape& s, int64_t rank) {
    if (!s.isArray() || s.rank() != rank) return true;  // under a broadcast: checked there
    return s.dims[static_cast<size_t>(rank - 2)] == 1 || s.dims.back() == 128;
  }
  // The same for a broadcast (its operand along the heads only with whole
  // heads) or an iota (not along the heads or the lanes) in such an epilogue.
  static bool headLanesOk(const HloInstruction& m, int64_t rank) {
    if (m.opcode() == HloOpcode::Iota) {
      auto d = m.intAttr("iota_dimension");
      return m.shape().rank() == rank && d && *d < rank - 2;
    }
    if (m.opcode() != HloOpcode::Broadcast) return true;
    if (m.shape().rank() != rank) return false;
    const hlo::Shape& os = m.operand(0)->shape();
    bool heads = false, wholeLanes = false;
    for (size_t j = 0; j < m.dimensions().size(); ++j) {
      if (os.dims[j] == 1) continue;
      heads = heads || m.dimensions()[j] == rank - 2;
      wholeLanes = wholeLanes || (m.dimensions()[j] == rank - 1 && os.dims[j] == 128);
    }
    return !heads || wholeLanes;
  }

  // Is the fusion a dot's head epilogue (it holds the dot's split into
  // heads), with `p` used in the epilogue rather than in the dot's operands?
  bool inHeadEpilogue(const Growing& g, const HloInstruction* p, const HloInstruction* hero) const {
    if (!g.body || hero->opcode() != HloOpcode::Dot) return false;
    bool split = false;
    for (const auto& i : g.body->instructions()) split = split || isDotLaneSplit(*i);
    if (!split) return false;
    const auto& ops = g.fusion->operands();
    auto at = std::find(ops.begin(), ops.end(), p);
    if (at == ops.end()) return false;
    const HloInstruction* value = g.body->parameter(at - ops.begin());
    return !inCone(value, hero->operand(0)) && !inCone(value, hero->operand(1));
  }

  // Why the head split `p` of a dot (isDotLaneSplit) may not bring its dot
  // into this fusion as the hero with the fusion as its epilogue, or "". The
  // dot kernel emits the epilogue one 128-lane column tile (one head) of its
  // output block at a time (compiler/lower/fusion/DotLowering.cpp), so the
  // fusion must be element-wise work and lane shuffles on the heads' lanes
  // with the split's shape, and the dot and the split read by nothing else.
  std::string headEpilogueRefusal(const Growing& g, const HloInstruction* p,
                                  const HloInstruction* hero,
                                  const std::vector<const HloInstruction*>& members,
                                  const std::vector<const HloInstruction*>& uses) const {
    const HloInstruction* dot = p->operand(0);
    if (!config_.headEpilogues) return "head epilogues are off (--head-epilogues=false)";
    if (hero) return fmt::format("the fusion already has a hero, %{}", hero->name());
    if (claimed_.count(dot)) return fmt::format("%{} is a sibling dot", dot->name());
    if (p->userCount() != 1 || isOutput(p) || dot->userCount() != 1 || isOutput(dot))
      return fmt::format("%{} or its split has other users", dot->name());
    for (const HloInstruction* m : members) {
      HloOpcode op = m->opcode();
      if (!hlo::isElementwise(op) && op != HloOpcode::Broadcast && op != HloOpcode::Constant &&
          op != HloOpcode::Iota && !isLaneShuffle(*m) && !isUnitDimView(*m))
        return fmt::format("%{} ({}) is not element-wise work on the heads' lanes", m->name(),
                           hlo::opcodeName(op));
    }
    const HloInstruction* root = g.body ? g.body->root() : g.seed;
    if (!root->shape().isArray() || root->shape().dims != p->shape().dims)
      return "the fusion's result is not of the split's shape";
    const int64_t rank = p->shape().rank();
    for (const HloInstruction* m : members)
      if (!headLanesOk(*m, rank))
        return fmt::format("%{} ({}) varies along the heads but not along whole 128-lane heads",
                           m->name(), hlo::opcodeName(m->opcode()));
    const std::vector<HloInstruction*> leaves = g.body ? g.fusion->operands() : g.seed->operands();
    for (const HloInstruction* o : leaves)
      if (o != p && !headLeafOk(o->shape(), rank))
        return fmt::format("%{} varies along the heads but not along whole 128-lane heads",
                           o->name());
    if (!lanesStayToRoot(uses, g.body != nullptr))
      return "a value between it and the fusion's root is not element-wise";
    return "";
  }

  // Are all values from `uses` up to the fused root element-wise or lane
  // slices / concatenates (so the lanes of each are the root's lanes)? Without
  // a fused body the use is the seed, the root itself.
  static bool lanesStayToRoot(std::vector<const HloInstruction*> stack, bool inBody) {
    std::set<const HloInstruction*> seen;
    while (!stack.empty()) {
      const HloInstruction* u = stack.back();
      stack.pop_back();
      if (!seen.insert(u).second) continue;
      bool keepsLanes = hlo::isElementwise(u->opcode()) || isLaneShuffle(*u) ||
                        (isMajorDimsTranspose(*u) && u->shape().dims.back() > 1 &&
                         u->dimensions().back() == u->shape().rank() - 1);
      if (!keepsLanes) return false;
      if (inBody)
        for (const HloInstruction* v : u->users()) stack.push_back(v);
    }
    return true;
  }

  static int64_t countDots(const HloComputation& body) {
    int64_t n = 0;
    for (const auto& i : body.instructions()) n += i->opcode() == HloOpcode::Dot ? 1 : 0;
    return n;
  }

  // Is `value` `root` or one of the instructions `root` is computed from?
  static bool inCone(const HloInstruction* value, const HloInstruction* root) {
    std::vector<const HloInstruction*> stack{root};
    std::set<const HloInstruction*> seen;
    while (!stack.empty()) {
      const HloInstruction* i = stack.back();
      stack.pop_back();
      if (i == value) return true;
      if (!seen.insert(i).second) continue;
      for (const HloInstruction* op : i->operands()) stack.push_back(op);
    }
    return false;
  }

  void detach(HloInstruction* inst) {
    names_->release(inst->name());
    inst->setName(names_->fresh(inst->name() + ".fused"));
    inst->setOperands({});
    dead_.insert(inst);
  }

  void fuse(Growing& g, HloComputation& comp, HloInstruction* p) {
    if (!g.fusion) {
      std::string bodyName = module_->uniqueComputationName("fused_computation");
      FusedBody fb = startFusedBody(*g.seed, bodyName, names_.get());
      auto fusion = HloInstruction::create(HloOpcode::Fusion, names_->fresh("fusion"),
                                           g.seed->shape(), fb.operands);
      fusion->attrs().metadata = g.seed->attrs().metadata;
      fusion->attrs().calls.push_back(hlo::CalledComputations{"calls", {fb.comp}, false});
      // Consumers come first, so each body goes before the previous one: the
      // module then lists fused computations in program order.
      g.body = module_->addComputationBefore(std::move(fb.body), lastBody_ ? lastBody_ : &comp);
      lastBody_ = g.body;
      g.fusion = comp.addInstruction(std::move(fusion));
      g.fusion->setSourceLine(g.seed->sourceLine());
      std::string seedName = g.seed->name();
      g.seed->replaceAllUsesWith(g.fusion);
      detach(g.seed);
      g.body->root()->setName(names_->fresh(seedName));  // free again after detach
      created_.push_back(g.fusion);
    }
    FusedBody fb;
    fb.comp = g.body;
    fb.operands = g.fusion->operands();
    HloInstruction* clone = fuseProducer(fb, p, names_.get());
    g.fusion->setOperands(fb.operands);
    if (p->userCount() == 0 && !(p->parent() && p->parent()->root() == p)) {
      std::string original = p->name();
      detach(p);
      if (clone) {
        names_->release(clone->name());
        clone->setName(names_->fresh(original));
      }
    }
    hlo::AttrValue kind;
    kind.kind = hlo::AttrValue::Kind::Ident;
    kind.s = fusionKindName(classifyFusion(*g.body));
    g.fusion->setGeneric("kind", kind);
  }

  FusionDecision describe(bool fused, const HloInstruction* p, const Growing& g, std::string why) {
    FusionDecision d;
    d.fused = fused;
    d.producer = p->name();
    d.producerOpcode = std::string(hlo::opcodeName(p->opcode()));
    d.consumer = g.current()->name();
    d.root = g.body ? g.body->root()->name() : g.seed->name();
    d.reason = std::move(why);
    return d;
  }

  // Fusions were named as they were made (consumers first); name them fusion,
  // fusion.1, ... and their bodies fused_computation, ... in program order.
  void renameInProgramOrder(hlo::HloModule& module) {
    std::unordered_map<const HloInstruction*, std::string> before;
    for (HloInstruction* f : created_) {
      if (dead_.count(f)) continue;
      before[f] = f->name();
      names_->release(f->name());
      if (HloComputation* body = f->calledComputation("calls"))
        body->setName(body->name() + ".renaming");
    }
    std::unordered_map<std::string, std::string> renamed;
    for (HloComputation* comp : fusionTargets(module))
      for (HloInstruction* i : comp->postOrder()) {
        auto it = before.find(i);
        if (it == before.end()) continue;
        i->setName(names_->fresh("fusion"));
        if (HloComputation* body = i->calledComputation("calls"))
          body->setName(module.uniqueComputationName("fused_computation"));
        renamed[it->second] = i->name();
      }
    for (FusionDecision& d : result_.decisions) {
      auto it = renamed.find(d.consumer);
      if (it != renamed.end()) d.consumer = it->second;
    }
  }

  void summarize() {
    std::unordered_set<const HloInstruction*> mine(created_.begin(), created_.end());
    std::vector<HloInstruction*> inOrder;
    for (HloComputation* comp : fusionTargets(*module_))
      for (HloInstruction* i : comp->postOrder())
        if (mine.count(i) && !dead_.count(i)) inOrder.push_back(i);
    for (HloInstruction* f : inOrder) {
      HloComputation* body = f->calledComputation("calls");
      if (!body) continue;
      FusionSummary s;
      s.name = f->name();
      s.kind = fusionKindName(classifyFusion(*body));
      s.root = body->root() ? body->root()->name() : "";
      s.computation = body->name();
      for (const auto& i : body->instructions())
        if (i->opcode() != HloOpcode::Parameter) ++s.instructions;
      s.operands = f->operandCount();
      s.vmem = estimateFusionVmem(*body, config_.target);
      result_.fusions.push_back(std::move(s));
    }
  }

  FusionConfig config_;
  FusionResult* external_;
  bool fromOptions_;
  hlo::HloModule* module_ = nullptr;
  FusionResult result_;
  std::unordered_set<HloInstruction*> dead_;
  std::vector<HloInstruction*> created_;
  HloComputation* lastBody_ = nullptr;
  std::unique_ptr<NameTable> names_;
  // Sibling-dot members -> their group's root (the only seed that takes them).
  std::unordered_map<const HloInstruction*, const HloInstruction*> claimed_;
};

}  // namespace

int64_t FusionResult::refusals() const {
  int64_t n = 0;
  for (const FusionDecision& d : decisions) n += d.fused ? 0 : 1;
  return n;
}

std::string FusionResult::report() const {
  std::string out =
      fmt::format("fusion decisions for module '{}' on chip '{}' (VMEM budget {} bytes):\n", module,
                  chip, vmemBudget);
  for (const FusionDecision& d : decisions) {
    if (d.fused)
      out += fmt::format("  fused   %{} ({}) into %{} (root %{}){}\n", d.producer, d.producerOpcode,
                         d.consumer, d.root, d.reason.empty() ? "" : ": " + d.reason);
    else
      out += fmt::format("  refused %{} ({}) into %{} (root %{}): {}\n", d.producer,
                         d.producerOpcode, d.consumer, d.root, d.reason);
  }
  int64_t kinds[3] = {0, 0, 0}, fusedInstrs = 0;
  out += "fusions:\n";
  for (const FusionSummary& s : fusions) {
    out += fmt::format(
        "  %{} = {} (root %{}, calls %{}): {} instructions, {} operands, VMEM estimate {} bytes "
        "(block {})\n",
        s.name, s.kind, s.root, s.computation, s.instructions, s.operands, s.vmem.bytes,
        s.vmem.block);
    kinds[s.kind == "kLoop" ? 0 : s.kind == "kInput" ? 1 : 2]++;
    fusedInstrs += s.instructions;
  }
  out += fmt::format(
      "summary: {} fusions ({} kLoop, {} kInput, {} kOutput) holding {} instructions; {} "
      "refusals\n",
      fusions.size(), kinds[0], kinds[1], kinds[2], fusedInstrs, refusals());
  return out;
}

std::unique_ptr<HloPass> createFusionPass(FusionConfig config, FusionResult* result) {
  return std::make_unique<FusionPass>(std::move(config), result, false);
}

std::unique_ptr<HloPass> createFusionPass() {
  return std::make_unique<FusionPass>(FusionConfig{}, nullptr, true);
}

}  // namespace tpusim::passes
