// kOutput fusions and unfused dots, on the MXU path of kernels/lib/Matmul.cpp:
// grid (batch, M / bm, N / bn, K / bk) with K innermost ("arbitrary"), an
// f32 / s32 VMEM accumulator zeroed at the first K step and `acc += dot(a, b)`
// (one accumulating MXU matmul) at every step (one K block: `acc = dot(a, b)`,
// written in place without the zero fill); at the last K step the
// element-wise epilogue runs on the accumulator and stores the output block.
// The operands are computed per block from their prologue (converts,
// broadcasts, element-wise producers) and cast to bf16 (f32 dots: XLA's
// DEFAULT precision on TPU, bf16 multiplies with f32 accumulation) or s8
// (s8 x s8 -> s32). A ragged last K block is read clipped to its valid part. An
// RHS given as [batch, N, K] (or as a transpose of such a value, which
// dot-canonicalize makes of Q.K^T) uses the MXU's transposed weight load; an
// LHS given as [batch, K, M] (a weight gradient's x^T) goes through the
// transpose unit block by block inside the kernel.
// Sibling dots (compiler/passes/SiblingDots.h: one LHS value, RHS operands of
// one shape) run in one kernel: the LHS block is traced once, each step runs
// every dot into its own accumulator, and the epilogue reads each result
// rounded to its dot's type.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/fusion/FusionLoweringInternal.h"

namespace tpusim::lower::detail {

using hlo::HloOpcode;

namespace {
constexpr int64_t kMaxUnrolledEpilogue = 512 * 1024;  // elements of a pipelined M block
// Elements of a block whose own epilogue is traced unrolled after its dots
// (below): 1024 f32 tiles, the SwiGLU backward's 512 x 2048 (~40k
// instructions in one basic block).
constexpr int64_t kMaxUnrolledOwnEpilogue = 1024 * 1024;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kBatchedDotDepth = 2048;
// The largest batch block chosen for small entries, and the MXU pushes its
// unrolled entries may trace (one entry of 256 x 256 x 128 is 32 pushes).
// 32: a 7B KV cache's 32 heads, a whole row of the cache (below).
constexpr int64_t kMaxBatchBlock = 32, kMaxBatchedPushes = 1024;

enum Role : char { kBatch = 'B', kFree = 'F', kContract = 'K' };

std::vector<char> rolesOf(int64_t rank, const std::vector<int64_t>& batch,
                          const std::vector<int64_t>& contract) {
  std::vector<char> r(static_cast<size_t>(rank), kFree);
  for (int64_t d : batch) r[static_cast<size_t>(d)] = kBatch;
  for (int64_t d : contract) r[static_cast<size_t>(d)] = kContract;
  return r;
}

// Are the roles in the order `pattern` (e.g. "BFK"), each role's dims listed
// in increasing order in `lists` (so paired dims keep their pairing)?
bool inOrder(const std::vector<char>& roles, const std::string& pattern) {
  size_t p = 0;
  for (char c : roles) {
    while (p < pattern.size() && pattern[p] != c) ++p;
    if (p == pattern.size()) return false;
  }
  return true;
}

// Is `i` a kernel input seen through reshapes and bitcasts only? Such an
// operand is read from its input block as it is (no VMEM temporary).
bool isInputView(const ComputeGraph& g, const HloInstruction* i) {
  while (!g.isLeaf(i) && (i->opcode() == HloOpcode::Reshape || i->opcode() == HloOpcode::Bitcast))
    i = i->operand(0);
  return g.isLeaf(i);
}

// An epilogue `dot + x` (or `x + dot`) of bf16 values, x an input of the
// root's shape or a left fold `(... + input) + input` of them: the matmul adds
// x to each tile as it pops it (llo matmul's sum epilogue), bit for bit the
// rounding of the two-pass form.
bool isBf16Add(const HloInstruction* i) {
  return i->opcode() == HloOpcode::Add && i->shape().type == hlo::PrimitiveType::BF16;
}
bool sumOfInputs(const ComputeGraph& g, const HloInstruction* x, const HloInstruction* root) {
  if (x->shape().type != hlo::PrimitiveType::BF16 || x->shape().dims != root->shape().dims)
    return false;
  if (isInputView(g, x)) return true;
  return !g.isLeaf(x) && isBf16Add(x) && isInputView(g, x->operand(1)) &&
         x->operand(1)->shape().dims == root->shape().dims && sumOfInputs(g, x->operand(0), root);
}
bool sumEpilogueOnPop(const ComputeGraph& g, const HloInstruction* root,
                      const HloInstruction* hero) {
  if (g.isLeaf(root) || !isBf16Add(root) || hero->shape().type != hlo::PrimitiveType::BF16)
    return false;
  const HloInstruction *a = root->operand(0), *b = root->operand(1);
  return (a == hero && b != hero && sumOfInputs(g, b, root)) ||
         (b == hero && a != hero && sumOfInputs(g, a, root));
}

// The reshape splitting the dot's result into heads of one lane tile
// ([.., H * 128] -> [.., H, 128], passes' isDotLaneSplit) when it is the
// hero's only user in the kernel, else null: the kernel's epilogue then works
// on heads (a head epilogue: RoPE of a q / k projection).
const HloInstruction* headSplitOf(const ComputeGraph& g, const HloInstruction* hero) {
  if (g.root == hero || hero->userCount() != 1) return nullptr;
  const HloInstruction* s = hero->users().front();
  if (g.isLeaf(s) || (s->opcode() != HloOpcode::Reshape && s->opcode() != HloOpcode::Bitcast))
    return nullptr;
  const std::vector<int64_t>& from = hero->shape().dims;
  const std::vector<int64_t>& to = s->shape().dims;
  if (from.empty() || to.size() != from.size() + 1 || to.back() != 128 ||
      to[to.size() - 2] * 128 != from.back() ||
      !std::equal(from.begin(), from.end() - 1, to.begin()))
    return nullptr;
  return s;
}

bool increasing(const std::vector<int64_t>& v) {
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] <= v[i - 1]) return false;
  return true;
}

// The space dims of each role, in the order of `pattern`.
std::vector<std::vector<int>> groupsOf(const std::vector<char>& roles, const std::string& pattern) {
  std::vector<std::vector<int>> g(pattern.size());
  for (size_t d = 0; d < roles.size(); ++d)
    g[pattern.find(roles[d])].push_back(static_cast<int>(d));
  return g;
}

