// Dot epilogues with several outputs (DotEpilogueOutputs.h).
#include "compiler/passes/DotEpilogueOutputs.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/passes/FusionBuilder.h"
#include "compiler/passes/FusionRules.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

bool defaultLayout(const hlo::Shape& s) {
  auto m2m = s.minorToMajorOrDefault();
  for (size_t i = 0; i < m2m.size(); ++i)
    if (m2m[i] != static_cast<int64_t>(m2m.size() - 1 - i)) return false;
  return true;
}

// The dot of a plain dot kernel: a dot, or a fusion whose root is its dot
// (or a view of it adding or dropping unit dims: [1, M, N] as [M, N]).
const HloInstruction* dotOf(const HloInstruction* i) {
  if (!i->shape().isArray() || !hlo::isFloatingType(i->shape().type)) return nullptr;
  if (i->opcode() == HloOpcode::Dot) return i->operandCount() == 2 ? i : nullptr;
  if (i->opcode() != HloOpcode::Fusion) return nullptr;
  const HloComputation* body = i->calledComputation("calls");
  if (!body || !body->root()) return nullptr;
  const HloInstruction* d = body->root();
  if (isUnitDimView(*d)) d = d->operand(0);
  if (d->opcode() != HloOpcode::Dot || d->operandCount() != 2) return nullptr;
  int dots = 0;
  for (const auto& x : body->instructions()) dots += x->opcode() == HloOpcode::Dot;
  return dots == 1 ? d : nullptr;
}

// Is the dot's LHS laid out [batch, rows, contracting]? A transposed LHS (a
// weight gradient's x^T, transposed block by block in the kernel) is not
// taken: its blocks are chosen for the transpose unit.
bool lhsRowMajor(const HloInstruction* kernel) {
  const HloInstruction* d = dotOf(kernel);
  const int64_t r = d->operand(0)->shape().rank();
  return d->attrs().dot.lhsContracting == std::vector<int64_t>{r - 1};
}

// A dot whose result is smaller than its weights (a decode's few rows) waits
// for its weights: what the merge saves (its result's bytes) is small there,
// and the sibling-dot rule prices such pairs apart (SiblingDots.h).
bool weightBound(const HloInstruction* kernel) {
  const HloInstruction* d = dotOf(kernel);
  return d->shape().elementCount() < d->operand(1)->shape().elementCount();
}

// Do `a` in kernel `ka` and `b` in kernel `kb` compute the same value: the
// same outer value, or the same op (shape, attributes) of such operands (two
// dot kernels' copies of one LHS prologue, a norm's scale)?
bool sameValue(const HloInstruction* ka, const HloInstruction* a, const HloInstruction* kb,
               const HloInstruction* b, int depth = 0) {
  auto outer = [](const HloInstruction* k, const HloInstruction* i) -> const HloInstruction* {
    if (k->opcode() != HloOpcode::Fusion) return i;
    return i->opcode() == HloOpcode::Parameter ? k->operand(i->attrs().parameterNumber) : nullptr;
  };
  const HloInstruction* oa = outer(ka, a);
  const HloInstruction* ob = outer(kb, b);
  if (oa || ob) return oa == ob;
  if (depth > 16 || a->opcode() != b->opcode() || !(a->shape() == b->shape()) ||
      a->operandCount() != b->operandCount() || a->hasSideEffect() ||
      a->dimensions() != b->dimensions())
    return false;
  // Ops whose attributes are their dimensions at most.
  const HloOpcode op = a->opcode();
  if (!(hlo::isElementwise(op) && op != HloOpcode::Compare) && op != HloOpcode::Broadcast &&
      op != HloOpcode::Reshape && op != HloOpcode::Bitcast && op != HloOpcode::Transpose)
    return false;
  for (int64_t k = 0; k < a->operandCount(); ++k)
    if (!sameValue(ka, a->operand(k), kb, b->operand(k), depth + 1)) return false;
  return true;
}

// Same element count and last dim, default layouts: a bitcast between them
// that regroups the leading dims ([1, B * S, N] <-> [B, S, N]).
bool sameRows(const hlo::Shape& a, const hlo::Shape& b) {
  return a.isArray() && b.isArray() && a.rank() > 0 && b.rank() > 0 &&
         a.elementCount() == b.elementCount() && a.dims.back() == b.dims.back() &&
         defaultLayout(a) && defaultLayout(b);
}

// One candidate: element-wise kernel `c` over the results of `dots`.
struct Group {
  HloInstruction* consumer = nullptr;
  std::vector<HloInstruction*> dots;  // the dot kernels (outer)
  hlo::Shape space;                   // the dots' shape: the merged kernel's
  std::vector<bool> kept;             // per dot: still read by other kernels
};

