#include "kernels/dsl/Ref.h"

#include <fmt/format.h>

#include "kernels/dsl/Emit.h"

namespace tpusim::kernels::dsl {

using llo::OpKind;

std::vector<int64_t> Ref::shape() const {
  const auto& full = v_->type.shape;
  return std::vector<int64_t>(full.begin() + lead_.size(), full.end());
}

Ref Ref::at(Scalar i) const {
  if (rank() < 1) throw Error("error: at() on a ref with no dimension left");
  int64_t c;
  if (i.isConstant(&c) && (c < 0 || c >= shape()[0]))
    throw Error(fmt::format("error: index {} out of bounds for {}", c, v_->type.str()));
  Ref r = *this;
  r.lead_.push_back(i);
  return r;
}

namespace {

RefWindow windowOf(const Ref& r, Slice rows, Slice cols, const Loc& loc) {
  if (r.space() != MemSpace::Vmem)
    fail(loc,
         fmt::format("loads and stores of arrays need a VMEM ref, not {}", r.value()->type.str()));
  if (r.rank() < 2)
    fail(loc, fmt::format("array access needs rank >= 2 after indexing; {} has rank {}",
                          r.value()->type.str(), r.rank()));
  if (r.rank() > 2)
    fail(loc, fmt::format("{} has {} leading dimensions left: index them with at()",
                          r.value()->type.str(), r.rank() - 2));
  auto shape = r.shape();
  int64_t c;
  if (cols.start.isConstant(&c) && c % 128 != 0)
    fail(loc, fmt::format("column start {} is not a multiple of 128", c));
  int64_t rs, cs;
  bool rc = rows.start.isConstant(&rs), cc = cols.start.isConstant(&cs);
  if (rows.size < 1 || cols.size < 1 || (rc && (rs < 0 || rs + rows.size > shape[0])) ||
      (cc && (cs < 0 || cs + cols.size > shape[1])) || rows.size > shape[0] || cols.size > shape[1])
    fail(loc, fmt::format("window of {} rows x {} columns does not fit {}", rows.size, cols.size,
                          r.value()->type.str()));
  RefWindow w;
  w.ref = r.value();
  for (const Scalar& s : r.leadIndices()) w.lead.push_back(s.value());
  w.row0 = rows.start.value();
  w.col0 = cols.start.value();
  w.rows = rows.size;
  w.cols = cols.size;
  return w;
}

bool sameScalar(llo::Value* a, llo::Value* b) {
  if (a == b) return true;
  Scalar x(a), y(b);
  int64_t p, q;
  return x.isConstant(&p) && y.isConstant(&q) && p == q;
}

bool viewsWindow(const ArrayNode& v, const RefWindow& w) {
  if (v.kind != ArrayNode::Kind::View || v.ref != w.ref || v.rows != w.rows || v.cols != w.cols ||
      v.lead.size() != w.lead.size() || v.laneReplicated)
    return false;
  for (size_t i = 0; i < v.lead.size(); ++i)
    if (!sameScalar(v.lead[i], w.lead[i])) return false;
  return sameScalar(v.row0, w.row0) && sameScalar(v.col0, w.col0);
}

bool readsRef(const ArrayNode& n, const llo::Value* ref) {
  if (n.ref == ref) return true;
  for (const auto& a : n.args)
    if (readsRef(*a, ref)) return true;
  return false;
}

// The largest LHS (in (8,128) tiles) stored by columns: its stores are
// unrolled (a 256 x 2048 block is 512 tiles).
constexpr int64_t kMaxColumnOrderLhsTiles = 1024;

// `x.astype(to)` of `x` with dtype `from` (a convert, not a bitcast), else null.
const ArrayNode* castOf(const ArrayNode& v, DType from, DType to) {
  if (v.kind != ArrayNode::Kind::Cast || v.op != 0 || v.dtype != to || v.args.size() != 1 ||
      v.args[0]->dtype != from)
    return nullptr;
  return v.args[0].get();
}

// `dot(a, b).astype(bf16)` of a plain f32 dot (rounded as it is popped), else null.
const ArrayNode* roundedDot(const ArrayNode& v) {
  const ArrayNode* d = castOf(v, DType::F32, DType::Bf16);
  if (!d || d->kind != ArrayNode::Kind::Dot || d->dot.resident != MxuResident::None ||
      d->dot.latched)
    return nullptr;
  return d;
}

// `x + y` of bf16 arrays as the DSL computes it (in f32, rounded): x and y, else false.
bool bf16Sum(const ArrayNode& v, const ArrayNode** x, const ArrayNode** y) {
  const ArrayNode* s = castOf(v, DType::F32, DType::Bf16);
  if (!s || s->kind != ArrayNode::Kind::Binary || llo::VecBin(s->op) != llo::VecBin::Add)
    return false;
  *x = castOf(*s->args[0], DType::Bf16, DType::F32);
  *y = castOf(*s->args[1], DType::Bf16, DType::F32);
  return *x && *y;
}

// The addends of a sum epilogue: a bf16 window of another ref at w's origin
// and shape, or a left fold `s + window` of them (Ops.def, matmul).
bool addendWindows(const ArrayNode& v, const RefWindow& w, std::vector<const ArrayNode*>* out) {
  if (v.kind == ArrayNode::Kind::View) {
    if (v.ref == w.ref || v.dtype != DType::Bf16 || v.rows != w.rows || v.cols != w.cols ||
        v.laneReplicated || v.lead.size() != w.lead.size() || !sameScalar(v.row0, w.row0) ||
        !sameScalar(v.col0, w.col0))
      return false;
    for (size_t i = 0; i < v.lead.size(); ++i)
      if (!sameScalar(v.lead[i], w.lead[i])) return false;
    out->push_back(&v);
    return true;
  }
  const ArrayNode *x, *y;
  if (!bf16Sum(v, &x, &y) || y->kind != ArrayNode::Kind::View) return false;
  return addendWindows(*x, w, out) && addendWindows(*y, w, out);
}

// `ref[...] += dot(a, b)` accumulates on the MXU path straight into the ref;
// `ref[...] = dot(a, b)` writes it there (the result slots are popped into
// the ref: no zero fill, no load and add per result tile).
// `ref[...] = dot(a, b).astype(bf16)` into a bf16 ref: each result row is
// rounded as it is popped (no f32 copy and no second pass over it);
// `ref[...] = dot(a, b).astype(bf16) + x` (or `x + dot`), x a bf16 window of
// another ref at the same place or a sum of such, adds x to each rounded tile
// as it is popped (the matmul's sum epilogue).
bool storeDot(const RefWindow& w, const NodePtr& value, const Loc& loc) {
  const ArrayNode& v = *value;
  const bool accumulate =
      v.kind == ArrayNode::Kind::Binary && llo::VecBin(v.op) == llo::VecBin::Add;
  if (accumulate && !viewsWindow(*v.args[0], w)) return false;
  const bool bf16Out = w.ref->type.dtype == llo::DType::Bf16;
  const ArrayNode* roundedRhs = bf16Out ? roundedDot(v) : nullptr;
  // The sum epilogue: 1 the dot first, 2 the addends first.
  int64_t sumMode = 0;
  std::vector<const ArrayNode*> addends;
  const ArrayNode *x, *y;
  if (bf16Out && !roundedRhs && bf16Sum(v, &x, &y)) {
    if (const ArrayNode* d = roundedDot(*x); d && addendWindows(*y, w, &addends)) {
      roundedRhs = d;
      sumMode = 1;
    } else if (addends.clear(), (d = roundedDot(*y)) && addendWindows(*x, w, &addends)) {
      roundedRhs = d;
      sumMode = 2;
    }
    if (!sumMode) return false;
  }
  const bool rounded = roundedRhs != nullptr;
  if (!accumulate && !rounded && v.kind != ArrayNode::Kind::Dot) return false;
  const ArrayNode& rhs = accumulate ? *v.args[1] : rounded ? *roundedRhs : v;
  if (rhs.kind != ArrayNode::Kind::Dot || rhs.rows != w.rows || rhs.cols != w.cols ||
      (rhs.dtype != w.ref->type.dtype && !rounded))
    return false;
  const bool resident = rhs.dot.resident != MxuResident::None;
  if (resident && accumulate)
    fail(loc,
         "a dot kept in the MXU (DotOptions::resident) is stored with `ref.store(dot(...))`; "
         "continue_in_mxu accumulates");
  if (!resident && rhs.dot.continue_in_mxu)
    fail(loc, "DotOptions::continue_in_mxu needs the results kept in the MXU (resident)");
  // Written in place, the ref must not also be an operand: result tiles are
  // stored while other tiles are still read.
  if (!accumulate && (readsRef(*rhs.args[0], w.ref) || readsRef(*rhs.args[1], w.ref))) return false;
  locate(rhs.loc);
  // A computed LHS stored column tile by column tile right before its
  // matmul (DotOptions::lhs_by_columns).
  const NodePtr& lhsValue = rhs.args[0];
  const bool computed = !(lhsValue->kind == ArrayNode::Kind::View && !lhsValue->laneReplicated) &&
                        lhsValue->kind != ArrayNode::Kind::Dot;
  const bool byColumns =
      rhs.dot.lhs_by_columns && !resident && !rhs.dot.transpose_lhs && computed &&
      (lhsValue->rows + 7) / 8 * ((lhsValue->cols + 127) / 128) <= kMaxColumnOrderLhsTiles;
  NodePtr a;
  if (llo::Value* into = rhs.dot.lhs_into) {
    const llo::Type& t = into->type;
    if (t.space != MemSpace::Vmem || t.rank() != 2 || t.shape[0] != lhsValue->rows ||
        t.shape[1] != lhsValue->cols || t.dtype != lhsValue->dtype)
      fail(loc, fmt::format("DotOptions::lhs_into: {} is not a VMEM ref of the LHS's shape {}x{}",
                            t.str(), lhsValue->rows, lhsValue->cols));
  }
  if (byColumns || rhs.dot.lhs_into) {
    RefWindow tmp;
    tmp.ref = rhs.dot.lhs_into ? rhs.dot.lhs_into
                               : allocTemp({lhsValue->rows, lhsValue->cols}, lhsValue->dtype);
    tmp.row0 = Scalar(int64_t(0)).value();
    tmp.col0 = tmp.row0;
    tmp.rows = lhsValue->rows;
    tmp.cols = lhsValue->cols;
    if (byColumns)
      emitStoreByColumns(tmp, lhsValue, loc);
    else
      emitStore(tmp, lhsValue, loc);
    a = viewOf(tmp.ref, tmp.rows, tmp.cols);
  } else {
    a = materialize(lhsValue, loc);
  }
  NodePtr scale;
  NodePtr b = materializeDotRhs(a, rhs.args[1], loc, rhs.dot.transpose_rhs, &scale);
  int64_t k = rhs.dot.transpose_lhs ? a->rows : a->cols;
  std::vector<llo::Value*> ops{w.ref};
  for (llo::Value* i : w.lead) ops.push_back(i);
  ops.push_back(w.row0);
  ops.push_back(w.col0);
  for (const NodePtr& x : {a, b}) {
    ops.push_back(x->ref);
    for (llo::Value* i : x->lead) ops.push_back(i);
    ops.push_back(x->row0);
    ops.push_back(x->col0);
  }
  std::vector<int64_t> ints{
      w.rows, w.cols, k, rhs.dot.transpose_lhs, rhs.dot.transpose_rhs, int64_t(accumulate)};
  if (resident) {
    ints[5] = rhs.dot.continue_in_mxu ? 2 : 0;
    ints.push_back(rhs.dot.resident == MxuResident::Keep ? 1 : 2);
  }
  if (rhs.dot.latched) ints.insert(ints.end(), {0, rhs.dot.latched_earlier ? 2 : 1});
  if (sumMode) {
    ints.resize(8, 0);
    ints.push_back(sumMode);
  }
  if (scale) appendMatmulScale(scale, &ops, &ints);
  appendMatmulLhsDiagonal(rhs.dot.lhs_diagonal_blocks, &ints);
  if (sumMode) {
    for (const ArrayNode* a : addends) {
      ops.push_back(a->ref);
      for (llo::Value* i : a->lead) ops.push_back(i);
      ops.push_back(a->row0);
      ops.push_back(a->col0);
    }
  }
  builder().create(OpKind::Matmul, ops, {}, ints);
  return true;
}

Slice allOf(int64_t n) { return Slice{Scalar(0), n}; }

// The window of a ref's whole last two dimensions (load(), store() and
// store_together without slices).
RefWindow wholeWindowOf(const Ref& r, const Loc& loc) {
  auto s = r.shape();
  if (s.size() < 2)
    fail(loc, fmt::format("array access needs rank >= 2 after indexing; {} has rank {}",
                          r.value()->type.str(), s.size()));
  return windowOf(r, allOf(s[s.size() - 2]), allOf(s[s.size() - 1]), loc);
}

}  // namespace

Array Ref::load(Loc loc) const {
  locate(loc);
  auto s = shape();
  if (s.size() < 2)
    fail(loc, fmt::format("array access needs rank >= 2 after indexing; {} has rank {}",
                          v_->type.str(), s.size()));
  return load(allOf(s[s.size() - 2]), allOf(s[s.size() - 1]), loc);
}

Array Ref::load(Slice rows, Slice cols, Loc loc) const {
  locate(loc);
  RefWindow w = windowOf(*this, rows, cols, loc);
  ArrayNode v;
  v.kind = ArrayNode::Kind::View;
  v.rows = w.rows;
  v.cols = w.cols;
  v.dtype = dtype();
  v.ref = w.ref;
  v.lead = w.lead;
  v.row0 = w.row0;
  v.col0 = w.col0;
  v.loc = loc;
  return Array(std::make_shared<const ArrayNode>(std::move(v)));
}

void Ref::store(const Array& value, Loc loc) const {
  locate(loc);
  auto s = shape();
  if (s.size() < 2)
    fail(loc, fmt::format("array access needs rank >= 2 after indexing; {} has rank {}",
                          v_->type.str(), s.size()));
  store(allOf(s[s.size() - 2]), allOf(s[s.size() - 1]), value, loc);
}

void Ref::store(Slice rows, Slice cols, const Array& value, Loc loc) const {
  locate(loc);
  if (!value.valid()) fail(loc, "storing an empty Array");
  RefWindow w = windowOf(*this, rows, cols, loc);
  if (storeDot(w, value.node(), loc)) return;
  emitStore(w, value.node(), loc);
}

void store_together(const std::vector<Ref>& refs, const std::vector<Array>& values, Loc loc) {
  store_together(refs, values, {}, {}, loc);
}

namespace {
// store_together over the refs' whole windows (cols null) or their columns `cols`.
void storeTogetherIn(const std::vector<Ref>& refs, const Slice* cols,
                     const std::vector<Array>& values, const std::vector<Ref>& accs,
                     const std::vector<Array>& sums, const Loc& loc) {
  locate(loc);
  if (refs.empty() || refs.size() != values.size())
    fail(loc, fmt::format("store_together needs one array per ref ({} refs, {} arrays)",
                          refs.size(), values.size()));
  if (accs.size() != sums.size())
    fail(loc, fmt::format("store_together needs one accumulator per sum ({} accumulators, {} sums)",
                          accs.size(), sums.size()));
  std::vector<RefWindow> windows;
  std::vector<NodePtr> nodes;
  for (size_t k = 0; k < refs.size(); ++k) {
    if (!values[k].valid()) fail(loc, "storing an empty Array");
    const auto s = refs[k].shape();
    windows.push_back(cols && s.size() >= 2 ? windowOf(refs[k], allOf(s[s.size() - 2]), *cols, loc)
                                            : wholeWindowOf(refs[k], loc));
    nodes.push_back(values[k].node());
  }
  std::vector<RefWindow> accWindows;
  std::vector<NodePtr> sumNodes;
  for (size_t j = 0; j < accs.size(); ++j) {
    if (!sums[j].valid()) fail(loc, "summing an empty Array");
    accWindows.push_back(wholeWindowOf(accs[j], loc));
    sumNodes.push_back(sums[j].node());
  }
  emitStores(windows, nodes, loc, accWindows, sumNodes);
}
}  // namespace

void store_together(const std::vector<Ref>& refs, const std::vector<Array>& values,
                    const std::vector<Ref>& accs, const std::vector<Array>& sums, Loc loc) {
  storeTogetherIn(refs, nullptr, values, accs, sums, loc);
}

void store_together(const std::vector<Ref>& refs, Slice cols, const std::vector<Array>& values,
                    const std::vector<Ref>& accs, const std::vector<Array>& sums, Loc loc) {
  storeTogetherIn(refs, &cols, values, accs, sums, loc);
}

Scalar Ref::get(std::vector<Scalar> indices, Loc loc) const {
  locate(loc);
  if (space() != MemSpace::Smem)
    fail(loc, fmt::format("scalar reads need an SMEM ref, not {}", v_->type.str()));
  if (int(indices.size()) != rank())
    fail(loc, fmt::format("{} needs {} indices, {} given", v_->type.str(), rank(), indices.size()));
  std::vector<llo::Value*> ops{v_};
  for (const Scalar& s : lead_) ops.push_back(s.value());
  for (const Scalar& s : indices) ops.push_back(s.value());
  return Scalar(builder().create(OpKind::SLoad, ops, {llo::Type::scalar()})->result());
}

void Ref::set(std::vector<Scalar> indices, Scalar value, Loc loc) const {
  locate(loc);
  if (space() != MemSpace::Smem)
    fail(loc, fmt::format("scalar writes need an SMEM ref, not {}", v_->type.str()));
  if (int(indices.size()) != rank())
    fail(loc, fmt::format("{} needs {} indices, {} given", v_->type.str(), rank(), indices.size()));
  std::vector<llo::Value*> ops{value.value(), v_};
  for (const Scalar& s : lead_) ops.push_back(s.value());
  for (const Scalar& s : indices) ops.push_back(s.value());
  builder().create(OpKind::SStore, ops, {});
}

Window Ref::window(std::vector<Slice> slices) const {
  if (slices.empty())
    for (int64_t d : shape()) slices.push_back(allOf(d));
  return Window{*this, std::move(slices)};
}

AsyncCopy make_async_copy(Window src, Window dst, Ref sem) {
  return AsyncCopy(std::move(src), std::move(dst), std::move(sem));
}

namespace {

// Appends a window's ref and indices to `ops` and its sizes (1 for a fixed
// leading index) to `sizes`.
void appendWindow(const Window& w, std::vector<llo::Value*>& ops, std::vector<int64_t>& sizes,
                  const Loc& loc) {
  if (int(w.slices.size()) != w.ref.rank())
    fail(loc, fmt::format("a window of {} needs {} slices, {} given", w.ref.value()->type.str(),
                          w.ref.rank(), w.slices.size()));
  ops.push_back(w.ref.value());
  for (const Scalar& s : w.ref.leadIndices()) {
    ops.push_back(s.value());
    sizes.push_back(1);
  }
  for (const Slice& s : w.slices) {
    ops.push_back(s.start.value());
    sizes.push_back(s.size);
  }
}

void appendSemaphore(const Ref& sem, std::vector<llo::Value*>& ops, const Loc& loc,
                     const char* what) {
  if (!sem.value() || sem.space() != MemSpace::Semaphore || sem.rank() != 0)
    fail(loc,
         fmt::format("{} needs one semaphore (a semaphore ref indexed down to one element)", what));
  ops.push_back(sem.value());
  for (const Scalar& s : sem.leadIndices()) ops.push_back(s.value());
}

// The copy's views and sizes; the windows must have one shape.
std::vector<int64_t> appendCopy(const Window& src, const Window& dst, std::vector<llo::Value*>& ops,
                                const Loc& loc, const char* what) {
  std::vector<int64_t> sizes, dstSizes;
  appendWindow(src, ops, sizes, loc);
  appendWindow(dst, ops, dstSizes, loc);
  if (sizes != dstSizes)
    fail(loc, fmt::format("{} of a {} window into a {} window", what, llo::shapeStr(sizes),
                          llo::shapeStr(dstSizes)));
  return sizes;
}

}  // namespace

void AsyncCopy::emit(OpKind kind, const Loc& loc) const {
  locate(loc);
  std::vector<llo::Value*> ops;
  std::vector<int64_t> sizes = appendCopy(src_, dst_, ops, loc, "async copy");
  appendSemaphore(sem_, ops, loc, "an async copy");
  builder().create(kind, ops, {}, sizes);
}

RemoteCopy::RemoteCopy(Window src, Window dst, Ref send_sem, Ref recv_sem, Scalar device_id,
                       Loc loc)
    : src_(std::move(src)),
      dst_(std::move(dst)),
      send_(std::move(send_sem)),
      recv_(std::move(recv_sem)),
      device_(device_id) {
  auto space = [&](const Ref& r, const char* side) {
    if (r.space() != MemSpace::Hbm && r.space() != MemSpace::Vmem)
      fail(loc, fmt::format("a remote copy's {} must be in HBM or VMEM, not {}", side,
                            r.value()->type.str()));
  };
  space(src_.ref, "source");
  space(dst_.ref, "destination");
  // The ICI DMA moves bytes as they are: HBM holds bf16 / int8 densely, VMEM
  // one element per word, so such a copy would need the widening DMA.
  if (src_.ref.space() != dst_.ref.space() && isa::dtypeBytes(src_.ref.dtype()) < 4)
    fail(loc, fmt::format("a remote copy of {} between HBM and VMEM would need the widening DMA, "
                          "which remote copies do not have: copy within one memory space",
                          isa::dtypeName(src_.ref.dtype())));
  if (src_.ref.dtype() != dst_.ref.dtype())
    fail(loc, "a remote copy's source and destination dtypes differ");
}

void RemoteCopy::start(Loc loc) const {
  locate(loc);
  std::vector<llo::Value*> ops{device_.value()};
  std::vector<int64_t> sizes = appendCopy(src_, dst_, ops, loc, "remote copy");
  appendSemaphore(send_, ops, loc, "a remote copy's send side");
  appendSemaphore(recv_, ops, loc, "a remote copy's receive side");
  builder().create(OpKind::RemoteDmaStart, ops, {}, sizes);
}

// A wait on either semaphore is the local copy's wait: the code generator
// waits for as many completions as the copy has descriptors on both ends.
void RemoteCopy::wait(const Ref& sem, const Loc& loc) const {
  locate(loc);
  std::vector<llo::Value*> ops;
  std::vector<int64_t> sizes = appendCopy(src_, dst_, ops, loc, "remote copy");
  appendSemaphore(sem, ops, loc, "a remote copy's wait");
  builder().create(OpKind::DmaWait, ops, {}, sizes);
}

void RemoteCopy::wait_send(Loc loc) const { wait(send_, loc); }
void RemoteCopy::wait_recv(Loc loc) const { wait(recv_, loc); }

RemoteCopy make_async_remote_copy(Window src, Window dst, Ref send_sem, Ref recv_sem,
                                  Scalar device_id, Loc loc) {
  return RemoteCopy(std::move(src), std::move(dst), std::move(send_sem), std::move(recv_sem),
                    device_id, loc);
}
RemoteCopy make_async_remote_copy(const Ref& src, const Ref& dst, Ref send_sem, Ref recv_sem,
                                  Scalar device_id, Loc loc) {
  return RemoteCopy(src.window(), dst.window(), std::move(send_sem), std::move(recv_sem), device_id,
                    loc);
}

namespace {
// Semaphore amounts are the sync instructions' 16-bit immediates.
void requireSyncImmediate(int64_t v, const Loc& loc, const char* call, const char* what,
                          const char* immediate) {
  if (v < 0 || v > 0xFFFF)
    fail(loc, fmt::format("{} {}: {} is a constant in 0 .. 65535 (the machine's {})", call, v, what,
                          immediate));
}

void signalOp(const Ref& sem, int64_t inc, const Scalar* device, const Loc& loc) {
  locate(loc);
  requireSyncImmediate(inc, loc, "semaphore_signal by", "the amount",
                       "sync.signal / sync.remote immediate");
  std::vector<llo::Value*> ops;
  if (device) ops.push_back(device->value());
  appendSemaphore(sem, ops, loc, "semaphore_signal");
  builder().create(OpKind::SemSignal, ops, {}, {inc, device ? 1 : 0});
}
}  // namespace

void semaphore_signal(const Ref& sem, int64_t inc, Loc loc) { signalOp(sem, inc, nullptr, loc); }
void semaphore_signal(const Ref& sem, int64_t inc, Scalar device_id, Loc loc) {
  signalOp(sem, inc, &device_id, loc);
}

void semaphore_wait(const Ref& sem, int64_t value, Loc loc) {
  locate(loc);
  requireSyncImmediate(value, loc, "semaphore_wait for", "the value", "sync.wait immediate");
  std::vector<llo::Value*> ops;
  appendSemaphore(sem, ops, loc, "semaphore_wait");
  builder().create(OpKind::SemWait, ops, {}, {value});
}

void AsyncCopy::start(Loc loc) const { emit(OpKind::DmaStart, loc); }
void AsyncCopy::wait(Loc loc) const { emit(OpKind::DmaWait, loc); }

void when(Scalar cond, const std::function<void()>& then, Loc loc) {
  locate(loc);
  int64_t c;
  if (cond.isConstant(&c)) {
    if (c) then();
    return;
  }
  llo::Op* op = builder().ifOp(cond.value(), false);
  inBlock(&op->regions[0], then);
}

void when_else(Scalar cond, const std::function<void()>& then,
               const std::function<void()>& otherwise, Loc loc) {
  locate(loc);
  llo::Op* op = builder().ifOp(cond.value(), true);
  inBlock(&op->regions[0], then);
  inBlock(&op->regions[1], otherwise);
}

void fori_loop(Scalar lower, Scalar upper, const std::function<void(Scalar)>& body, Loc loc) {
  locate(loc);
  llo::Op* op = builder().forLoop(lower.value(), upper.value(), 1, "i");
  inBlock(&op->regions[0], [&] { body(Scalar(op->regions[0].args[0])); });
}

Scalar fori_loop(Scalar lower, Scalar upper, const std::function<Scalar(Scalar, Scalar)>& body,
                 Scalar init, Loc loc) {
  locate(loc);
  llo::Op* op = builder().forLoop(lower.value(), upper.value(), 1, "i", {init.value()});
  inBlock(&op->regions[0], [&] {
    Scalar next = body(Scalar(op->regions[0].args[0]), Scalar(op->regions[0].args[1]));
    locate(loc);
    builder().create(llo::OpKind::Yield, {next.value()}, {});
  });
  return Scalar(op->results[0]);
}

Array fori_loop(Scalar lower, Scalar upper, const std::function<Array(Scalar, Array)>& body,
                const Array& init, Loc loc) {
  return fori_loop(
      lower, upper,
      [&](Scalar i, const std::vector<Array>& c) { return std::vector<Array>{body(i, c[0])}; },
      std::vector<Array>{init}, loc)[0];
}

std::vector<Array> fori_loop(
    Scalar lower, Scalar upper,
    const std::function<std::vector<Array>(Scalar, const std::vector<Array>&)>& body,
    const std::vector<Array>& init, Loc loc) {
  locate(loc);
  std::vector<llo::Value*> inits;
  std::vector<size_t> first;  // each carry's first tile
  for (size_t k = 0; k < init.size(); ++k) {
    if (!init[k].valid()) fail(loc, fmt::format("fori_loop: carry {} is an empty Array", k));
    first.push_back(inits.size());
    for (llo::Value* t : emitTiles(init[k].node())) inits.push_back(t);
  }
  first.push_back(inits.size());
  if (inits.size() > size_t(kMaxCarriedTiles))
    fail(loc, fmt::format("fori_loop carries {} (8,128) tiles; at most {} stay in vector "
                          "registers (keep bigger state in a scratch ref)",
                          inits.size(), kMaxCarriedTiles));
  auto arrays = [&](const std::vector<llo::Value*>& vals) {
    std::vector<Array> out;
    for (size_t k = 0; k < init.size(); ++k)
      out.emplace_back(tilesNode({vals.begin() + first[k], vals.begin() + first[k + 1]},
                                 init[k].rows(), init[k].cols(), init[k].dtype()));
    return out;
  };
  llo::Op* op = builder().forLoop(lower.value(), upper.value(), 1, "i", inits);
  inBlock(&op->regions[0], [&] {
    const auto& args = op->regions[0].args;
    std::vector<Array> next =
        body(Scalar(args[0]), arrays(std::vector<llo::Value*>(args.begin() + 1, args.end())));
    locate(loc);
    if (next.size() != init.size())
      fail(loc,
           fmt::format("fori_loop: the body returned {} carries for {}", next.size(), init.size()));
    std::vector<llo::Value*> yielded;
    for (size_t k = 0; k < next.size(); ++k) {
      if (!next[k].valid() || next[k].rows() != init[k].rows() ||
          next[k].cols() != init[k].cols() || next[k].dtype() != init[k].dtype())
        fail(loc,
             fmt::format("fori_loop: carry {} changes from {}[{},{}] to {}", k,
                         isa::dtypeName(init[k].dtype()), init[k].rows(), init[k].cols(),
                         next[k].valid() ? fmt::format("{}[{},{}]", isa::dtypeName(next[k].dtype()),
                                                       next[k].rows(), next[k].cols())
                                         : std::string("an empty Array")));
      for (llo::Value* t : emitTiles(next[k].node())) yielded.push_back(t);
    }
    builder().create(llo::OpKind::Yield, yielded, {});
  });
  return arrays(op->results);
}

void mxu_start(const Array& x, int64_t n, int64_t set, Loc loc) {
  locate(loc);
  if (!x.valid() || x.dtype() != BF16)
    fail(loc, "mxu_start streams a bf16 array through the latched weights");
  NodePtr v = materialize(x.node(), loc);
  std::vector<llo::Value*> ops{v->ref};
  for (llo::Value* i : v->lead) ops.push_back(i);
  ops.push_back(v->row0);
  ops.push_back(v->col0);
  builder().create(OpKind::MxuStart, ops, {}, {v->rows, n, v->cols, set});
}

void mxu_finish(const Ref& dst, Slice rows, Slice cols, int64_t k, int64_t set, bool accumulate,
                Loc loc) {
  locate(loc);
  RefWindow w = windowOf(dst, rows, cols, loc);
  if (dst.dtype() != F32) fail(loc, "mxu_finish stores f32 results");
  std::vector<llo::Value*> ops{w.ref};
  for (llo::Value* i : w.lead) ops.push_back(i);
  ops.push_back(w.row0);
  ops.push_back(w.col0);
  builder().create(OpKind::MxuFinish, ops, {}, {w.rows, w.cols, k, set, int64_t(accumulate)});
}

}  // namespace tpusim::kernels::dsl