std::vector<const HloInstruction*> findDots(const ComputeGraph& g) {
  std::vector<const HloInstruction*> stack{g.root}, found;
  std::set<const HloInstruction*> seen;
  while (!stack.empty()) {
    const HloInstruction* i = stack.back();
    stack.pop_back();
    if (!seen.insert(i).second || g.isLeaf(i)) continue;
    if (i->opcode() == HloOpcode::Dot) found.push_back(i);
    for (const HloInstruction* o : i->operands()) stack.push_back(o);
  }
  // Sibling dots (compiler/passes/SiblingDots.h) share one LHS value and
  // differ only in their RHS: one LHS block feeds every one of them.
  // In the body's instruction order (the RHS inputs follow it).
  if (found.size() > 1 && g.root->parent()) {
    std::vector<const HloInstruction*> ordered;
    for (const auto& i : g.root->parent()->instructions())
      if (std::find(found.begin(), found.end(), i.get()) != found.end()) ordered.push_back(i.get());
    if (ordered.size() == found.size()) found = ordered;
  }
  for (size_t k = 1; k < found.size(); ++k) {
    const HloInstruction* a = found[0];
    const HloInstruction* b = found[k];
    const auto& da = a->attrs().dot;
    const auto& db = b->attrs().dot;
    if (a->operand(0) != b->operand(0) || !(a->shape() == b->shape()) ||
        !(a->operand(1)->shape() == b->operand(1)->shape()) || da.lhsBatch != db.lhsBatch ||
        da.rhsBatch != db.rhsBatch || da.lhsContracting != db.lhsContracting ||
        da.rhsContracting != db.rhsContracting)
      g.fail(*b, fmt::format("a kernel holds one dot, or sibling dots of one LHS value with the "
                             "same shapes and dimensions (not so %{} and %{})",
                             a->name(), b->name()));
  }
  return found;
}

const HloInstruction* findDot(const ComputeGraph& g) {
  std::vector<const HloInstruction*> found = findDots(g);
  return found.empty() ? nullptr : found[0];
}

// The other operand of a multiply by a broadcast (a dequantization scale), or null.
const HloInstruction* scaledOperand(const ComputeGraph& g, const HloInstruction* i) {
  if (g.isLeaf(i) || i->opcode() != HloOpcode::Multiply) return nullptr;
  for (int q = 0; q < 2; ++q)
    if (i->operand(q)->opcode() == HloOpcode::Broadcast) return i->operand(1 - q);
  return nullptr;
}

// Converted s8 weights times a broadcast scale per output column (the last
// dim), in bf16: the kernel's matmul reads the s8 block and the scale row as
// they are and scales each widened weight in registers (Emit.h,
// materializeDotRhs).
bool scaledS8Weights(const ComputeGraph& g, const HloInstruction* i) {
  while (!g.isLeaf(i) && (i->opcode() == HloOpcode::Reshape || i->opcode() == HloOpcode::Bitcast))
    i = i->operand(0);
  const HloInstruction* c = scaledOperand(g, i);
  if (!c || i->shape().type != hlo::PrimitiveType::BF16 || c->opcode() != HloOpcode::Convert ||
      !isInputView(g, c->operand(0)) ||
      dslType(g, *c->operand(0), c->operand(0)->shape().type) != dsl::S8)
    return false;
  const HloInstruction* b = i->operand(i->operand(0) == c ? 1 : 0);
  return isInputView(g, b->operand(0)) && b->operand(0)->shape().type == hlo::PrimitiveType::BF16 &&
         b->dimensions() == std::vector<int64_t>{i->shape().rank() - 1};
}

// HBM bytes per element of a dot operand: a convert or layout change of one
// leaf (int8 weights converted in the kernel), also scaled by a broadcast
// (dequantized), reads the leaf's elements.
int hbmBytesOf(const ComputeGraph& g, const HloInstruction* operand, dsl::DType operandType) {
  const HloInstruction* i = operand;
  while (!g.isLeaf(i)) {
    if (const HloInstruction* c = scaledOperand(g, i)) {
      i = c;
      continue;
    }
    if (i->operandCount() != 1 ||
        (i->opcode() != HloOpcode::Convert && i->opcode() != HloOpcode::Reshape &&
         i->opcode() != HloOpcode::Bitcast && i->opcode() != HloOpcode::Copy))
      break;
    i = i->operand(0);
  }
  if (!g.isLeaf(i)) return isa::dtypeBytes(operandType);
  return isa::dtypeBytes(memoryType(dslType(g, *i, i->shape().type)));
}

}  // namespace

bool hasDot(const ComputeGraph& g) { return findDot(g) != nullptr; }