class Merger {
 public:
  Merger(hlo::HloModule& module, HloComputation& comp, NameTable& names)
      : module_(module), comp_(comp), names_(names) {}

  bool run() {
    bool changed = false;
    for (HloInstruction* c : comp_.postOrder()) {
      if (gone_.count(c)) continue;
      Group grp;
      if (!candidate(c, &grp)) continue;
      merge(grp);
      changed = true;
    }
    return changed;
  }

 private:
  // The body instructions of consumer `c` (the op itself when unfused) and
  // the leaf -> outer value map.
  struct Body {
    std::vector<const HloInstruction*> insts;  // post order, leaves excluded
    std::vector<const HloInstruction*> roots;  // the outputs
    std::unordered_map<const HloInstruction*, HloInstruction*> outer;  // leaf -> outer value
  };
  static bool bodyOf(HloInstruction* c, Body* b) {
    if (c->opcode() != HloOpcode::Fusion) {
      if (!hlo::isElementwise(c->opcode()) || !c->shape().isArray() || c->operandCount() == 0)
        return false;
      for (HloInstruction* o : c->operands()) b->outer[o] = o;
      b->insts = {c};
      b->roots = {c};
      return true;
    }
    const HloComputation* body = c->calledComputation("calls");
    if (!body || !body->root() || classifyFusion(*body) != FusionKind::Loop) return false;
    for (HloInstruction* i : body->postOrder()) {
      if (i->opcode() == HloOpcode::Parameter) {
        b->outer[i] = c->operand(i->attrs().parameterNumber);
        continue;
      }
      if (i == body->root() && i->opcode() == HloOpcode::Tuple) continue;
      b->insts.push_back(i);
    }
    if (body->root()->opcode() == HloOpcode::Tuple) {
      for (const HloInstruction* e : body->root()->operands()) b->roots.push_back(e);
    } else {
      b->roots = {body->root()};
    }
    return true;
  }

  // The dot kernel `x` is, or views (a regrouping bitcast of its result).
  static HloInstruction* dotKernelRead(HloInstruction* x) {
    if (dotOf(x)) return x;
    if ((x->opcode() == HloOpcode::Reshape || x->opcode() == HloOpcode::Bitcast) &&
        x->operandCount() == 1 && dotOf(x->operand(0)) &&
        sameRows(x->shape(), x->operand(0)->shape()))
      return x->operand(0);
    return nullptr;
  }

  // The chosen dot kernel that x is or views, else null.
  static HloInstruction* isDotRead(const std::vector<HloInstruction*>& dots, HloInstruction* x) {
    HloInstruction* d = dotKernelRead(x);
    return d && std::find(dots.begin(), dots.end(), d) != dots.end() ? d : nullptr;
  }

