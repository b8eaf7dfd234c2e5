// Weights kept on the MXUs (dsl::mxu_latch and dots with DotOptions::latched).
// mxu_latch pushes K chunk c of a K x N bf16 weight matrix (N rows of 8 at a
// time, mxu.size rows per chunk) onto MXU c and latches it. A latched matmul
// then streams each 8-row LHS tile's chunk c through MXU c (mm into a slot of
// that MXU's ring, as lowerMatmul hands them out), pops the chunks' results
// and adds them on the VPU in k order (chunk 0 + chunk 1 + ...: the order in
// which mma accumulates them on one MXU, so the bits are a plain matmul's),
// then adds the old destination when accumulating. No pushes: a loop body can
// issue small matmuls against weights latched once before it.
//
// Only the layout the flash kernel needs: mxu.size = 128 lanes (a chunk is one
// VMEM column tile), N <= 128, every K chunk full. The lowerer remembers the
// latched shape until another matmul pushes its own weights (program order;
// interpret mode checks the order as it runs).
#include <fmt/format.h>

#include "kernels/codegen/Lowering.h"
#include "kernels/llo/Printer.h"

namespace tpusim::kernels::codegen {

using isa::Opcode;

namespace {

MOperand I(int64_t v) { return MOperand::imm(v); }

}  // namespace

void Lowerer::checkLatchable(const llo::Op& op, int64_t K, int64_t N) const {
  const int S = t_.mxuSize;
  std::string why;
  if (S != llo::kLanes)
    why = fmt::format("weights latched on the MXUs need mxu.size 128, not {}", S);
  else if (N > S)
    why = fmt::format("latched weights of {} columns are wider than an MXU ({})", N, S);
  else if (K % S != 0 || K / S > t_.mxuCount)
    why = fmt::format("latched weights of {} rows are not 1 to {} whole chunks of {} (one per MXU)",
                      K, t_.mxuCount, S);
  if (why.empty()) return;
  std::string text = llo::printOp(op);
  throw CodegenError(fmt::format("{}:{}: error: cannot compile '{}': {}", op.loc.file, op.loc.line,
                                 text.substr(0, text.find('\n')), why));
}

// An 8-row tile of a ref (rows [row, row + 8) of VMEM column tile `tile`).
MOperand Lowerer::loadTile(const RefPlace& p, const ScalarVal& origin, int64_t off,
                           int64_t sublanes) {
  MOperand b, d = fn_.newReg(RegClass::Vector);
  int64_t o;
  ScalarVal at = addImm(origin, off);
  baseAndOffset(at, &b, &o);
  MInstr mi = makeInstr(Opcode::VLd, {d, b, I(o), I(1), I(sublanes)});
  mi.mem = {MemAccess::Space::Vmem, p.region, false, at.isConst ? at.c : -1, 8};
  emit(mi);
  return d;
}

ScalarVal Lowerer::viewOrigin(const llo::ViewRange& v) {
  std::vector<ScalarVal> idx;
  for (const llo::Value* i : v.indices) idx.push_back(scalar(i));
  return vmemRow(place(v.ref), idx);
}

void Lowerer::lowerMxuLatch(const llo::Op& op) {
  const int64_t K = op.ints[0], N = op.ints[1];
  checkLatchable(op, K, N);
  auto views = llo::opViews(op);
  const RefPlace& p = place(views[0].ref);
  ScalarVal w0 = viewOrigin(views[0]);
  const int S = t_.mxuSize;
  // The MXUs' pushes interleaved (one matrix-push slot per bundle), then the latches.
  for (int64_t q = 0; q < S / 8; ++q)
    for (int64_t c = 0; c < K / S; ++c)
      emit(Opcode::MxuWPushBf16, {I(c), loadTile(p, w0, c * S + q * 8, 0xFF)});
  for (int64_t c = 0; c < K / S; ++c) emit(Opcode::MxuLatch, {I(c)});
  latched_ = {K, N};
}

// Pops row tile rt's chunk results (slot slot0[c] + i of MXU c), adds them in
// k order, adds the old destination tile when accumulating, and stores.
void Lowerer::popSumStore(const RefPlace& dstP, const ScalarVal& dst0, int64_t M, int64_t N,
                          int64_t chunks, int64_t rt, const std::vector<int64_t>& slot0, int64_t i,
                          bool accumulate) {
  const int64_t valid = std::min<int64_t>(8, M - rt * 8);
  MOperand sum;
  for (int64_t c = 0; c < chunks; ++c) {
    MOperand r = fn_.newReg(RegClass::Vector);
    emit(Opcode::MxuPop, {r, I(c), I(slot0[size_t(c)] + i)});
    if (c == 0) {
      sum = r;
      continue;
    }
    MOperand s = fn_.newReg(RegClass::Vector);
    emit(Opcode::VAddF32, {s, sum, r});
    sum = s;
  }
  if (accumulate) {
    MOperand s = fn_.newReg(RegClass::Vector);
    emit(Opcode::VAddF32, {s, loadTile(dstP, dst0, rt * 8, 0xFF), sum});
    sum = s;
  }
  // Lanes past N are products with the weight tile's padding lanes:
  // columns the destination does not have (stored only for N = 128).
  MOperand b;
  int64_t o;
  ScalarVal at = addImm(dst0, rt * 8);
  baseAndOffset(at, &b, &o);
  MInstr st;
  if (N == llo::kLanes) {
    st = makeInstr(Opcode::VSt, {sum, b, I(o), I(1), I((1 << valid) - 1)});
  } else {
    MOperand iota = fn_.newReg(RegClass::Vector), lim = fn_.newReg(RegClass::Vector);
    MOperand iotaS = fn_.newReg(RegClass::Vector), limS = fn_.newReg(RegClass::Vector);
    MOperand m = fn_.newReg(RegClass::Mask), m2 = fn_.newReg(RegClass::Mask);
    MOperand ms = fn_.newReg(RegClass::Mask);
    emit(Opcode::VIotaLane, {iota});
    emit(Opcode::VImm, {lim, I(N)});
    emit(Opcode::VCmpLtS32, {m, iota, lim});
    emit(Opcode::VIotaSub, {iotaS});
    emit(Opcode::VImm, {limS, I(valid)});
    emit(Opcode::VCmpLtS32, {m2, iotaS, limS});
    emit(Opcode::MAnd, {ms, m, m2});
    st = makeInstr(Opcode::VStM, {sum, b, I(o), ms});
  }
  st.mem = {MemAccess::Space::Vmem, dstP.region, true, at.isConst ? at.c : -1, 8};
  emit(st);
}

void Lowerer::checkLatched(const llo::Op& op, int64_t K, int64_t N) const {
  checkLatchable(op, K, N);
  if (latched_ == std::pair<int64_t, int64_t>{K, N}) return;
  // Latched in an earlier grid step (DotOptions::latched_earlier): the grid's
  // order is a run-time one, which interpret mode checks.
  if (op.kind == llo::OpKind::Matmul && op.ints.size() > 7 && op.ints[7] == 2) return;
  std::string text = llo::printOp(op);
  throw CodegenError(fmt::format(
      "{}:{}: error: cannot compile '{}': no {}x{} weights latched before it (mxu_latch, "
      "with no other matmul in between)",
      op.loc.file, op.loc.line, text.substr(0, text.find('\n')), K, N));
}

void Lowerer::lowerMatmulLatched(const llo::Op& op) {
  const int64_t M = op.ints[0], N = op.ints[1], K = op.ints[2];
  const bool accumulate = op.ints[5] == 1;
  checkLatched(op, K, N);
  auto views = llo::opViews(op);
  const RefPlace& dstP = place(views[0].ref);
  const RefPlace& lhsP = place(views[1].ref);
  const int64_t lhsRows = llo::tiledLayout(lhsP.type.shape).paddedRows;
  // Tiles are offsets of the views' origins (register + constant), folded
  // into the immediates: accesses at run-time rows keep the base register
  // the softmax's accesses use, so the scheduler sees which rows they touch.
  ScalarVal dst0 = viewOrigin(views[0]), lhs0 = viewOrigin(views[1]);
  const int S = t_.mxuSize;
  const int64_t chunks = K / S, rowTiles = (M + 7) / 8, slots = t_.accSlots;
  nextSlot_.resize(size_t(t_.mxuCount), 0);
  // Row tiles in groups of at most `slots`: each group's mms, then its pops.
  for (int64_t g0 = 0; g0 < rowTiles; g0 += slots) {
    const int64_t n = std::min(slots, rowTiles - g0);
    std::vector<int64_t> slot0(static_cast<size_t>(chunks), 0);
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t& next = nextSlot_[size_t(c)];
      if (next + n > slots) next = 0;
      slot0[size_t(c)] = next;
      next += n;
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t rt = g0 + i, valid = std::min<int64_t>(8, M - rt * 8);
      for (int64_t c = 0; c < chunks; ++c)
        emit(Opcode::MxuMmBf16, {I(c), loadTile(lhsP, lhs0, c * lhsRows + rt * 8, (1 << valid) - 1),
                                 I(slot0[size_t(c)] + i)});
    }
    for (int64_t i = 0; i < n; ++i)
      popSumStore(dstP, dst0, M, N, chunks, g0 + i, slot0, i, accumulate);
  }
  bodyFlops += 2.0 * double(M) * double(N) * double(K);
}

