#include "kernels/codegen/FirstRead.h"

#include <algorithm>
#include <optional>

namespace tpusim::kernels::codegen {

using llo::OpKind;
using llo::ScalarBin;

namespace {

enum class Read { None, Rows, Whole };

class FirstRead {
 public:
  // `byEntry`: the block's parts are ranges of its leading entries.
  FirstRead(const llo::Kernel& k, const llo::Value* ref, bool firstStep, bool byEntry = false,
            bool allReads = false)
      : k_(k),
        ref_(ref),
        firstStep_(firstStep),
        byEntry_(byEntry),
        allReads_(allReads),
        inputs_(inputBlocks(k)) {
    const auto& shape = ref->type.shape;
    rows_ = shape.size() >= 2 ? shape[shape.size() - 2] : 0;
  }

  // The first op of `b` that waits for the block, and how.
  Read block(const llo::Block& b) {
    for (const auto& op : b.ops)
      if (Read r = this->op(*op); r != Read::None && !allReads_) return r;
    return Read::None;
  }

  // allReads: every read of the first step's path (both branches of an `if`
  // whose condition is not known there) has been walked by block(); the
  // rows they read end before `rowEnd`.
  bool readsWithin(int64_t rowEnd) const { return !whole_ && maxRowEnd_ <= rowEnd; }

 private:
  const llo::Kernel& k_;
  const llo::Value* ref_;
  bool firstStep_;
  bool byEntry_;
  bool allReads_;
  bool whole_ = false;
  int64_t maxRowEnd_ = 0;
  std::vector<const llo::Value*> inputs_;
  int64_t rows_ = 0;

  static std::vector<const llo::Value*> inputBlocks(const llo::Kernel& k) {
    const auto& args = k.body->body.args;
    const size_t lo = std::min(args.size(), size_t(k.numScalarPrefetch));
    const size_t hi = std::min(args.size(), lo + k.inMaps.size());
    return {args.begin() + ptrdiff_t(lo), args.begin() + ptrdiff_t(hi)};
  }
  // Whether a loop or one-sided `if` waits for every block still arriving:
  // unless none of its refs may be one (an input block, or a ref that is not
  // a kernel argument), as Lowerer::awaitsArrivals.
  bool waitsForAll(const llo::Op& op) const {
    const auto& args = k_.body->body.args;
    return touchesRef(op, [&](const llo::Value* v) {
      return std::find(inputs_.begin(), inputs_.end(), v) != inputs_.end() ||
             std::find(args.begin(), args.end(), v) == args.end();
    });
  }

  // A scalar's value when the lowering knows it (constants, the program id
  // of a one-point grid dimension), or, with `atFirstStep`, its value at the
  // grid's first step (every program id 0).
  std::optional<int64_t> fold(const llo::Value* v, bool atFirstStep, int depth = 0) const {
    const llo::Op* d = v->def;
    if (!d || depth > 16) return std::nullopt;
    switch (d->kind) {
      case OpKind::SConst:
        return int64_t(int32_t(d->ints[0]));
      case OpKind::ProgramId:
        if (atFirstStep || k_.grid.at(size_t(d->ints[0])) == 1) return 0;
        return std::nullopt;
      case OpKind::NumPrograms:
        return k_.grid.at(size_t(d->ints[0]));
      case OpKind::SSelect: {
        auto c = fold(d->operands[0], atFirstStep, depth + 1);
        if (!c) return std::nullopt;
        return fold(d->operands[*c ? 1 : 2], atFirstStep, depth + 1);
      }
      case OpKind::SBinary:
        break;
      default:
        return std::nullopt;
    }
    auto a = fold(d->operands[0], atFirstStep, depth + 1);
    auto b = fold(d->operands[1], atFirstStep, depth + 1);
    if (!a || !b) return std::nullopt;
    std::optional<int32_t> r = llo::evalScalarBin(ScalarBin(d->ints[0]), int32_t(*a), int32_t(*b));
    if (!r) return std::nullopt;
    return int64_t(*r);
  }