  bool candidate(HloInstruction* c, Group* grp) {
    Body b;
    if (!bodyOf(c, &b) || b.roots.empty()) return false;
    const hlo::Shape& outShape = b.roots[0]->shape();
    for (const HloInstruction* r : b.roots)
      if (!r->shape().isArray() || r->shape().dims != outShape.dims) return false;
    // The dot kernels it reads (by name: the leaf map is unordered).
    std::vector<HloInstruction*> reads;
    for (auto& [leaf, x] : b.outer)
      if (HloInstruction* d = dotKernelRead(x))
        if (sameRows(d->shape(), outShape) && dotOf(d)->shape().rank() == 3 && lhsRowMajor(d) &&
            !weightBound(d) && std::find(reads.begin(), reads.end(), d) == reads.end())
          reads.push_back(d);
    std::sort(reads.begin(), reads.end(), [](const HloInstruction* x, const HloInstruction* y) {
      return x->name() < y->name();
    });
    // Does another kernel read dot kernel d too (its result is then an output)?
    auto keptBy = [&](const HloInstruction* d) {
      bool kept = d == comp_.root();
      for (const HloInstruction* u : d->users()) {
        if (u == c) continue;
        bool viewReadByC = std::any_of(b.outer.begin(), b.outer.end(),
                                       [&](const auto& kv) { return kv.second == u; });
        if (!viewReadByC || u->userCount() > 1 || u == comp_.root()) kept = true;
      }
      return kept;
    };
    // Two siblings (one LHS value, the same dims and shapes: DotLowering's
    // findDots) join together; else one dot, one that only c reads first.
    auto siblings = [&](HloInstruction* x, HloInstruction* y) {
      const HloInstruction* dx = dotOf(x);
      const HloInstruction* dy = dotOf(y);
      const auto& a = dx->attrs().dot;
      const auto& e = dy->attrs().dot;
      return sameValue(x, dx->operand(0), y, dy->operand(0)) && dx->shape() == dy->shape() &&
             dx->operand(1)->shape() == dy->operand(1)->shape() && a.lhsBatch == e.lhsBatch &&
             a.rhsBatch == e.rhsBatch && a.lhsContracting == e.lhsContracting &&
             a.rhsContracting == e.rhsContracting && x->shape() == y->shape() && !reaches(x, y) &&
             !reaches(y, x);
    };
    std::vector<HloInstruction*> dots;
    for (size_t i = 0; i < reads.size() && dots.empty(); ++i)
      for (size_t j = i + 1; j < reads.size() && dots.empty(); ++j)
        if (siblings(reads[i], reads[j])) dots = {reads[i], reads[j]};
    for (HloInstruction* d : reads)
      if (dots.empty() && !keptBy(d)) dots = {d};
    if (dots.empty() && !reads.empty()) dots = {reads[0]};
    if (dots.empty()) return false;
    // The element-wise work, in the dots' shape.
    const int64_t last = outShape.rank() - 1;
    for (const HloInstruction* i : b.insts) {
      if (!i->shape().isArray() || !hlo::isFloatingType(i->shape().type)) return false;
      if (i->opcode() == HloOpcode::Broadcast) {
        const hlo::Shape& os = i->operand(0)->shape();
        const bool row = i->dimensions() == std::vector<int64_t>{last} && os.rank() == 1;
        if (!os.isScalar() && !row) return false;
        continue;
      }
      if (i->opcode() == HloOpcode::Constant) {
        if (!i->shape().isScalar()) return false;
        continue;
      }
      // A view adding or dropping unit dims is the value itself in the dots' shape.
      if (isUnitDimView(*i) && sameRows(i->shape(), i->operand(0)->shape())) continue;
      if (!hlo::isElementwise(i->opcode()) || i->opcode() == HloOpcode::Compare ||
          i->opcode() == HloOpcode::Select || i->shape().dims != outShape.dims)
        return false;
    }
    // Its other operands: of its shape (viewed), scalars or rows; none
    // computed from the dots.
    for (auto& [leaf, x] : b.outer) {
      if (isDotRead(dots, x)) continue;
      const hlo::Shape& s = x->shape();
      if (!s.isArray()) return false;
      if (!sameRows(s, outShape) && !s.isScalar() && s.rank() != 1) return false;
      for (HloInstruction* d : dots)
        if (x == d || reaches(x, d)) return false;
    }
    grp->consumer = c;
    grp->dots = dots;
    grp->space = dots[0]->shape();
    for (HloInstruction* d : dots) grp->kept.push_back(keptBy(d));
    // One output and no dot result kept: the fusion pass's own epilogue
    // decision (it refused this one for a reason of its own).
    return b.roots.size() > 1 ||
           std::find(grp->kept.begin(), grp->kept.end(), true) != grp->kept.end();
  }

