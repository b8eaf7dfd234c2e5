// Lowering of the block matmul to MXU sequences. Output tiles are grouped by
// the result-buffer slots (acc_slots row tiles of 8 rows per group, fewer
// when that leaves MXUs idle) and the (group, column tile) work items are
// dealt round-robin to the MXUs. An item
// keeps its group's results in the MXU result slots across all K chunks: per
// chunk it pushes an N x N weight tile (N = mxu.size), latches, and streams the group's LHS
// tiles (mm for the first chunk, mma after); only at the end are the slots
// popped and stored. All K chunks of one output tile accumulate on one MXU in
// k order, which is the numerics interpret mode reproduces. With N = 256 every
// MXU row operand is a register pair (MInstr::pairHi); with N < 128 the chunks
// and column tiles sit at lane offsets of the 128-lane VMEM tiles and are
// rotated on the XLU.
//
// Emission order is the schedule we want (the list scheduler mostly keeps
// it): round r holds item r of every MXU, and within a round the chunks of the
// MXUs are interleaved chunk by chunk, so the weight pushes of one MXU's next
// chunk overlap the LHS streams of the others and of its own current chunk;
// the pops of a round come after the round's last chunk and before the next
// round's first mm on that MXU (program order per MXU).
//
// Packed int8 (s8 x s8 on an MXU with mxu.int8_rate 2): a K chunk is 2N deep;
// each weight row and LHS tile is `vpack.b8` of its two K parts, [0, N) in the
// low byte and [N, 2N) in the high byte (isa/README.md, "MXU", packed int8),
// and streams through the s8x2 ops: half the chunks, pushes and mms. The s32
// sums are exact, so the result equals the unpacked one bit for bit. A weight
// block the DMA copied paired (PairPack.h) is already in that form: its rows
// are pushed as loaded.
//
// Resident matmuls (ints[6]: 1 keep, 2 keep and store) leave their results
// in the MXU result slots across grid steps: the K blocks of a dot whose
// items fit the slots (every item its own window of slots) accumulate there,
// one step's first chunk going on from the previous step's value (mma,
// accumulate 2), and only the last step pops them. A step then ends without
// waiting for the MXU to drain (2N + 7 cycles before the last pop) and the
// next step's weight pushes start at once (MBlock::mxuCarry). The ops of one
// destination (the first, middle and last K steps are separate ops under
// branches) share one placement of items on MXUs and slots.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "kernels/codegen/Lowering.h"
#include "kernels/llo/Printer.h"