// Slot set k of a split latched matmul: slots [k R, (k + 1) R) of every MXU
// (R = its row tiles), the same on each MXU for its chunk.
std::vector<int64_t> Lowerer::slotSet(const llo::Op& op, int64_t M, int64_t chunks) {
  const int64_t R = (M + 7) / 8, set = op.ints[3];
  if ((set + 1) * R > t_.accSlots) {
    std::string text = llo::printOp(op);
    throw CodegenError(fmt::format(
        "{}:{}: error: cannot compile '{}': slot set {} of {} row tiles needs slots up to {}, "
        "the MXU has {}",
        op.loc.file, op.loc.line, text.substr(0, text.find('\n')), set, R, (set + 1) * R,
        t_.accSlots));
  }
  return std::vector<int64_t>(static_cast<size_t>(chunks), set * R);
}

void Lowerer::lowerMxuStart(const llo::Op& op) {
  const int64_t M = op.ints[0], N = op.ints[1], K = op.ints[2], set = op.ints[3];
  checkLatched(op, K, N);
  const int64_t chunks = K / t_.mxuSize;
  std::vector<int64_t> slot0 = slotSet(op, M, chunks);
  auto views = llo::opViews(op);
  const RefPlace& lhsP = place(views[0].ref);
  const int64_t lhsRows = llo::tiledLayout(lhsP.type.shape).paddedRows;
  ScalarVal lhs0 = viewOrigin(views[0]);
  for (int64_t rt = 0; rt < (M + 7) / 8; ++rt) {
    const int64_t valid = std::min<int64_t>(8, M - rt * 8);
    for (int64_t c = 0; c < chunks; ++c)
      emit(Opcode::MxuMmBf16, {I(c), loadTile(lhsP, lhs0, c * lhsRows + rt * 8, (1 << valid) - 1),
                               I(slot0[size_t(c)] + rt)});
  }
  // A finish of this set earlier in this block pops the previous iteration's
  // results: the block is a loop body that hands them across its back edge.
  auto f = finishedIn_.find(set);
  auto st = startedIn_.find(set);
  if (f != finishedIn_.end() && f->second == cur_ &&
      (st == startedIn_.end() || st->second != cur_)) {
    fn_.blocks[size_t(cur_)].mxuLoop = true;
    fn_.blocks[size_t(cur_)].mxuEntry = false;
  }
  startedIn_[set] = cur_;
  bodyFlops += 2.0 * double(M) * double(N) * double(K);
}

