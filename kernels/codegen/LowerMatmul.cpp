// Lowering of the block matmul to MXU sequences. Output tiles are grouped by
// the result-buffer slots (acc_slots row tiles of 8 rows per group) and the
// (group, column tile) work items are dealt round-robin to the MXUs. An item
// keeps its group's results in the MXU result slots across all K chunks: per
// chunk it pushes a 128x128 weight tile, latches, and streams the group's LHS
// tiles (mm for the first chunk, mma after); only at the end are the slots
// popped and stored. All K chunks of one output tile accumulate on one MXU in
// k order, which is the numerics interpret mode reproduces.
//
// Emission order is the schedule we want (the list scheduler mostly keeps
// it): round r holds item r of every MXU, and within a round the chunks of the
// MXUs are interleaved chunk by chunk, so the weight pushes of one MXU's next
// chunk overlap the LHS streams of the others and of its own current chunk;
// the pops of a round come after the round's last chunk and before the next
// round's first mm on that MXU (program order per MXU).
#include <fmt/format.h>

#include <map>

#include "kernels/codegen/Lowering.h"
#include "kernels/llo/Printer.h"

namespace tpusim::kernels::codegen {

using isa::Opcode;

namespace {
MOperand I(int64_t v) { return MOperand::imm(v); }
}  // namespace

void Lowerer::lowerMatmul(const llo::Op& op) {
  auto views = llo::opViews(op);
  int64_t M = op.ints[0], N = op.ints[1], K = op.ints[2];
  bool transLhs = op.ints[3], transRhs = op.ints[4], accumulate = op.ints[5];
  auto fail = [&](const std::string& why) {
    std::string text = llo::printOp(op);
    throw CodegenError(fmt::format("{}:{}: error: cannot compile '{}': {}", op.loc.file,
                                   op.loc.line, text.substr(0, text.find('\n')), why));
  };
  const int S = t_.mxuSize;
  if (S != llo::kLanes) fail(fmt::format("MXUs of size {} are not supported yet (only 128)", S));
  if (transLhs) fail("a transposed LHS (needs the XLU transpose) is not supported yet");
  bool s8 = views[1].ref->type.dtype == llo::DType::S8;
  auto origin = [&](const llo::ViewRange& v) {
    std::vector<ScalarVal> idx;
    for (const llo::Value* i : v.indices) idx.push_back(scalar(i));
    return vmemRow(place(v.ref), idx);
  };
  const RefPlace& dstP = place(views[0].ref);
  const RefPlace& lhsP = place(views[1].ref);
  const RefPlace& rhsP = place(views[2].ref);
  ScalarVal dst0 = origin(views[0]), lhs0 = origin(views[1]), rhs0 = origin(views[2]);
  int64_t dstRows = llo::tiledLayout(dstP.type.shape).paddedRows;
  int64_t lhsRows = llo::tiledLayout(lhsP.type.shape).paddedRows;
  int64_t rhsRows = llo::tiledLayout(rhsP.type.shape).paddedRows;
  // Base registers once; tiles are constant offsets from them.
  auto baseOf = [&](const ScalarVal& v) { return v.isConst ? v : ScalarVal{false, 0, reg(v)}; };
  dst0 = baseOf(dst0);
  lhs0 = baseOf(lhs0);
  rhs0 = baseOf(rhs0);
  // Rows beyond the 16-bit offset of a vld/vst are reached from one extra base
  // register per 32 Ki-row window (made once), not one per access.
  constexpr int64_t kWindow = 32768;
  std::map<std::pair<int64_t, int64_t>, MOperand> windows;  // (base id, window) -> register
  auto at = [&](const ScalarVal& base, int64_t off, MOperand* b, int64_t* o) {
    int64_t row = base.isConst ? base.c + off : off;
    if (base.isConst && row >= 0 && row < kWindow)
      return baseAndOffset(ScalarVal{true, row, {}}, b, o);
    if (!base.isConst && off >= 0 && off < kWindow) {
      *b = base.reg;
      *o = off;
      return;
    }
    int64_t w = row >= 0 ? row / kWindow : -((-row + kWindow - 1) / kWindow);
    std::pair<int64_t, int64_t> key{base.isConst ? -1 : base.reg.value, w};
    auto it = windows.find(key);
    if (it == windows.end())
      it = windows
               .emplace(key, reg(base.isConst ? ScalarVal{true, w * kWindow, {}}
                                              : addImm(base, w * kWindow)))
               .first;
    *b = it->second;
    *o = row - w * kWindow;
  };
  auto load = [&](const RefPlace& p, const ScalarVal& base, int64_t off, int64_t mask) {
    MOperand b, d = fn_.newReg(RegClass::Vector);
    int64_t o;
    at(base, off, &b, &o);
    MInstr mi = makeInstr(Opcode::VLd, {d, b, I(o), I(1), I(mask)});
    mi.mem = {MemAccess::Space::Vmem, p.region, false, base.isConst ? base.c + off : -1, 8};
    emit(mi);
    return d;
  };
  int64_t kRem = K % S;  // valid K of a partial last chunk (0 = none)
  int64_t kChunks = (K + S - 1) / S, nTiles = (N + 127) / 128, rowTiles = (M + 7) / 8;
  int64_t slots = t_.accSlots;
  // Lanes >= kRem of the last chunk's LHS (and of transposed weights) are padding.
  MOperand laneMask;
  if (kRem) {
    MOperand iota = fn_.newReg(RegClass::Vector), lim = fn_.newReg(RegClass::Vector);
    laneMask = fn_.newReg(RegClass::Mask);
    emit(Opcode::VIotaLane, {iota});
    emit(Opcode::VImm, {lim, I(kRem)});
    emit(Opcode::VCmpLtS32, {laneMask, iota, lim});
  }
  MOperand zero;
  if (kRem) {
    zero = fn_.newReg(RegClass::Vector);
    emit(Opcode::VImm, {zero, I(0)});
  }
  auto maskLanes = [&](MOperand v) {
    MOperand d = fn_.newReg(RegClass::Vector);
    emit(Opcode::VSel, {d, laneMask, v, zero});
    return d;
  };
  Opcode wpush = transRhs ? (s8 ? Opcode::MxuWPushTS8 : Opcode::MxuWPushTBf16)
                          : (s8 ? Opcode::MxuWPushS8 : Opcode::MxuWPushBf16);
  Opcode mm = s8 ? Opcode::MxuMmS8 : Opcode::MxuMmBf16;
  Opcode mma = s8 ? Opcode::MxuMmaS8 : Opcode::MxuMmaBf16;
  // Work items (group of row tiles, column tile), dealt round-robin to the MXUs.
  struct Item {
    int64_t g0, gTiles, j;
  };
  std::vector<Item> items;
  for (int64_t g0 = 0; g0 < rowTiles; g0 += slots)
    for (int64_t j = 0; j < nTiles; ++j) items.push_back({g0, std::min(slots, rowTiles - g0), j});
  const int64_t mxus = t_.mxuCount;
  // Weight push p of chunk kc of an item (8 rows, or 8 columns when transposed);
  // pushesOf: how many a chunk needs.
  auto pushesOf = [&](const Item& it, int64_t kc) -> int64_t {
    bool partial = kRem && kc == kChunks - 1;
    if (!transRhs) return ((partial ? kRem : S) + 7) / 8;
    return (std::min<int64_t>(128, N - it.j * 128) + 7) / 8;
  };
  auto wpushOne = [&](const Item& it, int mxu, int64_t kc, int64_t p) {
    bool partial = kRem && kc == kChunks - 1;
    int64_t j = it.j;
    if (!transRhs) {
      // Weight rows kc*128 + 8p of column tile j; rows >= K stay zero.
      int64_t rows = partial ? kRem : S;
      int64_t valid = std::min<int64_t>(8, rows - p * 8);
      MOperand w = load(rhsP, rhs0, j * rhsRows + kc * S + p * 8, (1 << valid) - 1);
      emit(wpush, {I(mxu), w});
    } else {
      // rhs is (N, K): rows n = 128j + 8p, lanes = k of chunk kc.
      int64_t cols = std::min<int64_t>(128, N - j * 128);
      int64_t valid = std::min<int64_t>(8, cols - p * 8);
      MOperand w = load(rhsP, rhs0, kc * rhsRows + j * 128 + p * 8, (1 << valid) - 1);
      if (partial) w = maskLanes(w);
      emit(wpush, {I(mxu), w});
    }
  };
  // LHS tile i of the item's group through the latched chunk kc.
  auto mmOne = [&](const Item& it, int mxu, int64_t kc, int64_t i) {
    bool partial = kRem && kc == kChunks - 1;
    int64_t rt = it.g0 + i;
    int64_t valid = std::min<int64_t>(8, M - rt * 8);
    MOperand x = load(lhsP, lhs0, kc * lhsRows + rt * 8, (1 << valid) - 1);
    if (partial) x = maskLanes(x);
    emit(kc == 0 ? mm : mma, {I(mxu), x, I(i)});
  };
  auto popTile = [&](const Item& it, int mxu, int64_t i) {
    int64_t j = it.j;
    {
      int64_t rt = it.g0 + i;
      int64_t valid = std::min<int64_t>(8, M - rt * 8);
      int64_t lanes = std::min<int64_t>(128, N - j * 128);
      MOperand r = fn_.newReg(RegClass::Vector);
      emit(Opcode::MxuPop, {r, I(mxu), I(i)});
      int64_t off = j * dstRows + rt * 8;
      if (accumulate) {
        MOperand old = load(dstP, dst0, off, 0xFF), sum = fn_.newReg(RegClass::Vector);
        emit(s8 ? Opcode::VAddS32 : Opcode::VAddF32, {sum, old, r});
        r = sum;
      }
      MOperand b;
      int64_t o;
      at(dst0, off, &b, &o);
      MemAccess mem{MemAccess::Space::Vmem, dstP.region, true, dst0.isConst ? dst0.c + off : -1, 8};
      if (lanes == 128) {
        MInstr st = makeInstr(Opcode::VSt, {r, b, I(o), I(1), I((1 << valid) - 1)});
        st.mem = mem;
        emit(st);
      } else {
        MOperand iota = fn_.newReg(RegClass::Vector), lim = fn_.newReg(RegClass::Vector);
        MOperand m = fn_.newReg(RegClass::Mask), ms = fn_.newReg(RegClass::Mask);
        MOperand iotaS = fn_.newReg(RegClass::Vector), limS = fn_.newReg(RegClass::Vector);
        MOperand m2 = fn_.newReg(RegClass::Mask);
        emit(Opcode::VIotaLane, {iota});
        emit(Opcode::VImm, {lim, I(lanes)});
        emit(Opcode::VCmpLtS32, {m, iota, lim});
        emit(Opcode::VIotaSub, {iotaS});
        emit(Opcode::VImm, {limS, I(valid)});
        emit(Opcode::VCmpLtS32, {m2, iotaS, limS});
        emit(Opcode::MAnd, {ms, m, m2});
        MInstr st = makeInstr(Opcode::VStM, {r, b, I(o), ms});
        st.mem = mem;
        emit(st);
      }
    }
  };
  // Per MXU, the stream of weight tiles (item, K chunk) it works through.
  struct Tile {
    size_t item;
    int64_t kc;
  };
  std::vector<std::vector<Tile>> stream(static_cast<size_t>(mxus));
  for (size_t it = 0; it < items.size(); ++it)
    for (int64_t kc = 0; kc < kChunks; ++kc) stream[it % size_t(mxus)].push_back({it, kc});
  size_t length = stream[0].size();
  // Software-pipelined emission, the MXUs interleaved op by op: while tile t
  // streams its LHS tiles (mm, LHS port), tile t + 1's weights are pushed
  // (weight port); the latch of t + 1 follows tile t's last mm. When tile t
  // starts a new item, the previous item's slot s is popped just before the
  // mm that overwrites it.
  for (int64_t p = 0; p < 16; ++p)
    for (size_t m = 0; m < size_t(mxus); ++m)
      if (!stream[m].empty() && p < pushesOf(items[stream[m][0].item], stream[m][0].kc))
        wpushOne(items[stream[m][0].item], int(m), stream[m][0].kc, p);
  for (size_t m = 0; m < size_t(mxus); ++m)
    if (!stream[m].empty()) emit(Opcode::MxuLatch, {I(int64_t(m))});
  for (size_t t = 0; t < length; ++t) {
    for (int64_t i = 0; i < std::max<int64_t>(slots, 16); ++i)
      for (size_t m = 0; m < size_t(mxus); ++m) {
        if (t >= stream[m].size()) continue;
        const Tile& cur = stream[m][t];
        const Item& it = items[cur.item];
        if (cur.kc == 0 && t > 0 && i < items[stream[m][t - 1].item].gTiles)
          popTile(items[stream[m][t - 1].item], int(m), i);
        if (i < it.gTiles) mmOne(it, int(m), cur.kc, i);
        if (t + 1 < stream[m].size()) {
          const Tile& next = stream[m][t + 1];
          if (i < pushesOf(items[next.item], next.kc))
            wpushOne(items[next.item], int(m), next.kc, i);
        }
      }
    for (size_t m = 0; m < size_t(mxus); ++m)
      if (t + 1 < stream[m].size()) emit(Opcode::MxuLatch, {I(int64_t(m))});
  }
  for (int64_t i = 0; i < slots; ++i)
    for (size_t m = 0; m < size_t(mxus); ++m)
      if (!stream[m].empty() && i < items[stream[m].back().item].gTiles)
        popTile(items[stream[m].back().item], int(m), i);
  bodyFlops += 2.0 * double(M) * double(N) * double(K);
}

}  // namespace tpusim::kernels::codegen