namespace tpusim::kernels::codegen {

using isa::Opcode;

namespace {
MOperand I(int64_t v) { return MOperand::imm(v); }
}  // namespace

void Lowerer::lowerMatmul(const llo::Op& op) {
  if (op.ints.size() > 7 && op.ints[7] >= 1) return lowerMatmulLatched(op);
  latched_ = {0, 0};  // this matmul's weight pushes replace them
  auto views = llo::opViews(op);
  int64_t M = op.ints[0], N = op.ints[1], K = op.ints[2];
  bool transLhs = op.ints[3], transRhs = op.ints[4];
  const int64_t accMode = op.ints[5];
  const bool accumulate = accMode == 1;  // pop, add to dst, store
  const bool chain = accMode == 2;       // the first chunk goes on from the slots (mma)
  const int64_t resident = op.ints.size() > 6 ? op.ints[6] : 0;
  auto fail = [&](const std::string& why) {
    std::string text = llo::printOp(op);
    throw CodegenError(fmt::format("{}:{}: error: cannot compile '{}': {}", op.loc.file,
                                   op.loc.line, text.substr(0, text.find('\n')), why));
  };
  const int S = t_.mxuSize;
  // N = 4 would keep 31 rotation amounts in scalar registers (see rotate below).
  if (S < 8 || S > 2 * llo::kLanes || (S < llo::kLanes && llo::kLanes % S != 0) ||
      (S > llo::kLanes && S != 2 * llo::kLanes))
    fail(fmt::format("MXUs of size {} are not supported (only 256 and powers of two from 8 to 128)",
                     S));
  if (transLhs && resident)
    fail("a transposed LHS with results kept in the MXU across grid steps is not supported");
  bool s8 = views[1].ref->type.dtype == llo::DType::S8;
  // bf16 x s8: each weight vreg is widened in registers between its load and
  // its push (sign-extend, s32 -> f32 -> bf16, all exact), so int8 weights
  // cross VMEM once and are never stored back as bf16.
  bool widenRhs = !s8 && views[2].ref->type.dtype == llo::DType::S8;
  // Scaled s8 weights (ints[9]): each widened vreg is multiplied in f32 by its
  // column tile's scales before the bf16 rounding, bf16(f32(w) * f32(s)),
  // one rounding as the HLO's bf16 multiply of the converted weights does.
  const bool scaledRhs = llo::matmulScaled(op);
  if (scaledRhs && !widenRhs) fail("internal: a scaled rhs that is not bf16 x s8");
  // K <= N fits one unpacked chunk: packing would only add its vpack ops.
  const bool packed = s8 && t_.int8Rate >= 2 && K > t_.mxuSize;
  auto origin = [&](const llo::ViewRange& v) {
    std::vector<ScalarVal> idx;
    for (const llo::Value* i : v.indices) idx.push_back(scalar(i));
    return vmemRow(place(v.ref), idx);
  };
  const RefPlace& dstP = place(views[0].ref);
  // A bf16 destination of a plain matmul (llo verifier): each popped row is
  // rounded to bf16 before its store.
  const bool roundDst = dstP.type.dtype == llo::DType::Bf16;
  if (roundDst && (accumulate || chain || resident))
    fail("internal: a bf16 destination of an accumulating or resident matmul");
  // The sum epilogue (llo Ops.def): bf16 addends loaded beside each popped
  // tile and added to its rounded value, so an element-wise `dot + x` needs
  // no f32 accumulator and no second pass over it.
  const int64_t sumMode = op.ints.size() > 8 ? op.ints[8] : 0;
  struct Addend {
    const llo::ViewRange* view;
    const RefPlace* place;
    ScalarVal base;
    int64_t rows;
    bool awaited = false;
  };
  std::vector<Addend> addends;
  for (size_t i = llo::matmulFirstAddend(op); i < views.size(); ++i)
    addends.push_back({&views[i], &place(views[i].ref), origin(views[i]),
                       llo::tiledLayout(place(views[i].ref).type.shape).paddedRows});
  if (!addends.empty() && (!roundDst || sumMode < 1 || sumMode > 2))
    fail("internal: a sum epilogue needs a plain matmul into bf16");
  // A transposed LHS (K x M) is read from its transpose, made in a VMEM
  // temporary (M x K) by the transpose unit (transposeBlock below).
  RefPlace lhsT;
  if (transLhs) {
    lhsT.type = llo::Type::ref(llo::MemSpace::Vmem, views[1].ref->type.dtype, {M, K});
    lhsT.base = mem_.vmem(fmt::format("transposed LHS {} (line {})", lhsT.type.str(), op.loc.line),
                          lhsT.type.shape);
    lhsT.region = newRegion();
  }
  const RefPlace& lhsP = transLhs ? lhsT : place(views[1].ref);
  const RefPlace& rhsP = place(views[2].ref);
  // Weights the DMA already packed (PairPack.h): the word at row D*kc + r is
  // the s8x2 value of rows r and S + r of chunk kc, pushed as loaded.
  const bool prepacked = packed && !transRhs && rhsP.pairRows == t_.mxuSize;
  // Dequantized weights the DMA paired (PairPack.h): K chunk kc (S deep) is
  // byte kc % 2 of the words at rows (kc / 2) * 2S + r, unpacked by the
  // widening's `vunpack.s8` (byte 0 unpaired): no op more per weight vreg.
  const bool pairedWiden = widenRhs && !transRhs && rhsP.pairRows == t_.mxuSize;
  if (rhsP.pairRows && !prepacked && !pairedWiden)
    fail("internal: a paired weight block read by a matmul that does not push it packed");
  if (prepacked || pairedWiden) {
    const llo::Value* row = views[2].indices.at(0);
    if (!row->def || row->def->kind != llo::OpKind::SConst ||
        row->def->ints.at(0) % (2 * t_.mxuSize))
      fail("internal: a paired weight block read from a row that is not a chunk's first");
  }
  // Input blocks that arrive in parts (Lowerer::Arrival): the first read of
  // each part waits for it, so the MXUs start on the first rows of the LHS and
  // the first K rows of the weights while the rest is still in flight.
  // (A block of more dimensions: those before its last two are 1, CopyPlan.h.)
  auto firstRow = [&](const llo::ViewRange& v) -> int64_t {
    const size_t rank = v.ref->type.shape.size();
    if (rank < 2 || v.indices.size() != rank) return -1;
    ScalarVal r = scalar(v.indices[rank - 2]);
    return r.isConst ? r.c : -1;
  };
  constexpr int64_t kAll = std::numeric_limits<int64_t>::max();
  const int64_t lhsRow0 = firstRow(views[1]), rhsRow0 = firstRow(views[2]);
  // A block arriving in parts of entries (CopyPlan::partsByEntry): the
  // parts up to the view's entry.
  auto awaitOperand = [&](const llo::ViewRange& v, int64_t row0, int64_t rows) {
    auto arriving = arrivals_.find(v.ref);
    if (arriving != arrivals_.end() && arriving->second.byEntry) {
      if (v.indices.empty()) return awaitRows(v.ref, kAll);
      const ScalarVal e = scalar(v.indices[0]);
      return awaitRows(v.ref, e.isConst ? e.c + 1 : kAll);
    }
    awaitRows(v.ref, row0 < 0 ? kAll : row0 + rows);
  };
  awaitRows(views[0].ref, kAll);  // a destination that is read (accumulating)
  if (scaledRhs) awaitRows(views[3].ref, kAll);
  ScalarVal dst0 = origin(views[0]), rhs0 = origin(views[2]);
  ScalarVal lhs0 = transLhs ? placeBase(lhsT) : origin(views[1]);
  ScalarVal lhsIn0 = transLhs ? origin(views[1]) : ScalarVal{};
  int64_t dstRows = llo::tiledLayout(dstP.type.shape).paddedRows;
  int64_t lhsRows = llo::tiledLayout(lhsP.type.shape).paddedRows;
  int64_t rhsRows = llo::tiledLayout(rhsP.type.shape).paddedRows;
  // Base registers once; tiles are constant offsets from them.
  auto baseOf = [&](const ScalarVal& v) { return v.isConst ? v : ScalarVal{false, 0, reg(v)}; };
  dst0 = baseOf(dst0);
  for (Addend& a : addends) a.base = baseOf(a.base);
  lhs0 = baseOf(lhs0);
  rhs0 = baseOf(rhs0);
  if (transLhs) lhsIn0 = baseOf(lhsIn0);
  const RefPlace* scaleP = scaledRhs ? &place(views[3].ref) : nullptr;
  ScalarVal scale0 = scaledRhs ? baseOf(origin(views[3])) : ScalarVal{};
  const int64_t scaleRows = scaledRhs ? llo::tiledLayout(scaleP->type.shape).paddedRows : 0;
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
  // Block (mt, kt) of the transposed LHS: rows [128 mt, +128) x columns
  // [128 kt, +128) of the temporary, from rows [128 kt, +128) of column tile mt
  // of the K x M LHS, in 16 pushes and 16 pops of the transpose unit (pop q:
  // rows 8q..8q+7 of the block's transpose; isa/README.md, "Transpose unit").
  // Emitted just before the first mm that reads it, so the transposes of later
  // blocks overlap the MXU work on earlier ones. Rows of the LHS past K are
  // pushed as zeros (the K-chunk masks zero those lanes anyway); rows of the
  // temporary past its padded M are not stored.
  std::set<std::pair<int64_t, int64_t>> transposedBlocks;
  const RefPlace& lhsIn = place(views[1].ref);
  const int64_t lhsInRows = llo::tiledLayout(lhsIn.type.shape).paddedRows;
  const int64_t unitBlockCycles = 16 * (t_.transposePushInterval + t_.transposePopInterval);
  if (balanceBlock_ != cur_) {
    balanceBlock_ = cur_;
    weightPortCycles_.assign(size_t(t_.mxuCount), 0);
    transposeUnitCycles_ = 0;
  }
  auto transposeBlock = [&](int64_t mt, int64_t kt) {
    if (!transposedBlocks.insert({mt, kt}).second) return;
    transposeUnitCycles_ += unitBlockCycles;
    awaitOperand(views[1], lhsRow0, std::min(K, (kt + 1) * llo::kLanes));
    MOperand zeroRows;
    for (int64_t p = 0; p < 16; ++p) {
      int64_t k = kt * llo::kLanes + 8 * p;
      MOperand v;
      if (k >= K) {
        if (zeroRows.kind == MOperand::Kind::None) {
          zeroRows = fn_.newReg(RegClass::Vector);
          emit(Opcode::VImm, {zeroRows, I(0)});
        }
        v = zeroRows;
      } else {
        v = load(lhsIn, lhsIn0, mt * lhsInRows + k, (1 << std::min<int64_t>(8, K - k)) - 1);
      }
      emit(Opcode::XluTrPush, {v});
    }
    for (int64_t q = 0; q < 16; ++q) {
      MOperand v = fn_.newReg(RegClass::Vector);
      emit(Opcode::XluTrPop, {v});
      int64_t m = mt * llo::kLanes + 8 * q;
      if (m >= lhsRows) continue;
      MOperand b;
      int64_t o;
      int64_t off = kt * lhsRows + m;
      at(lhs0, off, &b, &o);
      MInstr st = makeInstr(Opcode::VSt, {v, b, I(o), I(1), I(255)});
      st.mem = {MemAccess::Space::Vmem, lhsT.region, true, lhs0.c + off, 8};
      emit(st);
    }
  };
  // Geometry (isa/README.md, "MXU", row mapping). An MXU row of S values is
  // `halves` vregs of `L` lanes: for S = 256 the pair (va, va + 1) of two
  // 128-lane column tiles; for S <= 128 lanes 0..S-1 of one vreg. K chunk kc
  // and output column tile j start at element S*kc / S*j; for S < 128 that is
  // lane (S*kc) % 128 of a VMEM column tile, rotated to lane 0 on the XLU for
  // the MXU and back for the store.
  const int halves = S > llo::kLanes ? 2 : 1;
  const int64_t L = std::min<int64_t>(S, llo::kLanes);
  const int64_t P = (S + 7) / 8;  // weight pushes of a full tile
  // K depth of a chunk: 2N when packed, in two parts of N (q = 0: low bytes).
  const int64_t D = packed ? 2 * S : S;
  int64_t kRem = K % S;  // valid K of a partial last part (0 = none)
  int64_t kChunks = (K + D - 1) / D, nTiles = (N + S - 1) / S, rowTiles = (M + 7) / 8;
  int64_t slots = t_.accSlots;
  auto tileOf = [&](int64_t start, int h) { return (start + h * llo::kLanes) / llo::kLanes; };
  auto laneOf = [&](int64_t start) { return start % llo::kLanes; };
  // Valid K of part q of chunk kc in half h (0 = the half is all padding).
  auto validK = [&](int64_t kc, int h, int64_t q = 0) {
    int64_t v = std::clamp<int64_t>(K - (D * kc + q * S), 0, S);
    return std::clamp<int64_t>(v - h * llo::kLanes, 0, L);
  };
  // Lanes >= kRem % L of the partial half of the last chunk's LHS (and of
  // transposed weights) are padding: zeroed with this mask (after any rotation).
  int64_t maskLimit = kRem % L;
  MOperand laneMask, zero;
  if (maskLimit) {
    MOperand iota = fn_.newReg(RegClass::Vector), lim = fn_.newReg(RegClass::Vector);
    laneMask = fn_.newReg(RegClass::Mask);
    emit(Opcode::VIotaLane, {iota});
    emit(Opcode::VImm, {lim, I(maskLimit)});
    emit(Opcode::VCmpLtS32, {laneMask, iota, lim});
    zero = fn_.newReg(RegClass::Vector);
    emit(Opcode::VImm, {zero, I(0)});
  }
  // Rotation amounts: one scalar register per distinct amount (128 / N - 1 of
  // them), made at its first use and held to its last.
  std::map<int64_t, MOperand> shiftRegs;
  auto rotate = [&](MOperand v, int64_t by) {
    by %= llo::kLanes;
    if (by == 0) return v;
    auto it = shiftRegs.find(by);
    if (it == shiftRegs.end()) it = shiftRegs.emplace(by, constReg(by)).first;
    MOperand amount = it->second;
    MOperand d = fn_.newReg(RegClass::Vector);
    emit(Opcode::XluRotLane, {d, v, amount});
    return d;
  };
  // One half of an MXU row operand: `valid` lanes (after moving lane `lane`
  // to lane 0) from VMEM column tile `tile`, row `row` of a ref; lanes past
  // `valid` zeroed when `maskK`. An upper half with nothing valid is zero,
  // made from the lower half (lo ^ lo) so it is defined next to it: the pair
  // holds two registers from its first definition on.
  auto widen = [&](MOperand v, MOperand scale, int64_t byte) {
    MOperand x = fn_.newReg(RegClass::Vector), f = fn_.newReg(RegClass::Vector);
    MOperand h = fn_.newReg(RegClass::Vector);
    emit(Opcode::VUnpackS8, {x, v, I(byte)});
    emit(Opcode::VCvtF32S32, {f, x});
    if (scale.kind != MOperand::Kind::None) {
      MOperand p = fn_.newReg(RegClass::Vector);
      emit(Opcode::VMulF32, {p, f, scale});
      f = p;
    }
    emit(Opcode::VCvtBf16F32, {h, f});
    return h;
  };
  // The f32 scales of column tile `tile` of the scale row in every sublane
  // (a stride-0 load and a convert), once per work item and tile: the item's
  // pushes of all K chunks share it.
  std::map<std::pair<int64_t, int64_t>, MOperand> scaleRegs;
  auto scaleOf = [&](int64_t g0, int64_t tile) {
    if (!scaledRhs) return MOperand();
    auto it = scaleRegs.find({g0, tile});
    if (it != scaleRegs.end()) return it->second;
    MOperand b, row = fn_.newReg(RegClass::Vector), f = fn_.newReg(RegClass::Vector);
    int64_t o, off = tile * scaleRows;
    at(scale0, off, &b, &o);
    MInstr mi = makeInstr(Opcode::VLd, {row, b, I(o), I(0), I(255)});
    mi.mem = {MemAccess::Space::Vmem, scaleP->region, false, scale0.isConst ? scale0.c + off : -1,
              1};
    emit(mi);
    emit(Opcode::VCvtF32Bf16, {f, row});
    return scaleRegs.emplace(std::make_pair(g0, tile), f).first->second;
  };
  auto rowHalf = [&](std::vector<MOperand>& row, const RefPlace& p, const ScalarVal& base,
                     int64_t tileRows, int64_t tile, int64_t rowOff, int64_t sublanes, int64_t lane,
                     int64_t valid, bool maskK, bool widenS8 = false, MOperand scale = MOperand(),
                     int64_t byte = 0) {
    if (valid == 0) {
      if (row.empty()) throw CodegenError("internal: an MXU row without valid lanes");
      MOperand z = fn_.newReg(RegClass::Vector);
      emit(Opcode::VXor, {z, row[0], row[0]});
      row.push_back(z);
      return;
    }
    MOperand v = load(p, base, tile * tileRows + rowOff, sublanes);
    if (widenS8) v = widen(v, scale, byte);
    v = rotate(v, llo::kLanes - lane);
    if (maskK && valid < L) {
      MOperand d = fn_.newReg(RegClass::Vector);
      emit(Opcode::VSel, {d, laneMask, v, zero});
      v = d;
    }
    row.push_back(v);
  };
  // Emits an MXU op whose vector operand (index `k` of `ops`) is the row `h`.
  auto emitRow = [&](Opcode op, std::vector<MOperand> ops, int k, const std::vector<MOperand>& h) {
    ops[size_t(k)] = h[0];
    MInstr mi = makeInstr(op, std::move(ops));
    if (halves == 2) {
      mi.pairHi = h[1];
      // A pair lives in two adjacent registers: never spilled (Spill.h).
      fn_.unspillable.insert({int(RegClass::Vector), int(h[0].value)});
      fn_.unspillable.insert({int(RegClass::Vector), int(h[1].value)});
    }
    emit(mi);
  };
  // The packed operand of a row from its two K parts (hi empty: all padding).
  auto pack = [&](std::vector<MOperand> lo, const std::vector<MOperand>& hi) {
    for (size_t h = 0; h < lo.size(); ++h) {
      MOperand b = h < hi.size() ? hi[h] : MOperand(), d = fn_.newReg(RegClass::Vector);
      if (h >= hi.size()) {
        b = fn_.newReg(RegClass::Vector);
        emit(Opcode::VXor, {b, lo[h], lo[h]});
      }
      emit(Opcode::VPackB8, {d, lo[h], b});
      lo[h] = d;
    }
    return lo;
  };
  Opcode wpush = transRhs ? (packed ? Opcode::MxuWPushTS8x2
                             : s8   ? Opcode::MxuWPushTS8
                                    : Opcode::MxuWPushTBf16)
                          : (packed ? Opcode::MxuWPushS8x2
                             : s8   ? Opcode::MxuWPushS8
                                    : Opcode::MxuWPushBf16);
  Opcode mm = packed ? Opcode::MxuMmS8x2 : s8 ? Opcode::MxuMmS8 : Opcode::MxuMmBf16;
  Opcode mma = packed ? Opcode::MxuMmaS8x2 : s8 ? Opcode::MxuMmaS8 : Opcode::MxuMmaBf16;
  // Work items (group of row tiles, column tile), dealt round-robin to the
  // MXUs from the one after the previous matmul's last item (nextMxu_). An
  // item takes the next window of gTiles slots of its MXU's ring (nextSlot_),
  // so an item with fewer row tiles than slots (M <= 8: one slot) does not
  // wait for the previous item's results (ready 2N + 7 cycles after its last
  // mm) before its first mm: their pops only need to come before the ring
  // wraps around to their slots.
  struct Item {
    int64_t g0, gTiles, j, mxu = 0, slot0 = 0;
  };
  const int64_t mxus = t_.mxuCount;
  // Row groups of `slots` row tiles, or smaller when that leaves MXUs without
  // an item (a narrow N: flash attention's p x V, N = head_dim = 128 on v5e's
  // four MXUs, had two items): as many groups as idle MXUs need, each of at
  // least P row tiles, so its mm stream still covers the weight tile's pushes.
  int64_t groupTiles = slots;
  if ((rowTiles + slots - 1) / slots * nTiles < mxus) {
    int64_t groups = (mxus + nTiles - 1) / nTiles;
    groupTiles = std::min(slots, std::max(P, (rowTiles + groups - 1) / groups));
  }
  std::vector<Item> items;
  for (int64_t g0 = 0; g0 < rowTiles; g0 += groupTiles)
    for (int64_t j = 0; j < nTiles; ++j)
      items.push_back({g0, std::min(groupTiles, rowTiles - g0), j});
  nextSlot_.resize(size_t(mxus), 0);
  // A resident destination keeps the placement its first op chose (the items
  // depend on M and N only; a ragged last K step has a shorter K).
  std::vector<int64_t> key{dstP.region, dst0.isConst ? dst0.c : -1, M, N};
  auto placed = resident ? residentItems_.find(key) : residentItems_.end();
  const bool reused = placed != residentItems_.end();
  if (reused) {
    for (size_t it = 0; it < items.size(); ++it) {
      items[it].mxu = placed->second[it].first;
      items[it].slot0 = placed->second[it].second;
    }
  } else {
    for (size_t it = 0; it < items.size(); ++it) {
      Item& item = items[it];
      item.mxu = (nextMxu_ + int64_t(it)) % mxus;
      int64_t& next = nextSlot_[size_t(item.mxu)];
      if (next + item.gTiles > slots) {
        // Wrapping around would reuse the slots of results kept in the MXU.
        if (!residentItems_.empty() || resident)
          fail(fmt::format(
              "the results kept in the MXU across grid steps need more than the "
              "{} result slots of an MXU ({} x {} items of {} row tiles on {} MXUs)",
              slots, (rowTiles + slots - 1) / slots, nTiles, std::min(slots, rowTiles), mxus));
        next = 0;
      }
      item.slot0 = next;
      next += item.gTiles;
    }
    nextMxu_ = (nextMxu_ + int64_t(items.size())) % mxus;
    if (resident) {
      auto& v = residentItems_[key];
      for (const Item& item : items) v.push_back({item.mxu, item.slot0});
    }
  }
  if (resident) fn_.mxuCarry = true;
  // Valid output columns of column tile j (in all halves).
  auto validN = [&](int64_t j) { return std::min<int64_t>(S, N - j * S); };
  // Weight push p of chunk kc of an item (8 rows, or 8 columns when transposed);
  // pushesOf: how many a chunk needs.
  // Transposed weight tiles through the transpose unit. A transposed push
  // waits N cycles after its MXU's last latch (isa/README.md, "MXU"), so a
  // tile of them holds the weight port 2N cycles; transposed by the unit
  // first (16 pushes and pops of the 128 x 128 block), its rows go as plain
  // pushes in N. The unit is one per core (256 cycles a block on the
  // presets, where an MXU takes four such tiles), so a tile goes through it
  // only when the unit would have it ready before its MXU's transposed
  // pushes could end (the cycles each was given in this basic block): about
  // one tile in five on four MXUs. Decode attention's q.K (one query row per
  // head: pushes, not mms, are its MXU time) is the case this serves.
  const bool unitEligible = transRhs && !transLhs && !packed && !widenRhs && S == llo::kLanes;
  using TileKey = std::tuple<int64_t, int64_t, int64_t>;  // (g0, j, kc)
  std::map<TileKey, bool> viaUnit;
  std::map<TileKey, std::vector<MOperand>> unitRows;  // the block's 16 popped rows
  auto throughUnit = [&](const Item& it, int64_t kc) {
    const TileKey key{it.g0, it.j, kc};
    auto found = viaUnit.find(key);
    if (found != viaUnit.end()) return found->second;
    int64_t& port = weightPortCycles_[size_t(it.mxu)];
    // A tile's MXU time: its pushes (transposed: after the N-cycle wait) or
    // its item's LHS rows (8 cycles an mm), whichever is longer; the unit
    // pays only where the pushes bound it (one query row per head).
    const int64_t mms = 8 * it.gTiles;
    const int64_t direct = port + std::max(S + 8 * ((validN(it.j) + 7) / 8), mms);
    const int64_t unitReady = transposeUnitCycles_ + unitBlockCycles;
    const int64_t plain = std::max(port + std::max(8 * ((validK(kc, 0) + 7) / 8), mms), unitReady);
    const bool unit = unitEligible && plain < direct;
    port = unit ? plain : direct;
    if (unit) transposeUnitCycles_ = unitReady;
    viaUnit.emplace(key, unit);
    return unit;
  };
  auto pushesOf = [&](const Item& it, int64_t kc) -> int64_t {
    if (!transRhs) return (validK(kc, 0) + validK(kc, 1) + 7) / 8;
    if (throughUnit(it, kc)) return (validK(kc, 0) + 7) / 8;
    return (validN(it.j) + 7) / 8;
  };
  // Push p of a tile that goes through the transpose unit: at the first, the
  // block's rows n (lanes past K zeroed, rows past N zero) go in; pop q (rows
  // 8q..8q+7 of the K x N tile) comes just before push q, so a popped row
  // holds a register only until its push. The unit holds one block: a later
  // tile's pushes first pop what is left of the one before.
  std::vector<MOperand>* pendingRows = nullptr;
  auto popUpTo = [&](std::vector<MOperand>& rows, size_t q) {
    while (rows.size() <= q) {
      rows.push_back(fn_.newReg(RegClass::Vector));
      emit(Opcode::XluTrPop, {rows.back()});
    }
  };
  auto unitPush = [&](const Item& it, int mxu, int64_t kc, int64_t p) {
    std::vector<MOperand>& rows = unitRows[TileKey{it.g0, it.j, kc}];
    if (p == 0) {
      if (pendingRows) popUpTo(*pendingRows, 15);
      pendingRows = &rows;
      awaitOperand(views[2], rhsRow0, N);
      const int64_t k0 = kc * S;
      MOperand zeroRows;
      for (int64_t q = 0; q < 16; ++q) {
        const int64_t valid = std::min<int64_t>(8, validN(it.j) - 8 * q);
        std::vector<MOperand> row;
        if (valid <= 0) {
          if (zeroRows.kind == MOperand::Kind::None) {
            zeroRows = fn_.newReg(RegClass::Vector);
            emit(Opcode::VImm, {zeroRows, I(0)});
          }
          row.push_back(zeroRows);
        } else {
          rowHalf(row, rhsP, rhs0, rhsRows, tileOf(k0, 0), it.j * S + 8 * q, (1 << valid) - 1,
                  laneOf(k0), validK(kc, 0), true);
        }
        emit(Opcode::XluTrPush, {row[0]});
      }
    }
    popUpTo(rows, size_t(p));
    // Pushes past K's rows are not made: the rest of the block is popped with the last.
    if (p + 1 == pushesOf(it, kc)) popUpTo(rows, 15);
    std::vector<MOperand> row(size_t(halves), rows[size_t(p)]);  // halves is 1 here
    emitRow(s8 ? Opcode::MxuWPushS8 : Opcode::MxuWPushBf16, {I(mxu), MOperand()}, 1, row);
  };
  auto wpushOne = [&](const Item& it, int mxu, int64_t kc, int64_t p) {
    if (transRhs && throughUnit(it, kc)) return unitPush(it, mxu, kc, p);
    std::vector<MOperand> row;
    // A paired chunk's words hold its partner chunk too: both arrive together.
    // Transposed, the weights' rows are the result's N columns: all at the first push.
    awaitOperand(views[2], rhsRow0,
                 transRhs ? N : std::min(K, pairedWiden ? (kc / 2 + 1) * 2 * S : (kc + 1) * D));
    if (!transRhs) {
      // Weight rows D*kc + q*S + 8p of column tile j (part q); rows >= K stay
      // zero (not loaded, or not pushed). Lanes past N only reach unstored columns.
      int64_t n0 = it.j * S;
      std::vector<MOperand> hi;
      for (int64_t q = 0; q < (packed && !prepacked ? 2 : 1); ++q) {
        int64_t rows = validK(kc, 0, q) + validK(kc, 1, q);
        int64_t valid = std::min<int64_t>(8, rows - p * 8);
        if (valid <= 0) continue;  // a high part past K: zero
        for (int h = 0; h < halves; ++h) {
          int64_t cols = std::clamp<int64_t>(validN(it.j) - h * llo::kLanes, 0, L);
          rowHalf(q ? hi : row, rhsP, rhs0, rhsRows, tileOf(n0, h),
                  (pairedWiden ? kc - kc % 2 : kc) * D + q * S + p * 8, (1 << valid) - 1,
                  laneOf(n0), cols, false, widenRhs, scaleOf(it.g0, tileOf(n0, h)),
                  pairedWiden ? kc % 2 : 0);
        }
      }
      if (packed && !prepacked) row = pack(row, hi);
    } else {
      // rhs is (N, K): rows n = S*j + 8p, lanes = k of chunk kc.
      int64_t valid = std::min<int64_t>(8, validN(it.j) - p * 8);
      std::vector<MOperand> hi;
      for (int64_t q = 0; q < (packed ? 2 : 1); ++q) {
        int64_t k0 = kc * D + q * S;
        if (validK(kc, 0, q) == 0) continue;  // a high part past K: zero
        for (int h = 0; h < halves; ++h)
          rowHalf(q ? hi : row, rhsP, rhs0, rhsRows, tileOf(k0, h), it.j * S + p * 8,
                  (1 << valid) - 1, laneOf(k0), validK(kc, h, q), true, widenRhs);
      }
      if (packed) row = pack(row, hi);
    }
    emitRow(wpush, {I(mxu), MOperand()}, 1, row);
  };
  // LHS tile i of the item's group through the latched chunk kc.
  // The MXUs of one round usually stream the same LHS tile (items of one row
  // group, other column tiles). With N = 256 it is loaded once per emission
  // step and read by each of their mm ops (`recentLhs`, cleared by the
  // emission loop): a pair's halves are a column tile apart, in the same VMEM
  // banks, so loads bound the mm phase (4096^3 on v6e: 717k -> 703k cycles).
  // With one vreg per row the longer-lived shared tile costs more than it
  // saves (v5e: 1.194M -> 1.209M cycles), so N <= 128 loads it per MXU.
  std::map<std::pair<int64_t, int64_t>, std::vector<MOperand>> recentLhs;  // (row tile, kc)
  // LHS diagonal blocks (Ops.def): row tile rt is row tile rt % (M / G) of
  // the view in block g = rt / (M / G) (whole row tiles, llo verifier), and
  // only its half-rows within K columns [g K / G, (g + 1) K / G) are loaded;
  // the others are zero registers (a K / G that is not whole 128-lane halves
  // is refused).
  const int64_t diag = llo::matmulLhsDiagonalBlocks(op);
  const int64_t diagRows = M / diag, diagK = K / diag;
  if (diag > 1 && (transLhs || packed || s8 || diagK % L != 0))
    fail(
        fmt::format("lhs diagonal blocks need a bf16 LHS read as it is and blocks of whole "
                    "{}-lane K tiles",
                    L));
  auto mmOne = [&](const Item& it, int mxu, int64_t kc, int64_t i) {
    int64_t rt = it.g0 + i;
    std::vector<MOperand> own;
    std::vector<MOperand>& row = halves == 2 ? recentLhs[{rt, kc}] : own;
    if (row.empty() && diag > 1) {
      const int64_t block = rt * 8 / diagRows, src = rt * 8 - block * diagRows;
      awaitOperand(views[1], lhsRow0, src + 8);
      for (int h = 0; h < halves; ++h) {
        const int64_t k0 = kc * D + h * llo::kLanes;
        if (validK(kc, h) > 0 && k0 / diagK == block) {
          std::vector<MOperand> part;
          rowHalf(part, lhsP, lhs0, lhsRows, tileOf(k0, 0), src, 0xFF, laneOf(k0), validK(kc, h),
                  true);
          row.push_back(part[0]);
          continue;
        }
        // Zero: one immediate per row operand (a pair's halves are two registers).
        MOperand zh = fn_.newReg(RegClass::Vector);
        emit(Opcode::VImm, {zh, I(0)});
        row.push_back(zh);
      }
    }
    if (row.empty()) {
      int64_t valid = std::min<int64_t>(8, M - rt * 8);
      if (transLhs) {
        for (int64_t q = 0; q < (packed ? 2 : 1); ++q)
          for (int h = 0; h < halves; ++h) {
            int64_t k0 = kc * D + q * S + h * llo::kLanes;
            if (k0 < K) transposeBlock(rt * 8 / llo::kLanes, k0 / llo::kLanes);
          }
      } else {
        awaitOperand(views[1], lhsRow0, rt * 8 + valid);
      }
      std::vector<MOperand> lo, hi;
      for (int64_t q = 0; q < (packed ? 2 : 1); ++q) {
        int64_t k0 = kc * D + q * S;
        if (validK(kc, 0, q) == 0) continue;  // a high part past K: zero
        for (int h = 0; h < halves; ++h)
          rowHalf(q ? hi : lo, lhsP, lhs0, lhsRows, tileOf(k0, h), rt * 8, (1 << valid) - 1,
                  laneOf(k0), validK(kc, h, q), true);
      }
      row = packed ? pack(lo, hi) : lo;
    }
    emitRow(kc == 0 && !chain ? mm : mma, {I(mxu), MOperand(), I(it.slot0 + i)}, 1, row);
  };
  // Pops slot i into its result row and stores the valid lanes of each half
  // (added to the old value when accumulating).
  // A sum epilogue's work after a pop (the dot's rounding, the add, the
  // bf16 rounding, the stores: 6 vector ops a half against 1 of a plain
  // pop) trails its pop by kSumEpilogueLag pops in program order while the
  // next items stream: the pop must come before the mm that reuses its slot,
  // but the rest need not sit between that mm and the next pop. Emitted right
  // after its pop, each tile's chain held back the next pops and mms (the
  // list scheduler mostly keeps program order): the training step's FFN
  // down projection + residual, 65536 x 1024 x 2048 on v6e, 765,344 ->
  // 678,606 cycles with a lag of 2 (1: 698,957; 3: 676,275 but 830,295 for
  // the K = 2048 backward one against 821,818; 4 and more: slower, 16 runs out
  // of registers). The last round's pops, with no mms after them, are not
  // held back (a lag there changed nothing). One addend only: with a sum of
  // two ((p + q) + dot, the attention backward's dx) the lag cost 15%
  // (16384 x 1024 x 1024: 197,367 -> 226,507 cycles). 256-wide MXUs only
  // (two halves a pop, twice a 128-wide pop's work): on v5e the tiny
  // prefill's residual dots lost more than they gained (660,994 -> 662,937
  // cycles), not yet understood.
  constexpr size_t kSumEpilogueLag = 2;
  std::vector<std::function<void()>> pendingFinish;
  bool lagFinish = false;  // queue the work after a pop (the main loop's pops)
  auto popTile = [&](const Item& it, int mxu, int64_t i) {
    int64_t rt = it.g0 + i;
    int64_t valid = std::min<int64_t>(8, M - rt * 8);
    std::vector<MOperand> row;
    for (int h = 0; h < halves; ++h) row.push_back(fn_.newReg(RegClass::Vector));
    int64_t n0 = it.j * S;
    // The sum epilogue's addends, summed (f32, widened) before the pop: their
    // loads and adds need not wait for the MXU.
    std::vector<MOperand> sums;
    for (int h = 0; h < halves && !addends.empty(); ++h) {
      auto widened = [&](MOperand v) {
        MOperand w = fn_.newReg(RegClass::Vector);
        emit(Opcode::VCvtF32Bf16, {w, v});
        return w;
      };
      MOperand x;
      for (size_t a = 0; a < addends.size(); ++a) {
        Addend& ad = addends[a];
        if (!ad.awaited) awaitRows(ad.view->ref, kAll);
        ad.awaited = true;
        MOperand v = widened(load(*ad.place, ad.base, tileOf(n0, h) * ad.rows + rt * 8, 0xFF));
        if (a == 0) {
          x = v;
          continue;
        }
        MOperand sum = fn_.newReg(RegClass::Vector), c = fn_.newReg(RegClass::Vector);
        emit(Opcode::VAddF32, {sum, x, v});
        emit(Opcode::VCvtBf16F32, {c, sum});
        x = widened(c);
      }
      sums.push_back(x);
    }
    emitRow(Opcode::MxuPop, {MOperand(), I(mxu), I(it.slot0 + i)}, 0, row);
    auto finish = [&, row, sums, n0, rt, valid] {
      for (int h = 0; h < halves; ++h) {
        int64_t lanes = std::clamp<int64_t>(validN(it.j) - h * llo::kLanes, 0, L);
        if (lanes == 0) continue;
        int64_t first = laneOf(n0);
        MOperand r = rotate(row[size_t(h)], first);
        int64_t off = tileOf(n0, h) * dstRows + rt * 8;
        // The sum epilogue rounds the dot to bf16 and widens it back for its add:
        // one vrnd.bf16.f32, not a convert pair. Only with one addend: with a sum
        // of two (and in the addends' own sums) the list scheduler packed the
        // shorter chains worse ((p + q) + dot, [4096, 1024]: 44,741 -> 50,264).
        bool roundWiden = roundDst && addends.size() == 1;
        // A bf16 destination: rounded on the way (no f32 copy, no second pass).
        if (roundDst && !roundWiden) {
          MOperand c = fn_.newReg(RegClass::Vector);
          emit(Opcode::VCvtBf16F32, {c, r});
          r = c;
        }
        if (!addends.empty()) {  // the sum epilogue's last add, in f32 and rounded
          MOperand f = fn_.newReg(RegClass::Vector), sum = fn_.newReg(RegClass::Vector);
          MOperand c = fn_.newReg(RegClass::Vector);
          emit(roundWiden ? Opcode::VRndBf16F32 : Opcode::VCvtF32Bf16, {f, r});
          const MOperand& x = sums[size_t(h)];
          emit(Opcode::VAddF32,
               sumMode == 1 ? std::vector<MOperand>{sum, f, x} : std::vector<MOperand>{sum, x, f});
          emit(Opcode::VCvtBf16F32, {c, sum});
          r = c;
        }
        if (accumulate) {
          MOperand old = load(dstP, dst0, off, 0xFF), sum = fn_.newReg(RegClass::Vector);
          emit(s8 ? Opcode::VAddS32 : Opcode::VAddF32, {sum, old, r});
          r = sum;
        }
        MOperand b;
        int64_t o;
        at(dst0, off, &b, &o);
        MemAccess mem{MemAccess::Space::Vmem, dstP.region, true, dst0.isConst ? dst0.c + off : -1,
                      8};
        if (first == 0 && lanes == llo::kLanes) {
          MInstr st = makeInstr(Opcode::VSt, {r, b, I(o), I(1), I((1 << valid) - 1)});
          st.mem = mem;
          emit(st);
          continue;
        }
        // Lanes [first, first + lanes) of sublanes < valid.
        MOperand iota = fn_.newReg(RegClass::Vector), lim = fn_.newReg(RegClass::Vector);
        MOperand m = fn_.newReg(RegClass::Mask), ms = fn_.newReg(RegClass::Mask);
        MOperand iotaS = fn_.newReg(RegClass::Vector), limS = fn_.newReg(RegClass::Vector);
        MOperand m2 = fn_.newReg(RegClass::Mask);
        emit(Opcode::VIotaLane, {iota});
        emit(Opcode::VImm, {lim, I(first + lanes)});
        emit(Opcode::VCmpLtS32, {m, iota, lim});
        if (first > 0) {
          MOperand lo = fn_.newReg(RegClass::Vector), mlo = fn_.newReg(RegClass::Mask);
          MOperand both = fn_.newReg(RegClass::Mask);
          emit(Opcode::VImm, {lo, I(first)});
          emit(Opcode::VCmpGeS32, {mlo, iota, lo});
          emit(Opcode::MAnd, {both, m, mlo});
          m = both;
        }
        emit(Opcode::VIotaSub, {iotaS});
        emit(Opcode::VImm, {limS, I(valid)});
        emit(Opcode::VCmpLtS32, {m2, iotaS, limS});
        emit(Opcode::MAnd, {ms, m, m2});
        MInstr st = makeInstr(Opcode::VStM, {r, b, I(o), ms});
        st.mem = mem;
        emit(st);
      }
    };
    if (lagFinish && addends.size() == 1 && halves == 2)
      pendingFinish.push_back(finish);
    else
      finish();
  };
  // Emits the queued work after the pops, all but the newest `keep`.
  auto flushFinish = [&](size_t keep) {
    while (pendingFinish.size() > keep) {
      pendingFinish.front()();
      pendingFinish.erase(pendingFinish.begin());
    }
  };
  // Per MXU, the stream of weight tiles (item, K chunk) it works through.
  struct Tile {
    size_t item;
    int64_t kc;
  };
  std::vector<std::vector<Tile>> stream(static_cast<size_t>(mxus));
  // With a transposed LHS an MXU's items go through the K chunks together
  // (chunk by chunk, each item in its own slots) when their slot windows do
  // not overlap: the transposes of a chunk's LHS blocks then feed every item
  // at once, instead of the first item waiting for the whole block's
  // transposes and the others running after them.
  bool kcMajor = transLhs && !resident;
  for (size_t a = 0; a < items.size() && kcMajor; ++a)
    for (size_t b = a + 1; b < items.size(); ++b)
      if (items[a].mxu == items[b].mxu && items[a].slot0 < items[b].slot0 + items[b].gTiles &&
          items[b].slot0 < items[a].slot0 + items[a].gTiles)
        kcMajor = false;
  if (kcMajor) {
    for (int64_t kc = 0; kc < kChunks; ++kc)
      for (size_t it = 0; it < items.size(); ++it)
        stream[size_t(items[it].mxu)].push_back({it, kc});
  } else {
    for (size_t it = 0; it < items.size(); ++it)
      for (int64_t kc = 0; kc < kChunks; ++kc) stream[size_t(items[it].mxu)].push_back({it, kc});
  }
  size_t length = 0;
  for (const auto& s : stream) length = std::max(length, s.size());
  // Software-pipelined emission, the MXUs interleaved op by op: while tile t
  // streams its LHS tiles (mm, LHS port), tile t + 1's weights are pushed
  // (weight port); the latch of t + 1 follows tile t's last mm. When tile t
  // starts a new item, the previous item's slot s is popped just before the
  // mm that overwrites it.
  for (int64_t p = 0; p < P; ++p)
    for (size_t m = 0; m < size_t(mxus); ++m)
      if (!stream[m].empty() && p < pushesOf(items[stream[m][0].item], stream[m][0].kc))
        wpushOne(items[stream[m][0].item], int(m), stream[m][0].kc, p);
  for (size_t m = 0; m < size_t(mxus); ++m)
    if (!stream[m].empty()) emit(Opcode::MxuLatch, {I(int64_t(m))});
  // The next tile's pushes are spread evenly over the current tile's mms
  // (one per mm while there are fewer mms than pushes): with more LHS tiles
  // than pushes (v6e: 64 mms, 32 pushes) the one matrix-push slot of a bundle
  // then carries the MXUs' mms and pushes at an even rate instead of two ops
  // per MXU every 8 cycles in the first half of the tile and one in the second.
  for (size_t t = 0; t < length; ++t) {
    for (int64_t i = 0; i < std::max<int64_t>(slots, P); ++i, recentLhs.clear())
      for (size_t m = 0; m < size_t(mxus); ++m) {
        if (t >= stream[m].size()) continue;
        const Tile& cur = stream[m][t];
        const Item& it = items[cur.item];
        // Resident items each hold their own slots: nothing to pop here.
        if (!resident && !kcMajor && cur.kc == 0 && t > 0 &&
            i < items[stream[m][t - 1].item].gTiles) {
          lagFinish = true;
          popTile(items[stream[m][t - 1].item], int(m), i);
          lagFinish = false;
        }
        if (i < it.gTiles) mmOne(it, int(m), cur.kc, i);
        flushFinish(kSumEpilogueLag);
        if (t + 1 < stream[m].size()) {
          const Tile& next = stream[m][t + 1];
          const int64_t n = pushesOf(items[next.item], next.kc);
          const int64_t span = std::max(it.gTiles, n);
          const int64_t end = std::min(n, ((i + 1) * n + span - 1) / span);
          for (int64_t p = (i * n + span - 1) / span; p < end; ++p)
            wpushOne(items[next.item], int(m), next.kc, p);
        }
      }
    for (size_t m = 0; m < size_t(mxus); ++m)
      if (t + 1 < stream[m].size()) emit(Opcode::MxuLatch, {I(int64_t(m))});
  }
  flushFinish(0);
  if (resident == 2) {
    // Every item's slots, round by round as the MXUs finish them.
    for (size_t t = 0; t < length; ++t)
      for (int64_t i = 0; i < slots; ++i)
        for (size_t m = 0; m < size_t(mxus); ++m)
          if (t < stream[m].size() && stream[m][t].kc == kChunks - 1 &&
              i < items[stream[m][t].item].gTiles)
            popTile(items[stream[m][t].item], int(m), i);
  } else if (kcMajor) {
    // Every item's slots (the last chunk's tiles, one per item).
    for (int64_t i = 0; i < slots; ++i)
      for (size_t m = 0; m < size_t(mxus); ++m)
        for (size_t t = 0; t < stream[m].size(); ++t) {
          const Item& it = items[stream[m][t].item];
          if (stream[m][t].kc == kChunks - 1 && i < it.gTiles) popTile(it, int(m), i);
        }
  } else if (!resident) {
    for (int64_t i = 0; i < slots; ++i)
      for (size_t m = 0; m < size_t(mxus); ++m)
        if (!stream[m].empty() && i < items[stream[m].back().item].gTiles)
          popTile(items[stream[m].back().item], int(m), i);
  }
  // The first, middle and last K steps of a resident destination are one
  // dot's work per step (they run under exclusive branches).
  if (!resident || flopsCounted_.insert(key).second)
    bodyFlops += 2.0 * double(M) * double(N) * double(K);
}

}  // namespace tpusim::kernels::codegen
