// The row-reduce fusion pass (`row-reduce-fusion`), run after
// `multi-output-fusion`: a reduction over the trailing dims of its input (a
// row sum) moves into the one fusion that reads its result back along those
// rows, when that fusion walks the same index space and reads an operand the
// reduction reads too. A row of at most kMaxRowLanes elements is one block of
// the consumer's kernel, so the kernel reduces each row block's lanes and then
// computes its outputs from the same block (compiler/lower/fusion: a reduce
// inside a region), instead of a second kernel reading the same operands from
// HBM again: an RMSNorm backward's sum of dy * w * x and its dx, an RMSNorm's
// sum of squares and the normalized rows.
//
// The producer: a kInput fusion whose root is such a reduce (or an unfused
// one), f32, add / max / min, with one user. The consumer: a kLoop or kInput
// fusion without a dot or lane shuffles, whose index space (its outputs', or
// its reduces' input shape) is the reduce's input shape; its own reduces keep
// the trailing dims; and every path from the reduce's result to the
// consumer's outputs reads it through element-wise ops and broadcasts along
// the trailing dims only (the value of a row, at every element of the row).
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/passes/FusionBuilder.h"
#include "compiler/passes/FusionRules.h"
#include "compiler/passes/HloPass.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

// The widest row the consumer's kernel holds in one block (the loop tiler's
// widest lane block).
constexpr int64_t kMaxRowLanes = 1024;
// The widest row of a row-reduce pair (the consumer reduces the same rows: a
// softmax's sum of exp(x - max)). Its reduce kernel takes whole rows up to
// this wide in one block and keeps the reduction's own lane blocks inside it
// (compiler/lower/fusion/ReduceLowering.cpp), so the sums keep their order.
constexpr int64_t kMaxPairRowLanes = 4096;

using Embedding = std::vector<int>;  // space dim of each value dim, -1 for a unit dim

Embedding normalized(const hlo::Shape& s, Embedding e) {
  for (size_t j = 0; j < e.size(); ++j)
    if (s.dims[j] == 1) e[j] = -1;
  return e;
}

Embedding leading(const hlo::Shape& s, int64_t n) {
  Embedding e;
  for (int64_t j = 0; j < n; ++j) e.push_back(static_cast<int>(j));
  return normalized(s, e);
}

// The row reduce a producer computes (nullptr if it is not one): its input's
// trailing dims reduced, at most kMaxRowLanes elements of them, f32, add /
// max / min.
const HloInstruction* rowReduceOf(const HloInstruction& inst) {
  const HloInstruction* red = nullptr;
  if (isReduceHero(inst)) {
    red = &inst;
  } else if (inst.opcode() == HloOpcode::Fusion && inst.shape().isArray()) {
    const HloComputation* body = inst.calledComputation("calls");
    if (!body || !body->root() || !isReduceHero(*body->root())) return nullptr;
    for (const auto& i : body->instructions())
      if (isMatmulHero(*i) || isLaneShuffle(*i) || isMajorDimsTranspose(*i)) return nullptr;
    red = body->root();
  }
  if (!red || red->shape().type != hlo::PrimitiveType::F32) return nullptr;
  const HloComputation* f = red->toApply();
  const HloInstruction* r = f ? f->root() : nullptr;
  if (!r || r->operandCount() != 2 || r->operand(0)->opcode() != HloOpcode::Parameter ||
      r->operand(1)->opcode() != HloOpcode::Parameter || r->operand(0) == r->operand(1))
    return nullptr;
  if (r->opcode() != HloOpcode::Add && r->opcode() != HloOpcode::Maximum &&
      r->opcode() != HloOpcode::Minimum)
    return nullptr;
  const hlo::Shape& in = red->operand(0)->shape();
  std::vector<int64_t> dims = red->dimensions();
  std::sort(dims.begin(), dims.end());
  const int64_t kept = in.rank() - static_cast<int64_t>(dims.size());
  if (dims.empty() || kept < 1) return nullptr;
  int64_t lanes = 1;
  for (size_t j = 0; j < dims.size(); ++j) {
    if (dims[j] != kept + static_cast<int64_t>(j)) return nullptr;
    lanes *= in.dims[static_cast<size_t>(dims[j])];
  }
  return lanes <= kMaxPairRowLanes && lanes > 1 ? red : nullptr;
}

