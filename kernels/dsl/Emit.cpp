// Emission of Array expressions as tile code (see Array.h for the model).
#include "kernels/dsl/Emit.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "isa/support/Numerics.h"

namespace tpusim::kernels::dsl {

using Kind = ArrayNode::Kind;
using llo::OpKind;
using llo::Type;
using llo::Value;

namespace {

constexpr int64_t kLanesI = llo::kLanes, kSublanesI = llo::kSublanes;

// Where the tile being emitted sits in the array being stored.
struct TileAt {
  Value* rowOff;  // element row of the tile's first sublane (scalar)
  int64_t colTile;
  int validRows;  // sublanes that belong to the array (1..8)
  bool bcastRows, bcastCols;
};

Value* iconst(int64_t v) { return builder().sconst(v); }
Value* add(Value* a, Value* b) {
  int64_t x;
  if (b->def && b->def->kind == OpKind::SConst && (x = b->def->ints[0]) == 0) return a;
  if (a->def && b->def && a->def->kind == OpKind::SConst && b->def->kind == OpKind::SConst)
    return iconst(a->def->ints[0] + b->def->ints[0]);
  return builder().sbin(llo::ScalarBin::Add, a, b);
}

Value* emitTile(const NodePtr& n, const TileAt& at);

// Tiles nodes are addressed by constant row offsets: while one is being
// emitted, row-tile loops are unrolled.
thread_local int unrollRowTiles = 0;
// store_together's unrolled walk: column tiles outermost (EpilogueByColumns).
thread_local int columnsFirst = 0;
struct UnrollIfTiles {
  bool on;
  static bool hasTiles(const ArrayNode& n) {
    if (n.kind == Kind::Tiles) return true;
    for (const NodePtr& a : n.args)
      if (hasTiles(*a)) return true;
    return false;
  }
  explicit UnrollIfTiles(const NodePtr& n) : on(hasTiles(*n)) { unrollRowTiles += on; }
  ~UnrollIfTiles() { unrollRowTiles -= on; }
};

std::vector<Value*> viewIndices(const ArrayNode& v, Value* row, Value* col) {
  std::vector<Value*> idx = v.lead;
  idx.push_back(row);
  idx.push_back(col);
  return idx;
}

Value* laneBroadcast(Value* t) {
  Value* zeros = builder().vconst(0, DType::S32);
  return builder().create(OpKind::VLanePerm, {t, zeros}, {t->type})->result();
}

Value* emitView(const ArrayNode& v, const TileAt& at) {
  Value* row = at.bcastRows ? v.row0 : add(v.row0, at.rowOff);
  Value* col = at.bcastCols ? v.col0 : add(v.col0, iconst(at.colTile * kLanesI));
  int64_t stride = at.bcastRows ? 0 : 1;
  int64_t mask = at.bcastRows ? 0xFF : (1 << at.validRows) - 1;
  std::vector<Value*> ops{v.ref};
  for (Value* i : viewIndices(v, row, col)) ops.push_back(i);
  Value* t = builder().create(OpKind::VLoad, ops, {Type::tile(v.dtype)}, {stride, mask})->result();
  if (at.bcastCols && !v.laneReplicated) t = laneBroadcast(t);
  return t;
}

// Dots already emitted, with the block each result was computed in. A result
// is reusable in that block and in every block nested in it (a loop body, a
// branch): `enclosingBlocks` holds the blocks inBlock has entered from.
std::map<const ArrayNode*, std::vector<std::pair<llo::Block*, NodePtr>>>& dotCache() {
  static thread_local std::map<const ArrayNode*, std::vector<std::pair<llo::Block*, NodePtr>>>
      cache;
  return cache;
}
thread_local std::vector<llo::Block*> enclosingBlocks;

NodePtr cachedDot(const ArrayNode* node) {
  auto it = dotCache().find(node);
  if (it == dotCache().end()) return nullptr;
  llo::Block* cur = builder().block();
  for (const auto& [block, view] : it->second)
    if (block == cur ||
        std::find(enclosingBlocks.begin(), enclosingBlocks.end(), block) != enclosingBlocks.end())
      return view;
  return nullptr;
}

NodePtr emitDot(const NodePtr& n);

// The dots an element-wise expression reads (`dot(...).astype(...)`, `dot(...) +
// b`) are computed once, before the expression's row-tile loop: emitted from a
// tile, a dot would land in the loop body and run again for every row tile.
void emitDotsOf(const NodePtr& n, std::set<const ArrayNode*>& seen) {
  if (!seen.insert(n.get()).second) return;
  if (n->kind == Kind::Dot) {
    emitDot(n);  // its operands are materialized by emitDot itself
    return;
  }
  for (const NodePtr& a : n->args) emitDotsOf(a, seen);
}
void emitDotsOf(const NodePtr& n) {
  std::set<const ArrayNode*> seen;
  emitDotsOf(n, seen);
}

// Tiles already emitted for the tile being computed (one (8,128) tile of a
// store, a reduction or a tile list): a node an expression reads twice (an
// operand used by two ops, RoPE's rotated halves) is emitted once. Ops on
// tiles are pure, and nothing is stored while one tile is computed.
struct TileKey {
  const ArrayNode* node;
  Value* rowOff;
  int64_t colTile;
  int validRows;
  bool bcastRows, bcastCols;
  bool operator<(const TileKey& o) const {
    return std::tie(node, rowOff, colTile, validRows, bcastRows, bcastCols) <
           std::tie(o.node, o.rowOff, o.colTile, o.validRows, o.bcastRows, o.bcastCols);
  }
};
thread_local std::map<TileKey, Value*>* tileCse = nullptr;
// The same op on the same tile values, from two nodes (a bf16 operand widened
// once per user, a constant splat per use): one value per tile. Keyed by the
// node kind, op, dtype, constant bits and operand values.
using OpKey = std::vector<int64_t>;
thread_local std::map<OpKey, Value*>* tileOpCse = nullptr;
struct TileCseScope {
  std::map<TileKey, Value*> map;
  std::map<OpKey, Value*> ops;
  std::map<TileKey, Value*>* saved;
  std::map<OpKey, Value*>* savedOps;
  TileCseScope() : saved(tileCse), savedOps(tileOpCse) {
    tileCse = &map;
    tileOpCse = &ops;
  }
  ~TileCseScope() {
    tileCse = saved;
    tileOpCse = savedOps;
  }
};

// Off while an expression with compares is emitted: shared operands let the
// scheduler hoist its compares, and the 8 mask registers are not spilled
// (the rng's 64-bit pair arithmetic ran out).
thread_local int opCseOff = 0;
bool hasMasks(const NodePtr& n, std::set<const ArrayNode*>& seen);
struct OpCseUnlessMasks {
  bool off;
  explicit OpCseUnlessMasks(const std::vector<NodePtr>& values) : off(false) {
    std::set<const ArrayNode*> seen;
    for (const NodePtr& v : values) off = off || hasMasks(v, seen);
    opCseOff += off;
  }
  ~OpCseUnlessMasks() { opCseOff -= off; }
};

Value* cseOp(const ArrayNode& n, std::initializer_list<Value*> operands,
             const std::function<Value*()>& make) {
  if (!tileOpCse || opCseOff > 0) return make();
  OpKey key{int64_t(n.kind), int64_t(n.op), int64_t(n.dtype), int64_t(n.bits),
            reinterpret_cast<int64_t>(n.scalar)};
  for (Value* v : operands) key.push_back(reinterpret_cast<int64_t>(v));
  auto it = tileOpCse->find(key);
  if (it != tileOpCse->end()) return it->second;
  Value* v = make();
  (*tileOpCse)[key] = v;
  return v;
}

Value* emitTileUncached(const NodePtr& np, const TileAt& at);

Value* emitTile(const NodePtr& np, const TileAt& at) {
  if (!tileCse || np->kind == Kind::Dot) return emitTileUncached(np, at);
  // A tile broadcast along the lanes (rows) is the same for every column (row)
  // tile: a per-row value read once per row tile, not once per column tile.
  TileKey key{np.get(),
              at.bcastRows ? nullptr : at.rowOff,
              at.bcastCols ? 0 : at.colTile,
              at.validRows,
              at.bcastRows,
              at.bcastCols};
  auto it = tileCse->find(key);
  if (it != tileCse->end()) return it->second;
  Value* v = emitTileUncached(np, at);
  (*tileCse)[key] = v;
  return v;
}

Value* emitTileUncached(const NodePtr& np, const TileAt& at) {
  const ArrayNode& n = *np;
  llo::Builder& b = builder();
  auto child = [&](size_t i) {
    const ArrayNode& c = *n.args[i];
    TileAt a = at;
    a.bcastRows = at.bcastRows || (c.rows == 1 && n.rows > 1);
    a.bcastCols = at.bcastCols || (c.cols == 1 && n.cols > 1);
    return emitTile(n.args[i], a);
  };
  switch (n.kind) {
    case Kind::View:
      return emitView(n, at);
    case Kind::Splat:
      return cseOp(n, {}, [&] {
        if (n.scalar)
          return b.create(OpKind::VSplat, {n.scalar}, {Type::tile(n.dtype)}, {}, n.dtype)->result();
        return b.vconst(n.bits, n.dtype);
      });
    case Kind::Iota: {
      bool rows = n.op == 0;
      if (rows ? at.bcastRows : at.bcastCols) return b.vconst(0, DType::S32);
      Value* idx = b.create(OpKind::VIota, {}, {Type::tile(DType::S32)}, {rows ? 1 : 0})->result();
      if (!rows && at.colTile == 0) return idx;  // the first column tile: no offset
      Value* off =
          rows ? b.create(OpKind::VSplat, {at.rowOff}, {Type::tile(DType::S32)}, {}, DType::S32)
                     ->result()
               : b.vconst(uint32_t(at.colTile * kLanesI), DType::S32);
      return b.vbin(llo::VecBin::Add, idx, off);
    }
    case Kind::Unary: {
      Value* x = child(0);
      return cseOp(n, {x}, [&] { return b.vun(llo::VecUn(n.op), x); });
    }
    case Kind::Binary: {
      Value* x = child(0);
      Value* y = child(1);
      return cseOp(n, {x, y}, [&] { return b.vbin(llo::VecBin(n.op), x, y); });
    }
    // Masks are not shared between nodes: a mask held longer takes one of the 8
    // mask registers, which are not spilled (int64 pair division ran out).
    case Kind::Compare: {
      Value* x = child(0);
      Value* y = child(1);
      return b.create(OpKind::VCmp, {x, y}, {Type::mask()}, {n.op})->result();
    }
    case Kind::MaskOp: {
      Value* x = child(0);
      Value* y = child(1);
      return b.create(OpKind::MaskBinary, {x, y}, {Type::mask()}, {n.op})->result();
    }
    case Kind::Select: {
      Value* c = child(0);
      Value* x = child(1);
      Value* y = child(2);
      return cseOp(n, {c, x, y}, [&] {
        return b.create(OpKind::VSelect, {c, x, y}, {x->type})->result();
      });
    }
    case Kind::Cast: {
      // bf16 -> f32 of a constant is exact: the f32 constant, no widening per tile.
      const ArrayNode& c = *n.args[0];
      if (n.op == 0 && n.dtype == DType::F32 && c.kind == Kind::Splat && !c.scalar &&
          c.dtype == DType::Bf16) {
        ArrayNode f;
        f.kind = Kind::Splat;
        f.dtype = DType::F32;
        f.bits = (c.bits & 0xFFFFu) << 16;
        return cseOp(f, {}, [&] { return b.vconst(f.bits, DType::F32); });
      }
      // f32 -> bf16 -> f32 is one rounding in the f32 layout (vrnd.bf16.f32), not a
      // convert pair; the bf16 tile is emitted only if something else reads it.
      if (n.op == 0 && n.dtype == DType::F32 && c.kind == Kind::Cast && c.op == 0 &&
          c.dtype == DType::Bf16 && c.args[0]->dtype == DType::F32) {
        const ArrayNode& g = *c.args[0];
        TileAt a = at;
        a.bcastRows = at.bcastRows || (c.rows == 1 && n.rows > 1) || (g.rows == 1 && c.rows > 1);
        a.bcastCols = at.bcastCols || (c.cols == 1 && n.cols > 1) || (g.cols == 1 && c.cols > 1);
        Value* x = emitTile(c.args[0], a);
        ArrayNode r;
        r.kind = Kind::Unary;
        r.op = int(llo::VecUn::RoundBf16);
        r.dtype = DType::F32;
        return cseOp(r, {x}, [&] { return b.vun(llo::VecUn::RoundBf16, x); });
      }
      Value* x = child(0);
      if (n.op == 1) return cseOp(n, {x}, [&] { return b.vbitcast(x, n.dtype); });
      return cseOp(n, {x}, [&] { return b.vcast(x, n.dtype); });
    }
    case Kind::Dot:
      return emitTile(emitDot(np), at);
    case Kind::LaneRoll: {
      Value* x = child(0);
      if (n.op == 0) return x;
      return b.create(OpKind::VRotLanes, {x}, {x->type}, {int64_t(n.op)})->result();
    }
    case Kind::Tiles: {
      int64_t row = 0;
      if (!at.bcastRows) {
        if (!at.rowOff->def || at.rowOff->def->kind != OpKind::SConst)
          fail(n.loc, "internal: a loop-carried array addressed at a run-time row");
        row = at.rowOff->def->ints[0] / kSublanesI;
      }
      int64_t colTiles = (n.cols + kLanesI - 1) / kLanesI;
      return n.tiles.at(size_t(row * colTiles + (at.bcastCols ? 0 : at.colTile)));
    }
  }
  return nullptr;
}

// Calls fn(rowOffset, validRows) for each row tile of `rows` rows: a counted
// loop over the full tiles, then the partial tile (if any) peeled with static masks.
// The loop body holds `unroll` row tiles: independent tiles in one body let the
// scheduler overlap their latency chains. Full tiles the unroll does not divide
// follow the loop in straight-line code (85 = 10 x 8 + 5 for 680 rows: shrinking
// the unroll to a divisor gave 5 tiles a body, each ending in an exposed tail).
void forEachRowTile(int64_t rows, const std::function<void(Value*, int)>& fn, int64_t unroll = 1) {
  int64_t full = rows / kSublanesI, rem = rows % kSublanesI;
  int64_t u = std::max<int64_t>(1, std::min(unroll, full));
  int64_t looped = full / u * u;
  if (unrollRowTiles > 0 || (full > 0 && u == full)) {
    looped = 0;
  } else if (looped > u) {
    llo::Op* loop =
        builder().forLoop(iconst(0), iconst(looped * kSublanesI), kSublanesI * u, "row");
    inBlock(&loop->regions[0], [&] {
      Value* row = loop->regions[0].args[0];
      for (int64_t k = 0; k < u; ++k)
        fn(k == 0 ? row : add(row, iconst(k * kSublanesI)), kSublanesI);
    });
  } else {
    looped = 0;
  }
  for (int64_t i = looped; i < full; ++i) fn(iconst(i * kSublanesI), kSublanesI);
  if (rem) fn(iconst(full * kSublanesI), int(rem));
}

// Row tiles per loop body for element-wise code over `colTiles` column tiles: about 8
// tiles in flight, the width at which an element-wise row already was unrolled.
int64_t rowUnrollFor(int64_t colTiles) {
  return std::max<int64_t>(1, 8 / std::max<int64_t>(1, colTiles));
}

bool hasMasks(const NodePtr& n, std::set<const ArrayNode*>& seen) {
  if (!seen.insert(n.get()).second) return false;
  if (n->kind == Kind::Compare || n->kind == Kind::MaskOp) return true;
  for (const NodePtr& x : n->args)
    if (hasMasks(x, seen)) return true;
  return false;
}

// Distinct compare and mask nodes of an expression (its DAG).
int64_t maskNodes(const NodePtr& n) {
  std::set<const ArrayNode*> seen;
  int64_t count = 0;
  std::function<void(const NodePtr&)> walk = [&](const NodePtr& x) {
    if (!seen.insert(x.get()).second) return;
    count += x->kind == Kind::Compare || x->kind == Kind::MaskOp;
    for (const NodePtr& c : x->args) walk(c);
  };
  walk(n);
  return count;
}

// Distinct nodes of an expression (its DAG), up to `limit`.
int64_t nodeCount(const NodePtr& n, std::set<const ArrayNode*>& seen, int64_t limit) {
  if (int64_t(seen.size()) >= limit || !seen.insert(n.get()).second) return int64_t(seen.size());
  for (const NodePtr& a : n->args) nodeCount(a, seen, limit);
  return int64_t(seen.size());
}

// A small expression with a transcendental op (silu: the EUP takes 4 cycles a
// tile, and one body's tail after its last one is exposed) holds 16 row tiles
// per loop body: the tail is spread over twice the tiles. Larger expressions
// keep 8 (16 spilled registers in the SwiGLU backward: 108,521 -> 119,586
// cycles for [16,256,2048] on v6e).
constexpr int64_t kSmallExpressionNodes = 40;
bool hasTranscendental(const NodePtr& n, std::set<const ArrayNode*>& seen) {
  if (!seen.insert(n.get()).second) return false;
  if (n->kind == Kind::Unary) {
    auto op = llo::VecUn(n->op);
    if (op == llo::VecUn::Exp || op == llo::VecUn::Log || op == llo::VecUn::Tanh ||
        op == llo::VecUn::Rsqrt || op == llo::VecUn::Rcp || op == llo::VecUn::Sqrt)
      return true;
  }
  for (const NodePtr& a : n->args)
    if (hasTranscendental(a, seen)) return true;
  return false;
}
int64_t storeRowUnroll(const std::vector<NodePtr>& values, int64_t colTiles) {
  std::set<const ArrayNode*> seen, seenT;
  bool small = true, transcendental = false;
  for (const NodePtr& v : values) {
    small = small && nodeCount(v, seen, kSmallExpressionNodes + 1) <= kSmallExpressionNodes;
    transcendental = transcendental || hasTranscendental(v, seenT);
  }
  return small && transcendental ? 2 * rowUnrollFor(colTiles) : rowUnrollFor(colTiles);
}

// Row tiles per loop body of a lane reduction: each row tile ends in a serial chain (its
// column tiles folded, then an XLU lane reduction of `latency.xlu_reduce` cycles and the
// store), so one tile per body left the XLUs idle most of the loop. 8 independent chains
// keep both of v6e's XLUs busy; 16 spilled registers in a masked softmax max (measured:
// exp + reduce_sum of f32[262144,128] on v6e, 1,701,525 -> 624,201 cycles).
constexpr int64_t kLaneReduceRowUnroll = 8;
// A small expression with a transcendental (the loss's sum of exp) holds twice
// that: each body's tail after its last EUP op (the column folds, the XLU
// reduction, the store) is spread over twice the tiles, as in storeRowUnroll.
int64_t laneReduceRowUnroll(const NodePtr& a) {
  std::set<const ArrayNode*> seen, seenT;
  bool small = nodeCount(a, seen, kSmallExpressionNodes + 1) <= kSmallExpressionNodes;
  return small && hasTranscendental(a, seenT) ? 2 * kLaneReduceRowUnroll : kLaneReduceRowUnroll;
}

// Tiles per loop body of a sublane (axis 0) reduction, over all its column
// tiles: enough independent chains to hide one tile's latency.
constexpr int64_t kSublaneReduceTiles = 32;

uint32_t identityBits(llo::Reduce k, DType d) {
  if (k == llo::Reduce::Sum) return 0;
  return d == DType::F32 ? 0xFF800000u : 0x80000000u;  // -inf / INT32_MIN
}

// Replaces lanes >= validLanes and sublanes >= validRows by `fill`.
Value* maskTile(Value* t, int validRows, int64_t validLanes, uint32_t fill) {
  llo::Builder& b = builder();
  Value* m = nullptr;
  auto bound = [&](int axis, int64_t limit) {
    Value* idx = b.create(OpKind::VIota, {}, {Type::tile(DType::S32)}, {axis})->result();
    Value* lim = b.vconst(uint32_t(limit), DType::S32);
    return b.create(OpKind::VCmp, {idx, lim}, {Type::mask()}, {int64_t(llo::Cmp::Lt)})->result();
  };
  if (validLanes < kLanesI) m = bound(0, validLanes);
  if (validRows < kSublanesI) {
    Value* r = bound(1, validRows);
    m = m ? b.create(OpKind::MaskBinary, {m, r}, {Type::mask()}, {0})->result() : r;
  }
  if (!m) return t;
  Value* f = b.vconst(fill, t->type.dtype);
  return b.create(OpKind::VSelect, {m, t, f}, {t->type})->result();
}

void storeTile(Value* t, const RefWindow& dst, Value* rowOff, int64_t colTile, int validRows,
               int64_t lanes) {
  std::vector<Value*> ops{t, dst.ref};
  for (Value* i : dst.lead) ops.push_back(i);
  ops.push_back(add(dst.row0, rowOff));
  ops.push_back(add(dst.col0, iconst(colTile * kLanesI)));
  builder().create(OpKind::VStore, ops, {}, {(1 << validRows) - 1, lanes});
}

// The s8 view under an int8 -> bf16 widening (s8 -> s32 -> f32 -> bf16, each
// exact), or null. A bf16 dot reads such weights as s8: the matmul widens them
// in registers on their way to the MXU instead of a VMEM round trip as bf16.
NodePtr widenedS8View(const NodePtr& v) {
  const DType steps[] = {DType::Bf16, DType::F32, DType::S32};
  NodePtr cur = v;
  for (DType d : steps) {
    if (cur->kind != Kind::Cast || cur->op != 0 || cur->dtype != d) return nullptr;
    cur = cur->args[0];
  }
  if (cur->kind != Kind::View || cur->dtype != DType::S8 || cur->laneReplicated) return nullptr;
  return cur;
}

// The s8 view under a per-column dequantization of widened int8 weights,
// bf16(f32(bf16(w)) * f32(s)) with s a bf16 row (the HLO's bf16
// `convert(w) * broadcast(s)`), or null; *scale is set to the row. The matmul
// applies it in registers (one f32 multiply before the bf16 rounding, where
// the HLO rounds), so the scaled weights are not stored to VMEM either.
NodePtr scaledS8View(const NodePtr& v, NodePtr* scale) {
  if (v->kind != Kind::Cast || v->op != 0 || v->dtype != DType::Bf16) return nullptr;
  const ArrayNode& mul = *v->args[0];
  if (mul.kind != Kind::Binary || mul.op != int(llo::VecBin::Mul) || mul.dtype != DType::F32)
    return nullptr;
  for (size_t q = 0; q < 2; ++q) {
    const NodePtr& w = mul.args[q];
    const NodePtr& s = mul.args[1 - q];
    auto wideF32 = [](const NodePtr& x) {
      return x->kind == Kind::Cast && x->op == 0 && x->dtype == DType::F32;
    };
    if (!wideF32(w) || !wideF32(s)) continue;
    NodePtr view = widenedS8View(w->args[0]);
    const NodePtr& row = s->args[0];
    if (!view || row->dtype != DType::Bf16 || row->rows != 1 || row->cols != view->cols ||
        view->rows != mul.rows || view->cols != mul.cols)
      continue;
    *scale = row;
    return view;
  }
  return nullptr;
}

NodePtr emitDot(const NodePtr& np) {
  const ArrayNode& n = *np;
  if (NodePtr cached = cachedDot(np.get())) return cached;
  locate(n.loc);
  if (n.dot.resident != MxuResident::None || n.dot.continue_in_mxu)
    fail(n.loc,
         "a dot kept in the MXU (DotOptions::resident) must be stored straight into a ref "
         "(`ref.store(dot(...))`)");
  if (n.dot.lhs_into)
    fail(n.loc,
         "DotOptions::lhs_into needs the dot stored straight into a ref (`ref.store(dot(...))`)");
  NodePtr a = materialize(n.args[0], n.loc);
  NodePtr scale;
  NodePtr bb = materializeDotRhs(a, n.args[1], n.loc, n.dot.transpose_rhs, &scale);
  const ArrayNode& lhs = *a;
  const ArrayNode& rhs = *bb;
  int64_t k = n.dot.transpose_lhs ? lhs.rows : lhs.cols;
  Value* out = allocTemp({n.rows, n.cols}, n.dtype);
  Value* zero = iconst(0);
  std::vector<Value*> ops{out, zero, zero, lhs.ref};
  for (Value* i : viewIndices(lhs, lhs.row0, lhs.col0)) ops.push_back(i);
  ops.push_back(rhs.ref);
  for (Value* i : viewIndices(rhs, rhs.row0, rhs.col0)) ops.push_back(i);
  std::vector<int64_t> ints{n.rows, n.cols, k, n.dot.transpose_lhs, n.dot.transpose_rhs, 0};
  if (n.dot.latched) ints.insert(ints.end(), {0, n.dot.latched_earlier ? 2 : 1});
  if (scale) appendMatmulScale(scale, &ops, &ints);
  appendMatmulLhsDiagonal(n.dot.lhs_diagonal_blocks, &ints);
  builder().create(OpKind::Matmul, ops, {}, ints);
  NodePtr v = viewOf(out, n.rows, n.cols);
  dotCache()[np.get()].push_back({builder().block(), v});
  return v;
}

}  // namespace

void clearTraceCaches() {
  dotCache().clear();
  enclosingBlocks.clear();
}

void inBlock(llo::Block* block, const std::function<void()>& fn) {
  llo::Builder& b = builder();
  llo::Block* saved = b.block();
  b.setBlock(block);
  enclosingBlocks.push_back(saved);
  try {
    fn();
  } catch (...) {
    enclosingBlocks.pop_back();
    b.setBlock(saved);
    throw;
  }
  enclosingBlocks.pop_back();
  b.setBlock(saved);
}

Value* allocTemp(std::vector<int64_t> shape, DType dtype) {
  llo::Builder& cur = builder();
  llo::Function* fn = cur.function();
  llo::Builder top(fn, &fn->body);
  top.setLoc(cur.loc());
  top.create(OpKind::AllocVmem, {}, {Type::ref(llo::MemSpace::Vmem, dtype, std::move(shape))});
  // Allocations go first so that they dominate every use.
  auto& ops = fn->body.ops;
  std::rotate(ops.begin(), ops.end() - 1, ops.end());
  Value* ref = ops.front()->result();
  ref->hint = "tmp";
  return ref;
}

NodePtr viewOf(Value* ref, int64_t rows, int64_t cols, bool laneReplicated) {
  ArrayNode v;
  v.kind = Kind::View;
  v.rows = rows;
  v.cols = cols;
  v.dtype = ref->type.dtype;
  v.ref = ref;
  for (int d = 0; d + 2 < ref->type.rank(); ++d) v.lead.push_back(iconst(0));
  v.row0 = iconst(0);
  v.col0 = iconst(0);
  v.laneReplicated = laneReplicated;
  return std::make_shared<const ArrayNode>(std::move(v));
}

void emitStore(const RefWindow& dst, const NodePtr& value, const Loc& loc) {
  locate(loc);
  const ArrayNode& v = *value;
  if (v.dtype == DType::Pred) fail(loc, "cannot store a boolean array (use where)");
  if (v.dtype != dst.ref->type.dtype)
    fail(loc, fmt::format("storing a {} array into a {} ref (use astype)", isa::dtypeName(v.dtype),
                          dst.ref->type.str()));
  bool rowsOk = v.rows == dst.rows || v.rows == 1, colsOk = v.cols == dst.cols || v.cols == 1;
  if (!rowsOk || !colsOk)
    fail(loc, fmt::format("storing a [{},{}] array into a [{},{}] window", v.rows, v.cols, dst.rows,
                          dst.cols));
  int64_t colTiles = (dst.cols + kLanesI - 1) / kLanesI;
  UnrollIfTiles unroll(value);
  OpCseUnlessMasks opCse({value});
  emitDotsOf(value);
  forEachRowTile(
      dst.rows,
      [&](Value* rowOff, int valid) {
        TileCseScope cse;  // one row tile: its column tiles share the lane-broadcast tiles
        for (int64_t tj = 0; tj < colTiles; ++tj) {
          TileAt at{rowOff, tj, valid, v.rows == 1 && dst.rows > 1, v.cols == 1 && dst.cols > 1};
          Value* t = emitTile(value, at);
          storeTile(t, dst, rowOff, tj, valid, std::min<int64_t>(kLanesI, dst.cols - tj * kLanesI));
        }
      },
      storeRowUnroll({value}, colTiles));
}

void emitStores(const std::vector<RefWindow>& dsts, const std::vector<NodePtr>& values,
                const Loc& loc, const std::vector<RefWindow>& sumDsts,
                const std::vector<NodePtr>& sums) {
  locate(loc);
  if (sumDsts.size() != sums.size())
    fail(loc, fmt::format("store_together needs one accumulator per sum ({} accumulators, {} sums)",
                          sumDsts.size(), sums.size()));
  if (dsts.empty() || dsts.size() != values.size())
    fail(loc, fmt::format("store_together needs one array per ref ({} refs, {} arrays)",
                          dsts.size(), values.size()));
  const RefWindow& d0 = dsts.front();
  for (size_t k = 0; k < dsts.size(); ++k) {
    const RefWindow& dst = dsts[k];
    const ArrayNode& v = *values[k];
    if (dst.rows != d0.rows || dst.cols != d0.cols)
      fail(loc, fmt::format("store_together needs windows of one shape ([{},{}] and [{},{}])",
                            d0.rows, d0.cols, dst.rows, dst.cols));
    if (v.dtype == DType::Pred) fail(loc, "cannot store a boolean array (use where)");
    if (v.dtype != dst.ref->type.dtype)
      fail(loc, fmt::format("storing a {} array into a {} ref (use astype)",
                            isa::dtypeName(v.dtype), dst.ref->type.str()));
    if (!(v.rows == dst.rows || v.rows == 1) || !(v.cols == dst.cols || v.cols == 1))
      fail(loc, fmt::format("storing a [{},{}] array into a [{},{}] window", v.rows, v.cols,
                            dst.rows, dst.cols));
  }
  for (size_t j = 0; j < sums.size(); ++j) {
    const ArrayNode& v = *sums[j];
    if (sumDsts[j].rows != kSublanesI || sumDsts[j].cols != d0.cols ||
        sumDsts[j].ref->type.dtype != DType::F32 || v.dtype != DType::F32)
      fail(loc, fmt::format("a sum of store_together needs an f32 [{},{}] accumulator and an f32 "
                            "value",
                            kSublanesI, d0.cols));
    if (!(v.rows == d0.rows || v.rows == 1) || !(v.cols == d0.cols || v.cols == 1))
      fail(loc, fmt::format("summing a [{},{}] array over a [{},{}] window", v.rows, v.cols,
                            d0.rows, d0.cols));
  }
  const int64_t colTiles = (d0.cols + kLanesI - 1) / kLanesI;
  std::vector<NodePtr> all = values;
  all.insert(all.end(), sums.begin(), sums.end());
  OpCseUnlessMasks opCse(all);
  std::vector<std::unique_ptr<UnrollIfTiles>> unroll;
  for (const NodePtr& v : all) {
    unroll.push_back(std::make_unique<UnrollIfTiles>(v));
    emitDotsOf(v);
  }
  llo::Builder& b = builder();
  // One tile of every value stored, at (rowOff, column tile tj).
  auto storeTileOfEach = [&](Value* rowOff, int64_t tj, int valid) {
    for (size_t k = 0; k < dsts.size(); ++k) {
      const ArrayNode& v = *values[k];
      const RefWindow& dst = dsts[k];
      TileAt at{rowOff, tj, valid, v.rows == 1 && dst.rows > 1, v.cols == 1 && dst.cols > 1};
      storeTile(emitTile(values[k], at), dst, rowOff, tj, valid,
                std::min<int64_t>(kLanesI, dst.cols - tj * kLanesI));
    }
  };
  if (columnsFirst > 0 && unrollRowTiles > 0 && sums.empty()) {
    // Column tile by column tile, each down the rows (EpilogueByColumns).
    const int64_t full = d0.rows / kSublanesI, rem = d0.rows % kSublanesI;
    std::vector<Value*> rowOffs;  // one constant per row, shared by its column tiles
    for (int64_t i = 0; i < full + (rem ? 1 : 0); ++i) rowOffs.push_back(iconst(i * kSublanesI));
    for (int64_t tj = 0; tj < colTiles; ++tj)
      for (int64_t i = 0; i < full + (rem ? 1 : 0); ++i) {
        const int valid = i < full ? int(kSublanesI) : int(rem);
        TileCseScope cse;
        storeTileOfEach(rowOffs[size_t(i)], tj, valid);
      }
    return;
  }
  // One walk over the row tiles for every value: what the values share is
  // computed once per tile, in registers (separate stores would each recompute
  // it, or read it back from a VMEM temporary written by a loop of its own).
  forEachRowTile(
      d0.rows,
      [&](Value* rowOff, int valid) {
        TileCseScope cse;
        for (int64_t tj = 0; tj < colTiles; ++tj) storeTileOfEach(rowOff, tj, valid);
        // The sums: each tile (rows past the window's and lanes past its columns
        // zeroed) added into its column's accumulator tile.
        for (int64_t tj = 0; tj < colTiles; ++tj)
          for (size_t j = 0; j < sums.size(); ++j) {
            const ArrayNode& v = *sums[j];
            const RefWindow& acc = sumDsts[j];
            TileAt at{rowOff, tj, valid, v.rows == 1 && d0.rows > 1, v.cols == 1 && d0.cols > 1};
            Value* t = maskTile(emitTile(sums[j], at), valid,
                                std::min<int64_t>(kLanesI, d0.cols - tj * kLanesI), 0);
            std::vector<Value*> ops{acc.ref};
            for (Value* i : acc.lead) ops.push_back(i);
            ops.push_back(acc.row0);
            ops.push_back(add(acc.col0, iconst(tj * kLanesI)));
            Value* old =
                b.create(OpKind::VLoad, ops, {Type::tile(DType::F32)}, {1, 0xFF})->result();
            storeTile(b.vbin(llo::VecBin::Add, old, t), acc, iconst(0), tj, kSublanesI, kLanesI);
          }
      },
      storeRowUnroll(all, colTiles));
}

void emitStoreByColumns(const RefWindow& dst, const NodePtr& value, const Loc& loc) {
  locate(loc);
  const ArrayNode& v = *value;
  if (v.dtype != dst.ref->type.dtype)
    fail(loc, "internal: emitStoreByColumns into a ref of another type");
  const int64_t colTiles = (dst.cols + kLanesI - 1) / kLanesI;
  std::vector<Value*> rowOffs;
  for (int64_t r = 0; r < dst.rows; r += kSublanesI) rowOffs.push_back(iconst(r));
  // A lane-broadcast tile (a per-row scale) is emitted again for every column
  // tile: held across the columns, each row tile's would take a register for
  // the whole store.
  emitDotsOf(value);  // a dot inside the LHS expression is no overlapped VPU work
  struct OverlapScope {
    bool saved = builder().overlap();
    OverlapScope() { builder().setOverlap(true); }
    ~OverlapScope() { builder().setOverlap(saved); }
  } overlap;
  for (int64_t tj = 0; tj < colTiles; ++tj)
    for (size_t i = 0; i < rowOffs.size(); ++i) {
      int valid = int(std::min<int64_t>(kSublanesI, dst.rows - int64_t(i) * kSublanesI));
      TileCseScope cse;
      TileAt at{rowOffs[i], tj, valid, v.rows == 1 && dst.rows > 1, v.cols == 1 && dst.cols > 1};
      Value* t = emitTile(value, at);
      storeTile(t, dst, rowOffs[i], tj, valid, std::min<int64_t>(kLanesI, dst.cols - tj * kLanesI));
    }
}

OverlapWithMxu::OverlapWithMxu() : saved_(builder().overlap()) {
  builder().setOverlap(true);
  ++unrollRowTiles;
}

OverlapWithMxu::~OverlapWithMxu() {
  --unrollRowTiles;
  builder().setOverlap(saved_);
}

EpilogueByColumns::EpilogueByColumns() { ++columnsFirst; }

EpilogueByColumns::~EpilogueByColumns() { --columnsFirst; }

NodePtr materializeDotRhs(const NodePtr& lhs, const NodePtr& rhs, const Loc& loc, bool transposed,
                          NodePtr* scale) {
  if (lhs->dtype == DType::Bf16) {
    if (NodePtr w = widenedS8View(rhs)) return w;
    NodePtr row;
    if (!transposed && scale)
      if (NodePtr w = scaledS8View(rhs, &row)) {
        *scale = materialize(row, loc);
        return w;
      }
  }
  return materialize(rhs, loc);
}

void appendMatmulScale(const NodePtr& scale, std::vector<Value*>* ops, std::vector<int64_t>* ints) {
  ops->push_back(scale->ref);
  for (Value* i : viewIndices(*scale, scale->row0, scale->col0)) ops->push_back(i);
  ints->resize(9, 0);
  ints->push_back(1);
}

void appendMatmulLhsDiagonal(int64_t blocks, std::vector<int64_t>* ints) {
  if (blocks <= 1) return;
  ints->resize(10, 0);
  ints->push_back(blocks);
}

void emitMxuLatch(const NodePtr& w, const Loc& loc) {
  NodePtr v = materialize(w, loc);
  locate(loc);
  std::vector<Value*> ops{v->ref};
  for (Value* i : viewIndices(*v, v->row0, v->col0)) ops.push_back(i);
  builder().create(OpKind::MxuLatch, ops, {}, {v->rows, v->cols});
}

NodePtr materialize(const NodePtr& value, const Loc& loc) {
  if (value->kind == Kind::View && !value->laneReplicated) return value;
  if (value->kind == Kind::Dot) return emitDot(value);
  Value* tmp = allocTemp({value->rows, value->cols}, value->dtype);
  RefWindow w{tmp, {}, iconst(0), iconst(0), value->rows, value->cols};
  emitStore(w, value, loc);
  return viewOf(tmp, value->rows, value->cols);
}

std::vector<Value*> emitTiles(const NodePtr& value, bool cse) {
  const ArrayNode& n = *value;
  UnrollIfTiles unroll(value);
  std::vector<Value*> out;
  int64_t colTiles = (n.cols + kLanesI - 1) / kLanesI;
  for (int64_t r = 0; r < n.rows; r += kSublanesI) {
    int valid = int(std::min<int64_t>(kSublanesI, n.rows - r));
    for (int64_t tj = 0; tj < colTiles; ++tj) {
      std::optional<TileCseScope> scope;
      if (cse) scope.emplace();
      out.push_back(emitTile(value, TileAt{iconst(r), tj, valid, n.rows == 1, n.cols == 1}));
    }
  }
  return out;
}

NodePtr tilesNode(std::vector<Value*> tiles, int64_t rows, int64_t cols, DType dtype) {
  ArrayNode v;
  v.kind = Kind::Tiles;
  v.rows = rows;
  v.cols = cols;
  v.dtype = dtype;
  v.tiles = std::move(tiles);
  v.laneReplicated = cols == 1;
  return std::make_shared<const ArrayNode>(std::move(v));
}

NodePtr reduce(const NodePtr& a, llo::Reduce kind, int axis, const Loc& loc, bool inVregs) {
  UnrollIfTiles unroll(a);
  OpCseUnlessMasks opCse({a});
  const ArrayNode& n = *a;
  DType d = n.dtype;
  if (d != DType::F32 && d != DType::S32)
    fail(loc,
         fmt::format("reductions need f32 or s32 arrays, not {} (use astype)", isa::dtypeName(d)));
  emitDotsOf(a);
  llo::Builder& b = builder();
  auto combine = [&](Value* x, Value* y) {
    return b.vbin(kind == llo::Reduce::Sum ? llo::VecBin::Add : llo::VecBin::Max, x, y);
  };
  uint32_t ident = identityBits(kind, d);
  int64_t colTiles = (n.cols + kLanesI - 1) / kLanesI;
  auto lanesOf = [&](int64_t tj) { return std::min<int64_t>(kLanesI, n.cols - tj * kLanesI); };
  // One row tile reduced over its lanes: column tiles folded in order, then the lane tree.
  auto laneTile = [&](Value* rowOff, int valid) {
    TileCseScope cse;
    Value* acc = nullptr;
    for (int64_t tj = 0; tj < colTiles; ++tj) {
      Value* t = emitTile(a, TileAt{rowOff, tj, valid, false, false});
      t = maskTile(t, kSublanesI, lanesOf(tj), ident);
      acc = acc ? combine(acc, t) : t;
    }
    return b.create(OpKind::VReduceLanes, {acc}, {acc->type}, {int64_t(kind)})->result();
  };
  if (axis == 1 && inVregs) {
    if (n.rows > kSublanesI)
      fail(loc, fmt::format("a lane reduction kept in registers covers at most {} rows, not {}",
                            kSublanesI, n.rows));
    TileCseScope cse;
    return tilesNode({laneTile(iconst(0), int(n.rows))}, n.rows, 1, d);
  }
  if (axis == 1) {
    Value* out = allocTemp({n.rows, 1}, d);
    forEachRowTile(
        n.rows,
        [&](Value* rowOff, int valid) {
          Value* r = laneTile(rowOff, valid);
          std::vector<Value*> ops{r, out, add(iconst(0), rowOff), iconst(0)};
          b.create(OpKind::VStore, ops, {}, {(1 << valid) - 1, kLanesI});
        },
        laneReduceRowUnroll(a));
    return viewOf(out, n.rows, 1, /*laneReplicated=*/true);
  }
  if (axis != 0) fail(loc, fmt::format("reduction axis must be 0 or 1, not {}", axis));
  // Sublanes: accumulate row tiles in a one-tile-high VMEM accumulator, then
  // finish with the rotate tree 4, 2, 1 and keep sublane 0.
  Value* acc = allocTemp({kSublanesI, n.cols}, d);
  Value* out = allocTemp({1, n.cols}, d);
  for (int64_t tj = 0; tj < colTiles; ++tj)
    b.create(OpKind::VStore, {b.vconst(ident, d), acc, iconst(0), iconst(tj * kLanesI)}, {},
             {0xFF, kLanesI});
  // Row tiles in groups of `group` per loop body: each column's accumulator is
  // loaded once per group, the group's tiles folded into it in row order (the
  // order of one tile per body, so the same sums), and stored once. The tiles'
  // chains overlap instead of each waiting for the last one's store.
  const int64_t full = n.rows / kSublanesI;
  int64_t group = std::max<int64_t>(1, std::min<int64_t>(kSublaneReduceTiles / colTiles, full));
  // Masks in the tiles (compares): one tile per body, as the 8 mask registers
  // are not spilled (the rng's 64-bit pair arithmetic ran out with 4 tiles).
  // One compare per tile (a one-hot select) keeps the group: each mask is read
  // once, right after its compare, as in the lane reductions' 8 row tiles.
  if (maskNodes(a) > 1) group = 1;
  // A count of row tiles the group does not divide (85 = 5 x 17 for 680 rows)
  // runs whole groups in the loop and the rest as one shorter group after it,
  // still in row order: shrinking the group to a divisor left one tile a body.
  if (unrollRowTiles > 0) group = std::max<int64_t>(1, full);  // Tiles: constant rows
  const int64_t looped = full / group * group;
  auto rowGroup = [&](const std::vector<std::pair<Value*, int>>& tiles) {
    std::vector<std::vector<Value*>> ts(tiles.size());
    for (size_t i = 0; i < tiles.size(); ++i) {
      TileCseScope cse;  // a row tile's column tiles share its lane-broadcast tiles
      for (int64_t tj = 0; tj < colTiles; ++tj) {
        Value* t = emitTile(a, TileAt{tiles[i].first, tj, tiles[i].second, false, false});
        ts[i].push_back(maskTile(t, tiles[i].second, kLanesI, ident));
      }
    }
    for (int64_t tj = 0; tj < colTiles; ++tj) {
      Value* col = iconst(tj * kLanesI);
      Value* sum =
          b.create(OpKind::VLoad, {acc, iconst(0), col}, {Type::tile(d)}, {1, 0xFF})->result();
      for (size_t i = 0; i < tiles.size(); ++i) sum = combine(sum, ts[i][size_t(tj)]);
      b.create(OpKind::VStore, {sum, acc, iconst(0), col}, {}, {0xFF, kLanesI});
    }
  };
  if (looped > group) {
    llo::Op* loop =
        builder().forLoop(iconst(0), iconst(looped * kSublanesI), kSublanesI * group, "row");
    inBlock(&loop->regions[0], [&] {
      Value* row = loop->regions[0].args[0];
      std::vector<std::pair<Value*, int>> tiles;
      for (int64_t k = 0; k < group; ++k)
        tiles.emplace_back(k == 0 ? row : add(row, iconst(k * kSublanesI)), int(kSublanesI));
      rowGroup(tiles);
    });
  }
  auto straight = [&](int64_t from, int64_t to) {
    std::vector<std::pair<Value*, int>> tiles;
    for (int64_t k = from; k < to; ++k) tiles.emplace_back(iconst(k * kSublanesI), int(kSublanesI));
    if (!tiles.empty()) rowGroup(tiles);
  };
  if (looped == group) straight(0, looped);
  straight(looped, full);
  if (int64_t rem = n.rows % kSublanesI) rowGroup({{iconst(full * kSublanesI), int(rem)}});
  for (int64_t tj = 0; tj < colTiles; ++tj) {
    Value* col = iconst(tj * kLanesI);
    Value* t = b.create(OpKind::VLoad, {acc, iconst(0), col}, {Type::tile(d)}, {1, 0xFF})->result();
    for (int amount : {4, 2, 1}) {
      Value* r = b.create(OpKind::VRotSublanes, {t}, {t->type}, {amount})->result();
      t = combine(t, r);
    }
    b.create(OpKind::VStore, {t, out, iconst(0), col}, {}, {0x01, kLanesI});
  }
  return viewOf(out, 1, n.cols);
}

}  // namespace tpusim::kernels::dsl