void Lowerer::lowerMxuFinish(const llo::Op& op) {
  const int64_t M = op.ints[0], N = op.ints[1], K = op.ints[2], set = op.ints[3];
  checkLatchable(op, K, N);
  const int64_t chunks = K / t_.mxuSize;
  std::vector<int64_t> slot0 = slotSet(op, M, chunks);
  auto views = llo::opViews(op);
  const RefPlace& dstP = place(views[0].ref);
  ScalarVal dst0 = viewOrigin(views[0]);
  for (int64_t rt = 0; rt < (M + 7) / 8; ++rt)
    popSumStore(dstP, dst0, M, N, chunks, rt, slot0, rt, op.ints[4] == 1);
  // Results an mm of another block left: this block waits for them on entry
  // (unless it turns out to be the loop body that started them, above). A
  // block that is no such loop body drains its mms before it ends (their
  // result latency is its tail), so results it started are ready here.
  auto st = startedIn_.find(set);
  const bool drained =
      st != startedIn_.end() && st->second != cur_ && !fn_.blocks[size_t(st->second)].mxuLoop;
  if ((st == startedIn_.end() || st->second != cur_) && !drained &&
      !fn_.blocks[size_t(cur_)].mxuLoop)
    fn_.blocks[size_t(cur_)].mxuEntry = true;
  finishedIn_[set] = cur_;
}

}  // namespace tpusim::kernels::codegen