int64_t rowLanes(const HloInstruction& red) {
  int64_t lanes = 1;
  for (int64_t d : red.dimensions()) lanes *= red.operand(0)->shape().dims[static_cast<size_t>(d)];
  return lanes;
}

// Is `consumer` a kInput fusion whose root is one reduce of `red`'s input
// shape over the same dims (a row reduce of the same rows)?
bool reducesSameRows(const HloInstruction& red, const HloInstruction& consumer) {
  if (consumer.opcode() != HloOpcode::Fusion) return false;
  const HloComputation* body = consumer.calledComputation("calls");
  const HloInstruction* root = body ? body->root() : nullptr;
  if (!root || !isReduceHero(*root)) return false;
  std::vector<int64_t> a = red.dimensions(), b = root->dimensions();
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b && root->operand(0)->shape().dims == red.operand(0)->shape().dims;
}

// The index space of a consumer fusion's kernel: its outputs' shape, or its
// reduces' input shape (empty when neither is one shape). `reduced` gets the
// dims its reduces reduce.
std::vector<int64_t> consumerSpace(const HloComputation& body, std::set<int64_t>& reduced) {
  std::vector<const HloInstruction*> roots;
  if (body.root()->opcode() == HloOpcode::Tuple) {
    for (const HloInstruction* e : body.root()->operands()) roots.push_back(e);
  } else {
    roots.push_back(body.root());
  }
  std::vector<int64_t> space;
  for (const HloInstruction* e : roots) {
    const hlo::Shape* s = &e->shape();
    if (isReduceHero(*e)) {
      s = &e->operand(0)->shape();
      for (int64_t d : e->dimensions()) reduced.insert(d);
    }
    if (!s->isArray() || (!space.empty() && s->dims != space)) return {};
    space = s->dims;
  }
  return space;
}

// Does every path from `param` to the consumer's outputs read it through
// element-wise ops and broadcasts, at the leading dims of the space? Walks
// the body from its outputs with each value's embedding.
bool readAlongRows(const HloComputation& body, const HloInstruction* param, const Embedding& want) {
  std::vector<std::pair<const HloInstruction*, Embedding>> stack;
  std::set<std::pair<const HloInstruction*, Embedding>> seen;
  std::vector<const HloInstruction*> roots;
  if (body.root()->opcode() == HloOpcode::Tuple) {
    for (const HloInstruction* e : body.root()->operands()) roots.push_back(e);
  } else {
    roots.push_back(body.root());
  }
  for (const HloInstruction* e : roots) {
    const HloInstruction* v = isReduceHero(*e) ? e->operand(0) : e;
    Embedding id;
    for (int64_t j = 0; j < v->shape().rank(); ++j) id.push_back(static_cast<int>(j));
    stack.push_back({v, normalized(v->shape(), id)});
    if (isReduceHero(*e)) stack.push_back({e->operand(1), {}});
  }
  while (!stack.empty()) {
    auto [i, emb] = stack.back();
    stack.pop_back();
    if (!seen.insert({i, emb}).second) continue;
    if (i == param) {
      if (emb != want) return false;
      continue;
    }
    HloOpcode op = i->opcode();
    if (op == HloOpcode::Parameter || op == HloOpcode::Constant || op == HloOpcode::Iota) continue;
    if (op == HloOpcode::Broadcast) {
      const hlo::Shape& os = i->operand(0)->shape();
      Embedding e;
      for (int64_t d : i->dimensions()) e.push_back(emb[static_cast<size_t>(d)]);
      if (static_cast<int64_t>(e.size()) != os.rank()) return false;
      stack.push_back({i->operand(0), normalized(os, e)});
      continue;
    }
    if (!hlo::isElementwise(op)) {
      // Anything else (a unit-dim view) must not lead to the reduce's result.
      if (i == param || reaches(i, param)) return false;
      continue;
    }
    for (const HloInstruction* o : i->operands())
      stack.push_back({o, o->shape().rank() == 0 ? Embedding{} : normalized(o->shape(), emb)});
  }
  return true;
}

class RowReduceFusionPass : public HloPass {
 public:
  std::string_view name() const override { return "row-reduce-fusion"; }