LoweredKernel lowerDot(const ComputeGraph& g, const TilingTarget& t) {
  const std::vector<const HloInstruction*> heroes = findDots(g);
  if (heroes.empty()) g.fail(*g.root, "internal: no dot");
  const HloInstruction* hero = heroes[0];
  // Sibling dots: one LHS, an RHS each (checked alike by findDots).
  const size_t nRhs = heroes.size();
  const hlo::DotDimensionNumbers& dn = hero->attrs().dot;
  const HloInstruction* lhs = hero->operand(0);
  const HloInstruction* rhs = hero->operand(1);
  const int64_t lr = lhs->shape().rank(), rr = rhs->shape().rank();
  if (!increasing(dn.lhsBatch) || !increasing(dn.rhsBatch) || !increasing(dn.lhsContracting) ||
      !increasing(dn.rhsContracting))
    g.fail(*hero,
           "batch and contracting dimensions must be listed in increasing order "
           "(run dot-canonicalize)");
  std::vector<char> lroles = rolesOf(lr, dn.lhsBatch, dn.lhsContracting);
  // The LHS: [batch, free, contracting], or [batch, contracting, free] (a
  // transposed LHS: each block goes through the transpose unit in the kernel).
  const bool lhsTransposed = !inOrder(lroles, "BFK") && inOrder(lroles, "BKF");
  if (!inOrder(lroles, "BFK") && !lhsTransposed)
    g.fail(*hero,
           "the LHS is not laid out [batch, free, contracting] or [batch, contracting, free] "
           "(run dot-canonicalize)");

  // The RHS: [batch, contracting, free], [batch, free, contracting] (transposed
  // weights), or a fused transpose of the latter.
  struct RhsView {
    const HloInstruction* root;
    std::vector<char> roles;
    bool transposed;
  };
  auto rhsView = [&](const HloInstruction* h) {
    const HloInstruction* r = h->operand(1);
    RhsView v{r, rolesOf(rr, dn.rhsBatch, dn.rhsContracting), false};
    if (inOrder(v.roles, "BKF")) return v;
    if (inOrder(v.roles, "BFK")) {
      v.transposed = true;
    } else if (!g.isLeaf(r) && r->opcode() == HloOpcode::Transpose) {
      const auto& perm = r->dimensions();
      std::vector<char> xroles(static_cast<size_t>(rr), kFree);
      for (size_t i = 0; i < perm.size(); ++i) xroles[static_cast<size_t>(perm[i])] = v.roles[i];
      // The transpose must keep the batch and contracting dims in their order.
      std::vector<int64_t> xb, xk;
      for (size_t i = 0; i < perm.size(); ++i) {
        if (v.roles[i] == kBatch) xb.push_back(perm[i]);
        if (v.roles[i] == kContract) xk.push_back(perm[i]);
      }
      if (inOrder(xroles, "BFK") && increasing(xb) && increasing(xk)) {
        v.root = r->operand(0);
        v.roles = xroles;
        v.transposed = true;
      }
    }
    if (!v.transposed)
      g.fail(*h,
             "the RHS is not laid out [batch, contracting, free] or [batch, free, "
             "contracting] (run dot-canonicalize)");
    return v;
  };
  std::vector<RhsView> rhsViews;
  for (const HloInstruction* h : heroes) {
    rhsViews.push_back(rhsView(h));
    if (rhsViews.back().transposed != rhsViews[0].transposed)
      g.fail(*h, "sibling dots' RHS operands are laid out differently (one transposed)");
  }
  const HloInstruction* rhsRoot = rhsViews[0].root;
  const std::vector<char> rroles = rhsViews[0].roles;
  const bool transposed = rhsViews[0].transposed;

  // Element types: bf16 x bf16 (f32, f16 and bf16 operands) -> f32, s8 x s8 -> s32.
  dsl::DType lt = dslType(g, *lhs, lhs->shape().type), rt = dslType(g, *rhs, rhs->shape().type);
  dsl::DType ot = dslType(g, *hero, hero->shape().type);
  auto isF = [](dsl::DType d) { return d == dsl::F32 || d == dsl::BF16 || d == dsl::F16; };
  dsl::DType mxType, accType;
  if (lt == dsl::S8 && rt == dsl::S8 && ot == dsl::S32) {
    mxType = dsl::S8;
    accType = dsl::S32;
  } else if (isF(lt) && isF(rt) && isF(ot)) {
    mxType = dsl::BF16;
    accType = dsl::F32;
  } else {
    g.fail(*hero, fmt::format("dot of {} x {} -> {}: the MXU multiplies bf16 (f32 and f16 "
                              "operands are rounded to bf16) or s8 x s8 -> s32",
                              isa::dtypeName(lt), isa::dtypeName(rt), isa::dtypeName(ot)));
  }

  // Regions: LHS [B, M, K], RHS [B, K, N] or [B, N, K], output [B, M, N].
  auto lhsR = std::make_shared<Region>(g, lhs->shape().dims);
  lhsR->analyze(lhs, identity(lr));
  lhsR->formGroupAxes(groupsOf(lroles, lhsTransposed ? "BKF" : "BFK"),
                      fmt::format("the LHS of %{}", hero->name()));
  const std::string rpat = transposed ? "BFK" : "BKF";
  std::vector<std::shared_ptr<Region>> rhsRs;
  for (size_t k = 0; k < nRhs; ++k) {
    const HloInstruction* r = rhsViews[k].root;
    auto region = std::make_shared<Region>(g, r->shape().dims);
    region->analyze(r, identity(r->shape().rank()));
    region->formGroupAxes(groupsOf(rhsViews[k].roles, rpat),
                          fmt::format("the RHS of %{}", heroes[k]->name()));
    rhsRs.push_back(region);
  }
  std::shared_ptr<Region> rhsR = rhsRs[0];

  // Several outputs (a tuple root: the epilogue's results of one shape, and
  // dot results kept for other readers, MultiOutputFusion.h): each is stored
  // from the same epilogue walk. `root` is the first.
  std::vector<const HloInstruction*> outRoots;
  if (g.root->opcode() == HloOpcode::Tuple && !g.isLeaf(g.root)) {
    for (const HloInstruction* e : g.root->operands()) {
      if (e->shape().dims != g.root->operand(0)->shape().dims)
        g.fail(*e, "the outputs of a dot kernel with several outputs must have one shape");
      outRoots.push_back(e);
    }
  } else {
    outRoots.push_back(g.root);
  }
  const size_t nOut = outRoots.size();
  const HloInstruction* root = outRoots[0];
  const Embedding rootEmb = identity(root->shape().rank());
  auto outR = std::make_shared<Region>(g, root->shape().dims);
  // A head epilogue stops at the split: its dims are the hero's, the last
  // one as [heads, 128].
  const HloInstruction* split = nRhs == 1 && nOut == 1 ? headSplitOf(g, hero) : nullptr;
  if (split) outR->allowHeadLanes();
  for (const HloInstruction* r : outRoots)
    outR->analyze(r, rootEmb, split ? std::vector<const HloInstruction*>{split} : heroes);
  if (!outR->sawStop()) g.fail(*root, "internal: the dot is not reached from the root");
  // The hero's dims are [batch..., lhs free..., rhs free...] (XLA's order).
  const int64_t nb = static_cast<int64_t>(dn.lhsBatch.size());
  const int64_t nm = lr - nb - static_cast<int64_t>(dn.lhsContracting.size());
  std::vector<std::vector<int>> outGroups(3);
  const Embedding& he = outR->stopEmbedding();
  std::set<int> heroDims;
  const int64_t stopRank = split ? split->shape().rank() : hero->shape().rank();
  for (int64_t j = 0; j < stopRank; ++j) {
    int sd = he[static_cast<size_t>(j)];
    if (sd < 0) continue;
    heroDims.insert(sd);
    outGroups[j < nb ? 0 : (j < nb + nm ? 1 : 2)].push_back(sd);
  }
  for (int64_t d = 0; d < root->shape().rank(); ++d)
    if (root->shape().dims[static_cast<size_t>(d)] > 1 && !heroDims.count(static_cast<int>(d)))
      g.fail(*root, fmt::format("the epilogue broadcasts the result of %{} (not an element-wise "
                                "epilogue)",
                                hero->name()));
  for (size_t k = 0; k + 1 < outGroups.size(); ++k)
    if (!outGroups[k].empty() && !outGroups[k + 1].empty() &&
        outGroups[k].back() > outGroups[k + 1].front())
      g.fail(*root, fmt::format("the epilogue reorders the dimensions of %{}", hero->name()));
  outR->formGroupAxes(outGroups, fmt::format("the epilogue of %{}", hero->name()));
  // A head epilogue's leaves along the heads span whole 128-lane heads.
  if (split)
    for (const LeafUse& u : outR->leafUses())
      if (outR->maps(u.emb, 2) && u.leaf->shape().dims.back() != 128)
        g.fail(*u.leaf, fmt::format("the head epilogue of %{} reads an operand along the heads "
                                    "that is not 128 lanes wide",
                                    hero->name()));

  const int lhsM = lhsTransposed ? 2 : 1, lhsK = lhsTransposed ? 1 : 2;  // the LHS's axes
  const int64_t B = lhsR->axes()[0].size, M = lhsR->axes()[size_t(lhsM)].size,
                K = lhsR->axes()[size_t(lhsK)].size;
  const int64_t N = outR->axes()[2].size;
  auto inBytes = [&](dsl::DType d) { return isa::dtypeBytes(d); };
  // An operand read in place whose batch entries interleave within its rows
  // (a [seq, heads, dim] KV cache read per head) gives one batch entry's block
  // short row runs a whole row stride apart, which a few HBM channels serve.
  // A step then takes enough batch entries that its rows, walked in address
  // order, cover the preset's interleave line (HbmConfig::interleaveBytes:
  // every channel, pseudo-channel and bank group busy); the other blocks are
  // chosen for that share of VMEM. When every entry fits one step
  // (kMaxBatchBlock) and the entries tile the row, the step takes them all:
  // its block is then one contiguous run (the 7B decode's 16 heads of 32 read
  // 4 KiB runs 8 KiB apart, 91.4% of the v5e HBM peak against 94.0%).
  int64_t bb = 1;
  int64_t entryRun[2] = {0, 0};  // per operand: one batch entry's row run (in place)
  for (int side = 0; side < 2; ++side) {
    Region* r = side == 0 ? lhsR.get() : rhsR.get();
    for (const LeafUse& u : r->leafUses()) {
      std::vector<int64_t> st = r->viewStrides(*u.leaf, u.emb);
      if (st.size() != 3 || !r->maps(u.emb, 0) || st[0] >= st[1]) continue;
      int64_t runBytes =
          st[0] * isa::dtypeBytes(memoryType(dslType(g, *u.leaf, u.leaf->shape().type)));
      entryRun[side] = std::max(entryRun[side], runBytes);
      int64_t want = std::min(B, cdiv(t.hbmInterleaveBytes, std::max<int64_t>(runBytes, 1)));
      if (st[1] == B * st[0] && B <= kMaxBatchBlock) want = B;
      while (want > 1 && B % want != 0) --want;
      bb = std::max(bb, want);
    }
  }
  const dsl::DType outType = dslType(g, *root, root->shape().type);
  // Several outputs, and the epilogue's inputs of the output block's shape
  // (a multi-output epilogue's g and u): VMEM blocks beside the one output.
  int64_t extraBlocks = 0;
  if (nOut > 1) {
    extraBlocks = static_cast<int64_t>(nOut) - 1;
    for (const LeafUse& u : outR->leafUses())
      extraBlocks += outR->maps(u.emb, 1) && outR->maps(u.emb, 2);
  }

  // Most of VMEM only for a dot of plain inputs whose epilogue at most
  // converts the result: an epilogue's own inputs (a residual, a bias) take
  // VMEM blocks the model does not count.
  const dsl::DType heroOutType = ot;
  const bool bareOutput =
      nOut == 1 &&
      (root == hero || (root->opcode() == HloOpcode::Convert && root->operand(0) == hero));
  // A plain dot (no epilogue, the output in the accumulator's type) with one
  // K block writes its output block in place; so does a bf16 dot of bf16
  // operands, its results rounded to bf16 as they leave the MXU (no f32
  // accumulator and no second pass to convert it).
  auto plainOutput = [&](int64_t entries) {
    return nOut == 1 && root == hero && memoryType(outType) == accType && entries == 1;
  };
  auto roundedOutput = [&](int64_t entries) {
    return nOut == 1 && root == hero && entries == 1 && nRhs == 1 && accType == dsl::F32 &&
           memoryType(outType) == dsl::BF16 && heroOutType == dsl::BF16;
  };
  // A sum epilogue applied as the dot is popped (sumEpilogueOnPop) needs no
  // accumulator either: priced as a plain dot (its addend blocks are in the
  // VMEM the budget leaves, as other epilogue inputs are).
  const bool sumShape = nOut == 1 && nRhs == 1 && accType == dsl::F32 &&
                        memoryType(outType) == dsl::BF16 && sumEpilogueOnPop(g, root, hero);
  auto blocking = [&](int64_t entries, TilingTarget& shared) {
    shared = t;
    shared.dotEpilogue =
        !(plainOutput(entries) || roundedOutput(entries) || (entries == 1 && sumShape));
    shared.dotOperandsAreInputs = bareOutput && isInputView(g, lhs) && isInputView(g, rhsRoot);
    shared.vmemBytes = t.vmemBytes / entries;
    shared.dotBatchBlock = entries;
    shared.dotRhsTransposed = transposed;
    shared.dotRhsCount = static_cast<int64_t>(nRhs);
    shared.dotExtraBlocks = extraBlocks;
    shared.dotLhsTransposed = lhsTransposed;
    shared.dotMxuInt8 = mxType == dsl::S8;
    // The step's entries are adjacent in each row of an in-place operand, so its
    // DMA reads runs of bb entries whatever the block's other dims.
    shared.dotLhsRunBytes = entries * entryRun[0];
    shared.dotRhsRunBytes = entries * entryRun[1];
    // Each batch entry's dot is traced separately; K blocks of at most 2048 keep
    // the unrolled entries within the code generator's scalar registers (the 7B
    // decode's p x V: 16 heads x 2048 positions; 4096 is untested).
    if (entries > 1) shared.maxDotDepth = kBatchedDotDepth;
    return chooseDotBlocks(B, M, N, K, hbmBytesOf(g, lhs, lt), hbmBytesOf(g, rhsRoot, rt),
                           inBytes(ot), shared);
  };
  TilingTarget shared;
  DotBlocking blk = blocking(bb, shared);
  // Small entries (an attention head's S x S scores: one weight tile each)
  // keep one MXU busy per step and leave the step's DMA and the MXU fill and
  // drain exposed: a step of several entries deals their tiles to every MXU
  // and moves more bytes per step. The tiler prices each batch block; a
  // larger one must save a tenth (the model is coarse), and the unrolled
  // entries stay within the pushes one step may trace.
  const int64_t mxuTile = std::max<int64_t>(t.mxuSize, 8);
  auto pushes = [&](const DotBlocking& d, int64_t entries) {
    return entries * static_cast<int64_t>(nRhs) * cdiv(std::min(d.bm, M), 8) *
           cdiv(std::min(d.bn, N), mxuTile) * cdiv(std::min(d.bk, K), mxuTile);
  };
  for (int64_t more = 2 * bb; more <= kMaxBatchBlock && B % more == 0; more *= 2) {
    TilingTarget s;
    DotBlocking d = blocking(more, s);
    if (pushes(d, more) > kMaxBatchedPushes || !(d.estimatedCycles < 0.9 * blk.estimatedCycles))
      continue;
    blk = d;
    shared = s;
    bb = more;
  }
  const bool plain = !shared.dotEpilogue;
  if (split && blk.bn % 128 != 0)
    g.fail(*root, fmt::format("the head epilogue of %{} needs N blocks of whole 128-lane heads "
                              "(the tiler chose {})",
                              hero->name(), blk.bn));
  if (split) blk.why += "; epilogue by 128-lane heads";
  if (bb > 1)
    blk.why += fmt::format("; {} batch entries per step{}", bb,
                           entryRun[0] + entryRun[1] > 0 ? " (in-place strided operand)" : "");
  auto readAsIs = [&](const HloInstruction* i, bool rhsSide) {
    if (isInputView(g, i)) return true;
    if (rhsSide && mxType == dsl::BF16 && !transposed && scaledS8Weights(g, i)) return true;
    return mxType == dsl::BF16 && i->opcode() == HloOpcode::Convert &&
           isInputView(g, i->operand(0)) &&
           dslType(g, *i->operand(0), i->operand(0)->shape().type) == dsl::S8;
  };
  auto copyBytes = [](int64_t rows, int64_t cols) {  // one 32-bit word per element
    return cdiv(rows, 8) * 8 * cdiv(cols, 128) * 128 * 4;
  };
  // The VMEM a pipelined epilogue's blocks take beyond the tiler's: a second
  // set of accumulators, the LHS cache, the branches' operand copies.
  const bool cacheLhs = !readAsIs(lhs, false);
  auto branchCopiesFor = [&](int64_t m, int64_t n, int64_t k) {
    int64_t bytes = cacheLhs ? copyBytes(m, k) : 0;
    for (const RhsView& v : rhsViews) bytes += readAsIs(v.root, true) ? 0 : copyBytes(k, n);
    return bytes;
  };
  auto extraBytesFor = [&](int64_t m, int64_t n) {
    return 2 * extraBlocks * copyBytes(std::min(m, M), std::min(n, N));
  };
  auto pipelineFits = [&](int64_t m, int64_t n, int64_t k) {
    const int64_t accBytes = static_cast<int64_t>(nRhs) * cdiv(std::min(m, M), 8) * 8 *
                             cdiv(std::min(n, N), 128) * 128 * 4;
    return dotVmemBytes(m, n, k, true, hbmBytesOf(g, lhs, lt), hbmBytesOf(g, rhsRoot, rt),
                        static_cast<int64_t>(nRhs)) +
               accBytes + (cacheLhs ? copyBytes(m, k) : 0) + 2 * branchCopiesFor(m, n, k) +
               extraBytesFor(m, n) <=
           shared.dotVmemBudget();
  };
  // An epilogue pipelined along M (below) is traced unrolled in the step's
  // basic block beside the next block's dots: within kMaxUnrolledEpilogue
  // elements a block, the register allocator keeps up with the scheduler
  // (bm 512 x bn 2048 ran out of vector registers). So a sibling-dot kernel
  // with one N and one K block takes capped M blocks when they pipeline
  // (several of them, their VMEM fits); else it keeps its blocks and its
  // epilogue after the dots (`mPipelineRefused`).
  bool mPipelineRefused = false;
  if (nRhs > 1 && bb == 1 && !lhsTransposed && cdiv(N, blk.bn) == 1 && cdiv(K, blk.bk) == 1 &&
      blk.bm * std::min(blk.bn, N) > kMaxUnrolledEpilogue) {
    const int64_t capped = std::max<int64_t>(8, kMaxUnrolledEpilogue / std::min(blk.bn, N) / 8 * 8);
    if (cdiv(M, capped) > 1 && pipelineFits(capped, blk.bn, blk.bk)) {
      blk.why += fmt::format("; bm {} -> {} (epilogue pipelined along M)", blk.bm, capped);
      blk.bm = capped;
    } else {
      mPipelineRefused = true;
    }
  }
  const int64_t bm = blk.bm, bn = blk.bn, bk = blk.bk;
  const int64_t kBlocks = cdiv(K, bk), kTail = K - (kBlocks - 1) * bk;
  const bool onePass = kBlocks == 1 && kTail == std::min(bk, K);
  const bool inPlaceDot = plain && !sumShape && onePass;
  // An element-wise sum epilogue is applied as the dot is popped: in place too.
  const bool sumOnPop = plain && sumShape && onePass;
  if (sumOnPop) blk.why += "; epilogue on the pop";
  const bool roundOut = inPlaceDot && roundedOutput(bb);
  const bool inPlace = inPlaceDot || sumOnPop;
  // Several K blocks whose results fit the MXU result slots accumulate there
  // across the K steps (no VMEM accumulator traffic, no MXU drain per step);
  // the last step pops them into the accumulator for the epilogue.
  // Each K step's branch materializes its own copy of an operand that is not
  // read as it is (a cast from f32, a fused computation; s8 weights are
  // widened in registers): the extra copies must fit the blocks' VMEM budget.
  const int64_t branchCopies = branchCopiesFor(bm, bn, bk);
  const int64_t extraBytes = extraBytesFor(bm, bn);
  const int64_t resultSets = bb * static_cast<int64_t>(nRhs);
  const bool resident = kBlocks > 1 && !lhsTransposed &&
                        dotResultsFitMxu(resultSets, std::min(bm, M), std::min(bn, N), shared) &&
                        dotVmemBytes(bm, bn, bk, true, hbmBytesOf(g, lhs, lt),
                                     hbmBytesOf(g, rhsRoot, rt), static_cast<int64_t>(nRhs)) +
                                (std::min<int64_t>(kBlocks, 3) - 1) * branchCopies + extraBytes <=
                            shared.dotVmemBudget();

  // Axis blocks and grid ids: B -> 0, M -> 1, N -> 2, K -> 3.
  auto set = [](Axis& a, int64_t block, int grid) {
    a.block = a.role == AxisRole::Lead ? 1 : std::min(block, a.size);
    a.grid = grid;
  };
  set(lhsR->axes()[0], 1, 0);
  lhsR->axes()[0].block = bb;
  set(lhsR->axes()[size_t(lhsM)], bm, 1);
  set(lhsR->axes()[size_t(lhsK)], bk, 3);
  for (auto& r : rhsRs) {
    set(r->axes()[0], 1, 0);
    r->axes()[0].block = bb;
    set(r->axes()[1], transposed ? bn : bk, transposed ? 2 : 3);
    set(r->axes()[2], transposed ? bk : bn, transposed ? 3 : 2);
  }
  set(outR->axes()[0], 1, 0);
  outR->axes()[0].block = bb;
  set(outR->axes()[1], bm, 1);
  set(outR->axes()[2], bn, 2);

  // The pipelined epilogue: with one K block the epilogue of output block n
  // runs at grid step n + 1, traced after block n + 1's matmul in its basic
  // block and marked as work the MXU stream may hide (dsl::OverlapWithMxu),
  // so the VPU work of an element-wise epilogue (SwiGLU over sibling dots'
  // results: loads, roundings, the sigmoid, the products) fills the bundle
  // slots the MXU pushes leave instead of following them. Each row of N
  // blocks takes one grid step more, which runs the last block's epilogue
  // alone; the operands' block indices clamp to the last block there (the
  // pipeline skips an unchanged block's copy), the epilogue's arrays trail
  // one step behind, and the accumulators alternate between two sets by the
  // step's parity. Costs a second set of accumulators in VMEM. Sibling-dot
  // kernels only: their SwiGLU epilogue is what was exposed (ordinary dot
  // kernels of the measured models have none of this shape).
  const int64_t mBlocks = cdiv(M, bm), nBlocks = cdiv(N, bn);
  // A computed LHS (a norm's scale) is the same for every step of a row: the
  // row's first step stores it (bf16) for the others (`cacheLhs`, above).
  // With one N block (a row's whole output in one step) the epilogue of M
  // block m runs at step m + 1 instead, in sibling-dot kernels (the SwiGLU
  // forward: two dots a step, a light epilogue): the LHS clamps and the
  // epilogue's arrays trail along the M axis. Not for one dot with a heavy
  // epilogue (the SwiGLU backward: 3x the VALU work beside half the MXU
  // pushes, issue-bound: 1.92 M -> 2.08 M cycles in the training step).
  const bool alongM = nBlocks == 1 && mBlocks > 1 && nRhs > 1 && !mPipelineRefused;
  const int pipeAxis = alongM ? 1 : 2;
  const int64_t pipeBlocks = alongM ? mBlocks : nBlocks;
  const bool pipelined = (nRhs > 1 || nOut > 1) && kBlocks == 1 && !inPlace && bb == 1 &&
                         pipeBlocks > 1 && !lhsTransposed && (nOut > 1 || root != hero) &&
                         pipelineFits(bm, bn, bk);
  if (pipelined && alongM) {
    lhsR->setLag(1, 0, mBlocks);
    outR->setLag(1, 1, mBlocks);
    blk.why += "; epilogue pipelined (one M step behind)";
  } else if (pipelined) {
    for (auto& r : rhsRs) r->setLag(2, 0, nBlocks);
    outR->setLag(2, 1, nBlocks);
    blk.why += "; epilogue pipelined (one step behind)";
  }
  // A dot kernel with several outputs whose epilogue is not pipelined (one N
  // block: the SwiGLU backward, dh's two products) traces it unrolled in the
  // dots' basic block, column tile by column tile (dsl::EpilogueByColumns):
  // a row loop ended the block, so the epilogue waited for the last pop and
  // each trip drained its chains (137 bundles per 16 tiles against 96 of VALU
  // work); unrolled, the columns of the MXUs' first round of N tiles go while
  // the second round streams.
  const bool ownEpilogueUnrolled = !pipelined && kBlocks == 1 && nOut > 1 && !inPlace && !split &&
                                   bb * bm * bn <= kMaxUnrolledOwnEpilogue;
  if (ownEpilogueUnrolled) blk.why += "; epilogue unrolled by columns under the dots";

  lhsR->dropUnitLeadAxes();
  for (auto& r : rhsRs) r->dropUnitLeadAxes();
  outR->dropUnitLeadAxes();
  // One K block: odd rows of LHS blocks walk the N blocks backwards
  // (serpentine), so the step that starts a new LHS block keeps its RHS block
  // (the pipeline skips an unchanged block's copy).
  if (kBlocks == 1 && B / bb == 1 && mBlocks > 1 && nBlocks > 1) {
    for (auto& r : rhsRs) r->setSerpentine(2, 1, nBlocks);
    outR->setSerpentine(2, 1, nBlocks);
  }

  KernelPlan plan;
  plan.target = &t;
  plan.tiling = blk.why;
  plan.config.grid = {B / bb, mBlocks + (pipelined && alongM ? 1 : 0),
                      nBlocks + (pipelined && !alongM ? 1 : 0), kBlocks};
  // A pipelined epilogue carries a row's accumulators from step to step: its
  // N axis is sequential (the last block's epilogue runs alone at the row's
  // extra step, which starts no input block).
  plan.config.compiler_params.dimension_semantics = {
      dsl::PARALLEL, pipelined && alongM ? dsl::ARBITRARY : dsl::PARALLEL,
      pipelined && !alongM ? dsl::ARBITRARY : dsl::PARALLEL, dsl::ARBITRARY};
  if (pipelined) plan.config.compiler_params.tail_steps_without_inputs = 1;
  addLeafInputs(*lhsR, plan);
  const size_t rhsFirst = plan.config.in_specs.size();
  for (auto& r : rhsRs) addLeafInputs(*r, plan);
  for (size_t i = rhsFirst; i < plan.config.in_specs.size(); ++i)
    plan.config.in_specs[i].buffers = blk.rhsBuffers;
  addLeafInputs(*outR, plan);
  for (size_t k = 0; k < nOut; ++k) {
    const dsl::DType kt = dslType(g, *outRoots[k], outRoots[k]->shape().type);
    plan.config.out_shapes.push_back(dsl::ShapeDtype(outR->arrayShape(rootEmb), memoryType(kt),
                                                     nOut == 1 ? "out" : fmt::format("out.{}", k)));
    plan.config.out_specs.push_back(outR->blockSpec(rootEmb));
  }
  const int64_t abm = std::min(bm, M), abn = std::min(bn, N), abk = std::min(bk, K);
  // One accumulator per sibling dot.
  if (!inPlace)
    for (size_t k = 0; k < nRhs * (pipelined ? 2 : 1); ++k)
      plan.config.scratch.push_back(bb > 1 ? dsl::VMEM({bb, abm, abn}, accType)
                                           : dsl::VMEM({abm, abn}, accType));
  if (pipelined && cacheLhs) plan.config.scratch.push_back(dsl::VMEM({abm, abk}, mxType));
  const size_t nIn = plan.inputs.size();
  const dsl::DType heroType = ot;

  // One batch entry's operands as the MXU takes them, over the first `k`
  // columns of a / rows of b: the whole block, or at a ragged last K block its
  // kTail valid ones (the rest is stale VMEM). The MXU lowering takes a K that
  // is not a multiple of its tile (rows past K are not pushed, LHS lanes past
  // K are zeroed), so nothing is masked and the block costs what its valid part
  // does, which keeps a dot's time smooth in K.
  // Sibling dots: the LHS once, then each RHS (pairs of the same a).
  // `lhsAs`: the LHS given (a block cached in VMEM), not traced.
  // `unshared`: the LHS is not stored for the sibling dots that read it
  // (Region::emitUnshared); the caller stores it once.
  auto operands = [=](const std::vector<dsl::Ref>& refs, int64_t k,
                      std::optional<dsl::Array> lhsAs = std::nullopt, bool unshared = false) {
    const bool clip = k != abk;
    if (clip) {
      lhsR->clipBlock(lhsTransposed ? k : 0, lhsTransposed ? 0 : k);
      for (auto& r : rhsRs) r->clipBlock(transposed ? 0 : k, transposed ? k : 0);
    }
    dsl::Array a = lhsAs      ? *lhsAs
                   : unshared ? lhsR->emitUnshared(lhs, identity(lr), refs)
                              : lhsR->emit(lhs, identity(lr), refs);
    a = lhsTransposed ? expandTo(a, k, abm) : expandTo(a, abm, k);
    if (a.dtype() != mxType) a = a.astype(mxType);
    std::vector<std::pair<dsl::Array, dsl::Array>> out;
    for (size_t s = 0; s < nRhs; ++s) {
      const HloInstruction* r = rhsViews[s].root;
      dsl::Array b = rhsRs[s]->emit(r, identity(r->shape().rank()), refs);
      b = transposed ? expandTo(b, abn, k) : expandTo(b, k, abn);
      if (b.dtype() != mxType) b = b.astype(mxType);
      out.emplace_back(a, b);
    }
    if (clip) {
      lhsR->clipBlock(0, 0);
      for (auto& r : rhsRs) r->clipBlock(0, 0);
    }
    return out;
  };
  // A computed LHS (a norm's scale, SwiGLU's product) is stored by columns
  // in the matmul's block: the MXU starts after its first K chunk's column
  // and the rest of the VPU work overlaps the MXU.
  const bool lhsByColumns = !readAsIs(lhs, false);
  // One batch entry's K step into its accumulator (`last`: the last K block,
  // clipped to kTail).
  using Accs = std::vector<dsl::Ref>;  // one per sibling dot
  auto step = [=](const std::vector<dsl::Ref>& refs, const Accs& accs, bool last) {
    auto ops = operands(refs, last ? kTail : abk);
    for (size_t s = 0; s < ops.size(); ++s) {
      auto [a, b] = ops[s];
      dsl::DotOptions opts;
      opts.transpose_lhs = lhsTransposed;
      opts.transpose_rhs = transposed;
      opts.lhs_by_columns = lhsByColumns;
      if (sumOnPop) {
        dsl::Array h = dsl::dot(a, b, opts).astype(dsl::BF16);
        outR->store(refs[nIn], outR->emit(root, rootEmb, refs, &h));
      } else if (inPlace && roundOut)
        outR->store(refs[nIn], dsl::dot(a, b, opts).astype(dsl::BF16));
      else if (inPlace)
        outR->store(refs[nIn], dsl::dot(a, b, opts));
      else if (kBlocks == 1)
        accs[s].store(dsl::dot(a, b, opts));
      else
        accs[s].store(accs[s].load() + dsl::dot(a, b, opts));
    }
  };
  // One batch entry's K step with the results kept in the MXU: the first
  // starts the slots, the others go on from them, the last (`keep` Store)
  // pops them into the accumulator.
  auto residentStep = [=](std::pair<dsl::Array, dsl::Array> ab, const dsl::Ref& acc,
                          dsl::MxuResident keep, bool cont) {
    auto [a, b] = ab;
    dsl::DotOptions opts;
    opts.transpose_lhs = lhsTransposed;
    opts.transpose_rhs = transposed;
    opts.resident = keep;
    opts.continue_in_mxu = cont;
    acc.store(dsl::dot(a, b, opts));
  };
  // The element-wise epilogue of one batch entry, at the last K block.
  // Each sibling's result is rounded to its dot's type, as the HLO rounds it.
  auto epilogue = [=](const std::vector<dsl::Ref>& refs, const Accs& accs) {
    if (split) {
      // A head epilogue: one 128-lane column tile (one head) at a time. With
      // one K block it is traced in the matmul's basic block, unrolled, as
      // work the MXU stream may hide: a head's tiles go as soon as their
      // results are popped (the rotations are XLU-bound: one per tile).
      std::optional<dsl::OverlapWithMxu> hidden;
      if (kBlocks == 1) hidden.emplace();
      for (int64_t c = 0; c * 128 < abn; ++c) {
        outR->setColTile(c);
        dsl::Array h =
            accs[0].load(dsl::ds(dsl::Scalar(0), abm), dsl::ds(dsl::Scalar(c * 128), 128));
        if (h.dtype() != heroType) h = h.astype(heroType);
        outR->store(refs[nIn], outR->emit(root, rootEmb, refs, &h));
      }
      outR->setColTile(-1);
      return;
    }
    std::vector<dsl::Array> h;
    for (const dsl::Ref& acc : accs) {
      h.push_back(acc.load());
      if (h.back().dtype() != heroType) h.back() = h.back().astype(heroType);
    }
    if (nOut == 1) return outR->store(refs[nIn], outR->emit(root, rootEmb, refs, h.data()));
    // Every output from one walk of the row tiles: what they share (a
    // sigmoid) is computed once per tile.
    std::vector<dsl::Ref> outs(refs.begin() + static_cast<std::ptrdiff_t>(nIn),
                               refs.begin() + static_cast<std::ptrdiff_t>(nIn + nOut));
    std::vector<dsl::Array> values;
    for (const HloInstruction* r : outRoots)
      values.push_back(outR->emit(r, rootEmb, refs, h.data()));
    outR->storeTogether(outs, values);
  };
  return finishKernel(g, plan, [=](const std::vector<dsl::Ref>& refs) {
    if (inPlace) return step(refs, {refs[nIn]}, false);  // the dot is stored into the output
    if (nOut > 1) outR->keepSharedInRegisters();
    const Accs accRefs(refs.begin() + static_cast<std::ptrdiff_t>(nIn + nOut),
                       refs.begin() + static_cast<std::ptrdiff_t>(nIn + nOut + nRhs));
    // Unrolled over the batch entries of a step: constant batch indices fold
    // into the addresses. Every entry's dot comes before the epilogues, and
    // with one K block the epilogues need no branch, so the entries' matmuls
    // sit in one basic block, where the scheduler overlaps one entry's MXU
    // drain with the next ones' weight pushes (their work items go to the
    // following MXUs and result slots: LowerMatmul.cpp).
    auto forEachEntry = [&](const std::function<void(const Accs&)>& fn) {
      if (bb == 1) return fn(accRefs);
      for (int64_t i = 0; i < bb; ++i) {
        lhsR->setLeadLoop(0, dsl::Scalar(i));
        outR->setLeadLoop(0, dsl::Scalar(i));
        for (auto& r : rhsRs) r->setLeadLoop(0, dsl::Scalar(i));
        Accs at;
        for (const dsl::Ref& a : accRefs) at.push_back(a.at(dsl::Scalar(i)));
        fn(at);
      }
    };
    auto finish = [&] { forEachEntry([&](const Accs& a) { epilogue(refs, a); }); };
    if (pipelined) {
      const Accs other(refs.begin() + static_cast<std::ptrdiff_t>(nIn + nOut + nRhs),
                       refs.begin() + static_cast<std::ptrdiff_t>(nIn + nOut + 2 * nRhs));
      const Accs* sets[2] = {&accRefs, &other};
      // Each branch traces its own values (a value traced in one branch
      // cannot be used in another).
      auto fresh = [&] {
        lhsR->clipBlock(0, 0);
        for (auto& r : rhsRs) r->clipBlock(0, 0);
        outR->clipBlock(0, 0);
      };
      // The dots of one step into `accs`, the LHS from the row's cache. The
      // row's first step computes the cache as its first dot's LHS, by
      // columns under that dot's MXU work (DotOptions::lhs_into), not in a
      // loop before it; the other dots read it.
      auto dots = [&](const Accs& accs, bool first) {
        std::vector<std::pair<dsl::Array, dsl::Array>> ops;
        std::vector<std::pair<dsl::Array, dsl::Array>> firstOps;
        if (cacheLhs) {
          const dsl::Ref& cache = refs[nIn + nOut + 2 * nRhs];
          if (first) firstOps = operands(refs, abk, std::nullopt, true);
          ops = operands(refs, abk, cache.load());
        } else {
          ops = operands(refs, abk);
        }
        for (size_t s = 0; s < ops.size(); ++s) {
          dsl::DotOptions opts;
          opts.transpose_rhs = transposed;
          if (s == 0 && !firstOps.empty()) {
            opts.lhs_by_columns = true;
            opts.lhs_into = refs[nIn + nOut + 2 * nRhs].value();
            accs[s].store(dsl::dot(firstOps[0].first, firstOps[0].second, opts));
            continue;
          }
          accs[s].store(dsl::dot(ops[s].first, ops[s].second, opts));
        }
      };
      // Along M every step has a new LHS block: each computes its cache.
      dsl::Scalar n = dsl::program_id(pipeAxis);
      dsl::when(n == 0, [&] {
        fresh();
        dots(accRefs, true);
      });
      for (int parity = 1; parity >= 0; --parity) {
        if (parity == 0 && pipeBlocks <= 2) continue;  // no even step but 0 has an epilogue
        dsl::Scalar odd = n % dsl::Scalar(2) == dsl::Scalar(1);
        dsl::when((parity ? odd : n > 0 && n % dsl::Scalar(2) == dsl::Scalar(0)) && n < pipeBlocks,
                  [&] {
                    fresh();
                    dots(*sets[parity], alongM);
                    dsl::OverlapWithMxu hidden;
                    epilogue(refs, *sets[1 - parity]);
                  });
      }
      dsl::when(n == pipeBlocks, [&] {
        fresh();
        // Traced as the other steps' epilogues are (unrolled, marked
        // overlap), though no MXU work is left to hide it: in one basic
        // block the scheduler overlaps the row tiles' EUP chains, which a
        // row loop of 2 tiles per trip waited out (1.6k -> ~1.1k cycles for
        // a 256 x 1024 SwiGLU block on v5e). Unrolled without the overlap
        // marks (whose own candidate window keeps the scheduler's order) it
        // ran slower than the loop.
        dsl::OverlapWithMxu unrolled;
        epilogue(refs, *sets[(pipeBlocks - 1) % 2]);
      });
      return;
    }
    const bool ragged = kTail != abk;
    if (resident) {
      dsl::Scalar kb = dsl::program_id(3);
      // The full blocks' operands are traced once, before the steps' branches
      // (their index scalars are shared); a ragged last block traces its own.
      std::vector<std::pair<dsl::Array, dsl::Array>> ops;
      std::vector<dsl::Ref> accs;
      forEachEntry([&](const Accs& a) {
        auto o = operands(refs, abk);
        ops.insert(ops.end(), o.begin(), o.end());
        accs.insert(accs.end(), a.begin(), a.end());
      });
      auto steps = [&](dsl::MxuResident keep, bool cont) {
        for (size_t i = 0; i < ops.size(); ++i) residentStep(ops[i], accs[i], keep, cont);
      };
      auto last = [&] {
        if (ragged)
          forEachEntry([&](const Accs& a) {
            auto o = operands(refs, kTail);
            for (size_t s = 0; s < o.size(); ++s)
              residentStep(o[s], a[s], dsl::MxuResident::Store, true);
          });
        else
          steps(dsl::MxuResident::Store, true);
        finish();
      };
      // One chain of tests, laid out so that a middle step (most of them)
      // falls through both (when_else branches to its `otherwise` part) and
      // takes one jump, to the step's end; three separate tests cost it
      // three compares (the middle one two-sided) and three taken branches.
      auto middleOrLast = [&] {
        if (kBlocks > 2)
          dsl::when_else(
              kb < kBlocks - 1, [&] { steps(dsl::MxuResident::Keep, true); }, last);
        else
          last();
      };
      dsl::when_else(kb > 0, middleOrLast, [&] { steps(dsl::MxuResident::Keep, false); });
      return;
    }
    // One K block: the dot writes the accumulator (no zero fill, no load and
    // add per result tile); several: zeroed at the first, accumulated at each.
    if (kBlocks > 1)
      dsl::when(dsl::program_id(3) == 0, [&] {
        forEachEntry([&](const Accs& as) {
          for (const dsl::Ref& a : as) a.store(dsl::zeros(abm, abn, accType));
        });
      });
    if (ragged) {
      // The ragged last block is a branch of its own, with the epilogue; the
      // batch entries' matmuls stay together in each branch's basic block.
      dsl::Scalar kb = dsl::program_id(3);
      dsl::when(kb != kBlocks - 1,
                [&] { forEachEntry([&](const Accs& a) { step(refs, a, false); }); });
      dsl::when(kb == kBlocks - 1, [&] {
        forEachEntry([&](const Accs& a) { step(refs, a, true); });
        finish();
      });
      return;
    }
    forEachEntry([&](const Accs& a) { step(refs, a, false); });
    if (ownEpilogueUnrolled) {
      dsl::OverlapWithMxu unrolled;
      dsl::EpilogueByColumns byColumns;
      finish();
    } else if (kBlocks == 1)
      finish();
    else
      dsl::when(dsl::program_id(3) == kBlocks - 1, finish);
  });
}

}  // namespace tpusim::lower::detail