  // A read of the block's rows up to `rowEnd` (exclusive), if known.
  Read rowsUpTo(std::optional<int64_t> rowEnd) {
    if (rowEnd)
      maxRowEnd_ = std::max(maxRowEnd_, *rowEnd);
    else
      whole_ = true;
    return rowEnd && *rowEnd < rows_ ? Read::Rows : Read::Whole;
  }
  Read whole() {
    whole_ = true;
    return Read::Whole;
  }
  // The constant second-last index of a view of the block, if it is one.
  std::optional<int64_t> viewRow(const llo::ViewRange& v) const {
    const size_t rank = v.ref->type.shape.size();
    if (rank < 2 || v.indices.size() != rank) return std::nullopt;
    return fold(v.indices[rank - 2], allReads_);
  }

  // As Lowerer::lowerMatmul waits: the destination and a scale row whole, the
  // LHS by row tiles (by K chunks transposed), the weights by K chunks (all
  // N rows transposed), addends whole. A latched matmul: whole (conservative).
  Read matmul(const llo::Op& op) {
    const auto views = llo::opViews(op);
    bool uses = false;
    for (const auto& v : views) uses = uses || v.ref == ref_;
    if (!uses) return Read::None;
    if (op.ints.size() > 7 && op.ints[7] >= 1) return whole();
    if (views[0].ref == ref_ || (llo::matmulScaled(op) && views[3].ref == ref_)) return whole();
    if (byEntry_) {  // an operand's entry e waits for the parts up to it
      if (views[1].ref != ref_ && views[2].ref != ref_) return whole();  // an addend
      const llo::ViewRange& v = views[1].ref == ref_ ? views[1] : views[2];
      if (v.indices.size() != ref_->type.shape.size()) return whole();
      auto e = fold(v.indices[0], false);
      return e && *e + 1 < ref_->type.shape[0] ? Read::Rows : whole();
    }
    const int64_t N = op.ints[1], K = op.ints[2];
    const bool transLhs = op.ints[3], transRhs = op.ints[4];
    auto plus = [](std::optional<int64_t> row, int64_t n) {
      return row ? std::optional<int64_t>(*row + n) : std::nullopt;
    };
    // allReads: all the rows the operand covers, not its first tile's.
    const int64_t M = op.ints[0];
    if (views[1].ref == ref_)
      return rowsUpTo(plus(viewRow(views[1]), allReads_  ? (transLhs ? K : M)
                                              : transLhs ? std::min<int64_t>(K, 128)
                                                         : 8));
    if (views[2].ref == ref_)
      return rowsUpTo(plus(viewRow(views[2]), allReads_  ? (transRhs ? N : K)
                                              : transRhs ? N
                                                         : std::min<int64_t>(K, 128)));
    return whole();  // an addend
  }

  // As Lowerer::lowerIf: a constant condition lowers one branch in place; an
  // `if` that reads no block still arriving waits for none; else a one-sided
  // `if` waits for everything first, a two-sided one in each branch where it
  // reads and for the rest at the branch's end.
  Read ifOp(const llo::Op& op) {
    const bool twoSided = op.regions.size() > 1;
    if (auto c = fold(op.operands[0], false)) {
      if (*c) return block(op.regions[0]);
      return twoSided ? block(op.regions[1]) : Read::None;
    }
    if (!waitsForAll(op)) return Read::None;
    if (allReads_) {  // the first step's branch, or both when not known
      if (auto c = fold(op.operands[0], true)) {
        if (*c) return block(op.regions[0]);
        return twoSided ? block(op.regions[1]) : Read::None;
      }
      for (const llo::Block& b : op.regions) block(b);
      return Read::None;
    }
    if (!twoSided) return Read::Whole;
    auto branch = [&](const llo::Block& b) {
      const Read r = block(b);
      return r == Read::None ? Read::Whole : r;
    };
    if (firstStep_)
      if (auto c = fold(op.operands[0], true)) return branch(op.regions[*c ? 0 : 1]);
    const Read a = branch(op.regions[0]), b = branch(op.regions[1]);
    return a == Read::Rows || b == Read::Rows ? Read::Rows : Read::Whole;
  }