  bool run(hlo::HloModule& module) override {
    module_ = &module;
    names_ = std::make_unique<NameTable>(module);
    bool changed = false;
    for (HloComputation* comp : fusionTargets(module)) changed |= runOn(*comp);
    if (changed) {
      module.removeUnreachableComputations();
      cseFusedComputations(module);
    }
    return changed;
  }

 private:
  bool runOn(HloComputation& comp) {
    bool changed = false;
    // merge() deletes the producer and the consumer, which may still be ahead
    // in this post-order snapshot.
    std::unordered_set<const HloInstruction*> gone;
    for (HloInstruction* producer : comp.postOrder()) {
      if (gone.count(producer)) continue;
      const HloInstruction* red = rowReduceOf(*producer);
      if (!red || producer->userCount() < 1) continue;
      HloInstruction* consumer = pairConsumer(*producer, *red);
      bool pair = consumer != nullptr;
      if (!pair) {
        consumer = producer->users().front();
        bool oneUser = true;
        for (const HloInstruction* u : producer->users()) oneUser &= u == consumer;
        if (!oneUser || rowLanes(*red) > kMaxRowLanes) continue;
      }
      if (!fits(*producer, *red, *consumer, pair)) continue;
      bool otherUsers = false;
      for (const HloInstruction* u : producer->users()) otherUsers |= u != consumer;
      gone.insert(producer);
      gone.insert(consumer);
      merge(comp, producer, consumer, otherUsers);
      changed = true;
    }
    return changed;
  }

  // A user of the producer that reduces the same rows (the pair's second
  // reduce), and that no other user of the producer leads to: the producer's
  // other users then read the merged kernel's first output.
  static HloInstruction* pairConsumer(const HloInstruction& producer, const HloInstruction& red) {
    for (HloInstruction* c : producer.users()) {
      if (!reducesSameRows(red, *c)) continue;
      bool cycle = false;
      for (const HloInstruction* u : producer.users()) cycle |= u != c && reaches(c, u);
      if (!cycle) return c;
    }
    return nullptr;
  }

  static bool fits(const HloInstruction& producer, const HloInstruction& red,
                   const HloInstruction& consumer, bool pair) {
    if (consumer.opcode() != HloOpcode::Fusion) return false;
    const HloComputation* body = consumer.calledComputation("calls");
    if (!body || !body->root()) return false;
    for (const auto& i : body->instructions()) {
      HloOpcode op = i->opcode();
      if (isMatmulHero(*i) || isLaneShuffle(*i) || isMajorDimsTranspose(*i)) return false;
      // A reduce inside the consumer already (one row reduce per kernel).
      if (op == HloOpcode::Reduce && i.get() != body->root() &&
          !(body->root()->opcode() == HloOpcode::Tuple &&
            std::find(body->root()->operands().begin(), body->root()->operands().end(), i.get()) !=
                body->root()->operands().end()))
        return false;
    }
    const hlo::Shape& in = red.operand(0)->shape();
    std::set<int64_t> reduced;
    if (consumerSpace(*body, reduced) != in.dims) return false;
    const int64_t kept = in.rank() - static_cast<int64_t>(red.dimensions().size());
    // The consumer's own reduces keep the rows' lanes, or (a pair) reduce them.
    for (int64_t d : reduced)
      if ((d >= kept) != pair) return false;
    // The row's operands are read by the consumer too (the read saved).
    bool shares = false;
    for (const HloInstruction* op : producer.operands())
      shares |= op->shape().isArray() && op->shape().elementCount() == in.elementCount() &&
                std::find(consumer.operands().begin(), consumer.operands().end(), op) !=
                    consumer.operands().end();
    if (!shares) return false;
    for (int64_t k = 0; k < consumer.operandCount(); ++k) {
      if (consumer.operand(k) != &producer) continue;
      const HloInstruction* param = nullptr;
      for (const auto& i : body->instructions())
        if (i->opcode() == HloOpcode::Parameter && i->attrs().parameterNumber == k) param = i.get();
      if (!param || !readAlongRows(*body, param, leading(producer.shape(), kept))) return false;
    }
    return true;
  }