  void merge(const Group& grp) {
    HloInstruction* c = grp.consumer;
    Body b;
    bodyOf(c, &b);
    auto body =
        std::make_unique<HloComputation>(module_.uniqueComputationName("fused_dot_outputs"));
    BodyParameters params(*body, names_);
    auto parameterFor = [&](HloInstruction* outer) { return params.of(outer); };
    // The dots, their operand prologues copied.
    std::unordered_map<const HloInstruction*, HloInstruction*> dotIn;  // outer kernel -> body dot
    for (HloInstruction* d : grp.dots) dotIn[d] = inlineMember(*body, *d, parameterFor, names_);
    // The element-wise work in the dots' shape.
    const hlo::Shape& space = grp.space;
    auto inSpace = [&](hlo::PrimitiveType t) {
      hlo::Shape s = hlo::Shape::array(t, space.dims);
      s.layout = space.layout;
      return s;
    };
    std::unordered_map<const HloInstruction*, HloInstruction*> made;
    auto leafValue = [&](const HloInstruction* leaf) -> HloInstruction* {
      HloInstruction* x = b.outer.at(leaf);
      if (HloInstruction* d = isDotRead(grp.dots, x)) return dotIn.at(d);
      if (x->shape().rank() > 1 && x->shape().dims != space.dims) {
        auto v = views_.find(x);
        if (v == views_.end()) {
          HloInstruction* view = comp_.addInstruction(
              HloInstruction::create(HloOpcode::Reshape, names_.fresh(x->name() + ".view"),
                                     inSpace(x->shape().type), {x}));
          v = views_.emplace(x, view).first;
        }
        return parameterFor(v->second);
      }
      return parameterFor(x);
    };
    const int64_t spaceLast = space.rank() - 1;
    for (const HloInstruction* i : b.insts) {
      std::vector<HloInstruction*> ops;
      for (const HloInstruction* o : i->operands())
        ops.push_back(b.outer.count(o) ? leafValue(o) : made.at(o));
      if (isUnitDimView(*i) && i->opcode() != HloOpcode::Broadcast) {
        made[i] = ops[0];
        continue;
      }
      auto n = i->cloneWithOperands(names_.fresh(i->name()), ops);
      if (i->opcode() == HloOpcode::Constant) {
        made[i] = body->addInstruction(std::move(n));
        continue;
      }
      n->setShape(inSpace(i->shape().type));
      if (i->opcode() == HloOpcode::Broadcast && !i->dimensions().empty())
        n->attrs().dimensions = {spaceLast};
      made[i] = body->addInstruction(std::move(n));
    }
    std::vector<HloInstruction*> roots;
    std::vector<hlo::Shape> shapes;
    for (const HloInstruction* r : b.roots) {
      HloInstruction* v = b.outer.count(r) ? leafValue(r) : made.at(r);
      roots.push_back(v);
      shapes.push_back(v->shape());
    }
    for (size_t k = 0; k < grp.dots.size(); ++k)
      if (grp.kept[k]) {
        roots.push_back(dotIn.at(grp.dots[k]));
        shapes.push_back(roots.back()->shape());
      }
    hlo::Shape tupleShape = hlo::Shape::tuple(shapes);
    body->setRoot(body->addInstruction(
        HloInstruction::create(HloOpcode::Tuple, names_.fresh("tuple"), tupleShape, roots)));
    HloComputation* bodyPtr = module_.addComputationBefore(std::move(body), &comp_);
    auto fusion = HloInstruction::create(HloOpcode::Fusion, names_.fresh("fusion.dot_outputs"),
                                         tupleShape, params.operands());
    fusion->attrs().metadata = grp.dots[0]->attrs().metadata;
    fusion->attrs().calls.push_back(hlo::CalledComputations{"calls", {bodyPtr}, false});
    hlo::AttrValue kind;
    kind.kind = hlo::AttrValue::Kind::Ident;
    kind.s = "kOutput";
    fusion->setGeneric("kind", kind);
    HloInstruction* f = comp_.addInstruction(std::move(fusion));
    f->setSourceLine(grp.dots[0]->sourceLine());
    auto element = [&](size_t k, const std::string& name) {
      return addTupleElement(comp_, f, static_cast<int64_t>(k), names_.fresh(name), shapes[k]);
    };
    // The consumer's outputs, back in its shape.
    std::vector<HloInstruction*> results;
    for (size_t k = 0; k < b.roots.size(); ++k) {
      const hlo::Shape& want = b.roots[k]->shape();
      HloInstruction* v = element(k, c->name() + ".out");
      if (want.dims != v->shape().dims) {
        v = comp_.addInstruction(HloInstruction::create(
            HloOpcode::Reshape, names_.fresh(c->name() + ".reshape"),
            c->shape().isTuple() ? c->shape().tupleShapes[k] : c->shape(), {v}));
      }
      v->attrs().metadata = c->attrs().metadata;
      results.push_back(v);
    }
    if (c->shape().isTuple()) {
      for (HloInstruction* u : std::vector<HloInstruction*>(c->users())) {
        if (u->opcode() != HloOpcode::GetTupleElement || !u->tupleIndex()) continue;
        u->replaceAllUsesWith(results.at(static_cast<size_t>(*u->tupleIndex())));
        u->setOperands({});
        gone_.insert(u);
        comp_.removeInstruction(u);
      }
    } else {
      c->replaceAllUsesWith(results[0]);
    }
    size_t next = b.roots.size();
    for (size_t k = 0; k < grp.dots.size(); ++k) {
      HloInstruction* d = grp.dots[k];
      if (grp.kept[k]) d->replaceAllUsesWith(element(next++, d->name() + ".kept"));
    }
    // The consumer and the dot kernels are gone (a dot's views that only the
    // consumer read are dead; dce removes them).
    if (c->userCount() == 0 && comp_.root() != c) {
      c->setOperands({});
      gone_.insert(c);
      comp_.removeInstruction(c);
    }
    for (HloInstruction* d : grp.dots) {
      for (HloInstruction* u : std::vector<HloInstruction*>(d->users()))
        if (u->userCount() == 0 && u != comp_.root()) {
          u->setOperands({});
          gone_.insert(u);
          comp_.removeInstruction(u);
        }
      if (d->userCount() == 0 && comp_.root() != d) {
        d->setOperands({});
        gone_.insert(d);
        comp_.removeInstruction(d);
      }
    }
  }

  hlo::HloModule& module_;
  HloComputation& comp_;
  NameTable& names_;
  std::unordered_set<const HloInstruction*> gone_;
  std::unordered_map<const HloInstruction*, HloInstruction*> views_;
};

}  // namespace

bool mergeDotEpilogueOutputs(hlo::HloModule& module, hlo::HloComputation& comp, NameTable& names) {
  return Merger(module, comp, names).run();
}

}  // namespace tpusim::passes