  // As Lowerer::lowerOp waits for blocks still arriving.
  Read op(const llo::Op& op) {
    switch (op.kind) {
      case OpKind::SConst:
      case OpKind::SBinary:
      case OpKind::SSelect:
      case OpKind::ProgramId:
      case OpKind::NumPrograms:
        return Read::None;
      case OpKind::Matmul:
        return matmul(op);
      case OpKind::If:
        return ifOp(op);
      case OpKind::VLoad:
      case OpKind::VStore: {
        const size_t r = op.kind == OpKind::VStore ? 1 : 0;
        if (op.operands[r] != ref_) return Read::None;
        const size_t rank = ref_->type.shape.size();
        if (byEntry_) return whole();
        if (op.kind != OpKind::VLoad || op.operands.size() != rank + 1 || rank < 2) return whole();
        auto row = fold(op.operands[rank - 1], allReads_);
        const int64_t stride = op.ints.empty() ? 1 : op.ints[0];
        return rowsUpTo(row ? std::optional<int64_t>(*row + (stride == 0 ? 1 : 8 * stride))
                            : std::nullopt);
      }
      default:
        break;
    }
    if (!op.regions.empty()) {  // a loop waits for every block, if it may read one
      if (allReads_)
        return touchesRef(op, [&](const llo::Value* v) { return v == ref_; }) ? whole()
                                                                              : Read::None;
      return waitsForAll(op) ? Read::Whole : Read::None;
    }
    for (const llo::Value* v : op.operands)
      if (v == ref_) return whole();
    return Read::None;
  }
};

}  // namespace

bool touchesRef(const llo::Op& op, const std::function<bool(const llo::Value*)>& touched) {
  for (const llo::Value* v : op.operands)
    if (v->type.isRef() && touched(v)) return true;
  for (const llo::Block& b : op.regions)
    for (const auto& inner : b.ops)
      if (touchesRef(*inner, touched)) return true;
  return false;
}

// The body's argument that holds the block of `m` (one of k.inMaps), or null.
static const llo::Value* blockArg(const llo::Kernel& k, const llo::BlockMapping& m) {
  if (k.inMaps.empty() || &m < k.inMaps.data() || &m >= k.inMaps.data() + k.inMaps.size())
    return nullptr;
  const size_t arg = size_t(k.numScalarPrefetch) + size_t(&m - k.inMaps.data());
  const auto& args = k.body->body.args;
  return arg < args.size() ? args[arg] : nullptr;
}

bool firstStepReadsWithin(const llo::Kernel& k, const llo::BlockMapping& m, int64_t rowEnd) {
  const llo::Value* ref = blockArg(k, m);
  if (!ref) return false;
  FirstRead walk(k, ref, true, /*byEntry=*/false, /*allReads=*/true);
  walk.block(k.body->body);
  return walk.readsWithin(rowEnd);
}

bool firstReadByRows(const llo::Kernel& k, const llo::BlockMapping& m, bool firstStep) {
  const llo::Value* ref = blockArg(k, m);
  if (!ref) return false;
  return FirstRead(k, ref, firstStep).block(k.body->body) == Read::Rows;
}

bool firstReadByEntries(const llo::Kernel& k, const llo::BlockMapping& m) {
  const llo::Value* ref = blockArg(k, m);
  if (!ref) return false;
  return FirstRead(k, ref, false, /*byEntry=*/true).block(k.body->body) == Read::Rows;
}

}  // namespace tpusim::kernels::codegen