  // The consumer's body with the producer's computation in place of its
  // parameter; the consumer's users read the new fusion. With `keepRow` the
  // fusion also outputs the row reduce (a tuple: the row, the consumer's
  // result) for the producer's other users.
  void merge(HloComputation& comp, HloInstruction* producer, HloInstruction* consumer,
             bool keepRow) {
    auto body =
        std::make_unique<HloComputation>(module_->uniqueComputationName("fused_row_reduce"));
    std::vector<HloInstruction*> operands;
    std::unordered_map<const HloInstruction*, HloInstruction*> param;  // outer -> parameter
    auto parameterFor = [&](HloInstruction* outer) {
      auto it = param.find(outer);
      if (it != param.end()) return it->second;
      auto p = HloInstruction::create(HloOpcode::Parameter,
                                      names_->fresh(fmt::format("param_{}", operands.size())),
                                      outer->shape());
      p->attrs().parameterNumber = static_cast<int64_t>(operands.size());
      operands.push_back(outer);
      return param[outer] = body->addInstruction(std::move(p));
    };
    // Clones `fused` (the body of `outer`) into the new body; its parameters
    // become the new body's, except the producer's, which becomes `inner`.
    auto cloneBody = [&](const HloComputation& fused, const HloInstruction& outer,
                         HloInstruction* inner) {
      std::unordered_map<const HloInstruction*, HloInstruction*> copy;
      for (HloInstruction* i : fused.postOrder()) {
        if (i->opcode() == HloOpcode::Parameter) {
          HloInstruction* o = outer.operand(i->attrs().parameterNumber);
          copy[i] = o == producer ? inner : parameterFor(o);
          continue;
        }
        std::vector<HloInstruction*> ops;
        for (HloInstruction* op : i->operands()) ops.push_back(copy.at(op));
        copy[i] = body->addInstruction(i->cloneWithOperands(names_->fresh(i->name()), ops));
      }
      return copy.at(fused.root());
    };
    HloInstruction* row = nullptr;
    if (producer->opcode() == HloOpcode::Fusion) {
      row = cloneBody(*producer->calledComputation("calls"), *producer, nullptr);
    } else {
      std::vector<HloInstruction*> ops;
      for (HloInstruction* op : producer->operands()) ops.push_back(parameterFor(op));
      row = body->addInstruction(producer->cloneWithOperands(names_->fresh(producer->name()), ops));
    }
    HloInstruction* result = cloneBody(*consumer->calledComputation("calls"), *consumer, row);
    hlo::Shape shape = consumer->shape();
    if (keepRow) {
      shape = hlo::Shape::tuple({producer->shape(), consumer->shape()});
      body->setRoot(body->addInstruction(
          HloInstruction::create(HloOpcode::Tuple, names_->fresh("tuple"), shape, {row, result})));
    } else {
      body->setRoot(result);
    }

    HloComputation* bodyPtr = module_->addComputationBefore(std::move(body), &comp);
    std::string name = consumer->name();
    if (!keepRow) consumer->setName(names_->fresh(name + ".merged"));
    auto fusion = HloInstruction::create(HloOpcode::Fusion,
                                         keepRow ? names_->fresh("fusion.row_reduce_pair") : name,
                                         shape, operands);
    fusion->attrs().metadata = consumer->attrs().metadata;
    fusion->attrs().calls.push_back(hlo::CalledComputations{"calls", {bodyPtr}, false});
    if (const hlo::NamedAttr* kind = consumer->findGeneric("kind"))
      fusion->setGeneric("kind", kind->value);
    HloInstruction* f = comp.addInstruction(std::move(fusion));
    f->setSourceLine(consumer->sourceLine());
    // Each replaced instruction's users read its element (keepRow) or the fusion.
    if (keepRow) {
      replaceByTupleElement(comp, consumer, f, 1, *names_);
      replaceByTupleElement(comp, producer, f, 0, *names_);
    } else {
      consumer->replaceAllUsesWith(f);
      consumer->setOperands({});
      comp.removeInstruction(consumer);
      producer->setOperands({});
      comp.removeInstruction(producer);
    }
  }

  hlo::HloModule* module_ = nullptr;
  std::unique_ptr<NameTable> names_;
};

}  // namespace

std::unique_ptr<HloPass> createRowReduceFusionPass() {
  return std::make_unique<RowReduceFusionPass>();
}

}  // namespace tpusim::passes
