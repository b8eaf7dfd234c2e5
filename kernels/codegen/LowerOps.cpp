// Lowering of scalar, tile and control-flow ops (see Lowering.h).
#include <fmt/format.h>

#include <limits>

#include "isa/support/Numerics.h"
#include "kernels/codegen/FirstRead.h"
#include "kernels/codegen/Lowering.h"
#include "kernels/llo/Printer.h"

namespace tpusim::kernels::codegen {

using isa::Opcode;
using llo::OpKind;

namespace {

MOperand I(int64_t v) { return MOperand::imm(v); }
bool fitsS16(int64_t v) { return v >= -32768 && v <= 32767; }
int log2Exact(int64_t v) {
  if (v <= 0 || (v & (v - 1))) return -1;
  int k = 0;
  while ((int64_t(1) << k) < v) ++k;
  return k;
}

[[noreturn]] void unsupported(const llo::Op& op, const std::string& why) {
  std::string where = op.loc.known() ? fmt::format("{}:{}: ", op.loc.file, op.loc.line) : "";
  std::string text = llo::printOp(op);
  throw CodegenError(
      fmt::format("{}error: cannot compile '{}': {}", where, text.substr(0, text.find('\n')), why));
}

Opcode binaryOpcode(llo::VecBin k, llo::DType d) {
  bool f = d == llo::DType::F32;
  switch (k) {
    case llo::VecBin::Add:
      return f ? Opcode::VAddF32 : Opcode::VAddS32;
    case llo::VecBin::Sub:
      return f ? Opcode::VSubF32 : Opcode::VSubS32;
    case llo::VecBin::Mul:
      return f ? Opcode::VMulF32 : Opcode::VMulS32;
    case llo::VecBin::Max:
      return f ? Opcode::VMaxF32 : Opcode::VMaxS32;
    case llo::VecBin::Min:
      return f ? Opcode::VMinF32 : Opcode::VMinS32;
    case llo::VecBin::And:
      return Opcode::VAnd;
    case llo::VecBin::Or:
      return Opcode::VOr;
    case llo::VecBin::Xor:
      return Opcode::VXor;
    case llo::VecBin::Shl:
      return Opcode::VShl;
    case llo::VecBin::Shr:
      return Opcode::VShr;
    case llo::VecBin::Sra:
      return Opcode::VSra;
  }
  return Opcode::Nop;
}

Opcode unaryOpcode(llo::VecUn k, llo::DType d) {
  if (d == llo::DType::S32) return k == llo::VecUn::Abs ? Opcode::VAbsS32 : Opcode::VNegS32;
  switch (k) {
    case llo::VecUn::Abs:
      return Opcode::VAbsF32;
    case llo::VecUn::Neg:
      return Opcode::VNegF32;
    case llo::VecUn::Exp:
      return Opcode::VExpF32;
    case llo::VecUn::Log:
      return Opcode::VLogF32;
    case llo::VecUn::Rsqrt:
      return Opcode::VRsqrtF32;
    case llo::VecUn::Rcp:
      return Opcode::VRcpF32;
    case llo::VecUn::Tanh:
      return Opcode::VTanhF32;
    case llo::VecUn::Sqrt:
      return Opcode::VSqrtF32;
    case llo::VecUn::RoundBf16:
      return Opcode::VRndBf16F32;
  }
  return Opcode::Nop;
}

Opcode cmpOpcode(llo::Cmp k, llo::DType d) {
  bool f = d == llo::DType::F32;
  switch (k) {
    case llo::Cmp::Eq:
      return f ? Opcode::VCmpEqF32 : Opcode::VCmpEqS32;
    case llo::Cmp::Ne:
      return f ? Opcode::VCmpNeF32 : Opcode::VCmpNeS32;
    case llo::Cmp::Lt:
      return f ? Opcode::VCmpLtF32 : Opcode::VCmpLtS32;
    case llo::Cmp::Le:
      return f ? Opcode::VCmpLeF32 : Opcode::VCmpLeS32;
    case llo::Cmp::Gt:
      return f ? Opcode::VCmpGtF32 : Opcode::VCmpGtS32;
    case llo::Cmp::Ge:
      return f ? Opcode::VCmpGeF32 : Opcode::VCmpGeS32;
  }
  return Opcode::Nop;
}

}  // namespace

Lowerer::Lowerer(MFunction& fn, MemoryPlan& mem, const TargetInfo& t, std::vector<LoopRange>& loops,
                 std::vector<isa::DataSegment>& data)
    : fn_(fn), mem_(mem), t_(t), loops_(loops), data_(data) {
  if (fn_.blocks.empty()) newBlock("entry");
}

int Lowerer::newBlock(const std::string& label) {
  fn_.blocks.push_back(MBlock{fmt::format("{}{}", label, fn_.blocks.size()), {}});
  cur_ = int(fn_.blocks.size()) - 1;
  return cur_;
}

void Lowerer::emit(MInstr mi) {
  mi.debug = debug_;
  mi.overlap = overlap_;
  // A write to a register the value-numbering table names makes its entries stale.
  if (!pureRegs_.empty())
    forEachReg(mi, [&](const MOperand& r, isa::Access a) {
      if (a != isa::Access::Read && r.cls == RegClass::Scalar && pureRegs_.count(r.value)) {
        pure_.clear();
        pureRegs_.clear();
      }
    });
  fn_.blocks[cur_].instrs.push_back(mi);
}

MOperand Lowerer::pure(Opcode op, std::vector<MOperand> sources) {
  if (pureBlock_ != cur_) {
    pure_.clear();
    pureRegs_.clear();
    pureBlock_ = cur_;
  }
  std::vector<int64_t> key{int64_t(op)};
  for (const MOperand& o : sources) {
    key.push_back(int64_t(o.kind) << 8 | int64_t(o.cls));
    key.push_back(o.value);
  }
  auto it = pure_.find(key);
  if (it != pure_.end()) return it->second;
  MOperand d = fn_.newReg(RegClass::Scalar);
  sources.insert(sources.begin(), d);
  emit(op, std::move(sources));
  pure_.emplace(std::move(key), d);
  pureRegs_.insert(d.value);
  for (const MOperand& o : sources)
    if (o.isReg()) pureRegs_.insert(o.value);
  return d;
}

int Lowerer::debugFor(const llo::SourceLoc& loc, const std::string& op) {
  for (size_t i = 0; i < fn_.debugLocs.size(); ++i)
    if (fn_.debugLocs[i].file == loc.file && fn_.debugLocs[i].line == loc.line &&
        fn_.debugLocs[i].op == op)
      return int(i);
  fn_.debugLocs.push_back(DebugLoc{op, loc.file, loc.line});
  return int(fn_.debugLocs.size()) - 1;
}

MOperand Lowerer::constReg(int64_t c) {
  MOperand r = fn_.newReg(RegClass::Scalar);
  emit(Opcode::SLi, {r, I(uint32_t(int32_t(c)))});
  return r;
}

MOperand Lowerer::reg(const ScalarVal& v) {
  if (v.isConst) return constReg(v.c);
  if (v.c == 0) return v.reg;
  if (fitsS16(v.c)) return pure(Opcode::SAddI, {v.reg, I(v.c)});
  return pure(Opcode::SAdd, {v.reg, pure(Opcode::SLi, {I(uint32_t(int32_t(v.c)))})});
}

std::optional<std::pair<int64_t, int64_t>> Lowerer::rangeOf(const ScalarVal& v) const {
  if (v.isConst) return std::pair{v.c, v.c};
  if (v.reg.kind != MOperand::Kind::VirtReg || v.reg.cls != RegClass::Scalar) return std::nullopt;
  auto it = ranges_.find(v.reg.value);
  if (it == ranges_.end()) return std::nullopt;
  const int64_t lo = it->second.first + v.c, hi = it->second.second + v.c;
  if (lo < std::numeric_limits<int32_t>::min() || hi > std::numeric_limits<int32_t>::max())
    return std::nullopt;  // may wrap
  return std::pair{lo, hi};
}

namespace {
// A comparison of values in [a.first, a.second] and [b.first, b.second]
// when the ranges decide it: 0 or 1, else -1.
int decideCompare(llo::ScalarBin k, std::pair<int64_t, int64_t> a, std::pair<int64_t, int64_t> b) {
  using K = llo::ScalarBin;
  const bool disjoint = a.second < b.first || b.second < a.first;
  switch (k) {
    case K::Lt:
      return a.second < b.first ? 1 : a.first >= b.second ? 0 : -1;
    case K::Le:
      return a.second <= b.first ? 1 : a.first > b.second ? 0 : -1;
    case K::Gt:
      return a.first > b.second ? 1 : a.second <= b.first ? 0 : -1;
    case K::Ge:
      return a.first >= b.second ? 1 : a.second < b.first ? 0 : -1;
    case K::Eq:
      return disjoint ? 0 : -1;
    case K::Ne:
      return disjoint ? 1 : -1;
    default:
      return -1;
  }
}
}  // namespace

ScalarVal Lowerer::scalarOp(llo::ScalarBin k, const ScalarVal& a, const ScalarVal& b) {
  using K = llo::ScalarBin;
  auto wrap = [](int64_t v) { return int64_t(int32_t(uint32_t(v))); };
  if (!ranges_.empty() && (!a.isConst || !b.isConst)) {
    auto ra = rangeOf(a), rb = rangeOf(b);
    if (ra && rb) {
      const int d = decideCompare(k, *ra, *rb);
      if (d >= 0) return ScalarVal::constant(d);
    }
  }
  if (a.isConst && b.isConst) {
    int32_t x = int32_t(a.c), y = int32_t(b.c);
    int64_t r = 0;
    switch (k) {
      case K::Add:
        r = wrap(int64_t(x) + y);
        break;
      case K::Sub:
        r = wrap(int64_t(x) - y);
        break;
      case K::Mul:
        r = wrap(int64_t(x) * y);
        break;
      case K::Div:
        r = y ? x / y : 0;
        break;
      case K::Rem:
        r = y ? x % y : 0;
        break;
      case K::Min:
        r = std::min(x, y);
        break;
      case K::Max:
        r = std::max(x, y);
        break;
      case K::And:
        r = x & y;
        break;
      case K::Or:
        r = x | y;
        break;
      case K::Xor:
        r = x ^ y;
        break;
      case K::Shl:
        r = wrap(int64_t(uint32_t(x) << (y & 31)));
        break;
      case K::Shr:
        r = int64_t(uint32_t(x) >> (y & 31));
        break;
      case K::Eq:
        r = x == y;
        break;
      case K::Ne:
        r = x != y;
        break;
      case K::Lt:
        r = x < y;
        break;
      case K::Le:
        r = x <= y;
        break;
      case K::Gt:
        r = x > y;
        break;
      case K::Ge:
        r = x >= y;
        break;
    }
    return ScalarVal{true, r, {}};
  }
  // Commutative ops keep a constant on the right, where the immediate forms are.
  bool commutes = k == K::Add || k == K::Mul || k == K::And || k == K::Or || k == K::Xor ||
                  k == K::Min || k == K::Max || k == K::Eq || k == K::Ne;
  if (a.isConst && !b.isConst && commutes) return scalarOp(k, b, a);
  auto R = [](MOperand r, int64_t off = 0, bool nonNeg = false) {
    return ScalarVal{false, off, r, nonNeg};
  };
  // Offset arithmetic: (x + c) + k, (x + c) * k and (x + c) << k keep the
  // constant apart, so address chains cost one register per distinct x.
  if (!a.isConst && b.isConst) {
    switch (k) {
      case K::Add:
        return R(a.reg, wrap(a.c + b.c), a.nonNeg);
      case K::Sub:
        return R(a.reg, wrap(a.c - b.c), a.nonNeg);
      case K::Mul: {
        if (b.c == 0) return ScalarVal::constant(0);
        if (b.c == 1) return a;
        MOperand d = fitsS16(b.c) ? pure(Opcode::SMulI, {a.reg, I(b.c)})
                                  : pure(Opcode::SMul, {a.reg, constReg(b.c)});
        return R(d, wrap(a.c * b.c), a.nonNeg && b.c >= 0);
      }
      case K::Shl:
        return R(pure(Opcode::SShlI, {a.reg, I(b.c & 31)}),
                 wrap(int64_t(uint32_t(a.c) << (b.c & 31))), a.nonNeg);
      default:
        break;
    }
  }
  if (a.isConst && k == K::Sub)  // k - (x + c) = (k - c) - x
    return R(pure(Opcode::SSub, {constReg(wrap(a.c - b.c)), b.reg}));
  if (!a.isConst && !b.isConst && (k == K::Add || k == K::Sub)) {
    MOperand d = pure(k == K::Add ? Opcode::SAdd : Opcode::SSub, {a.reg, b.reg});
    return k == K::Add ? R(d, wrap(a.c + b.c), a.nonNeg && b.nonNeg) : R(d, wrap(a.c - b.c));
  }
  // Everything else reads plain registers.
  const ScalarVal x = R(reg(a)), y = b.isConst ? b : R(reg(b));
  if (y.isConst) {
    if (k == K::Shr) return R(pure(Opcode::SShrI, {x.reg, I(y.c & 31)}), 0, (y.c & 31) != 0);
    if (k == K::Div || k == K::Rem) {
      int sh = log2Exact(y.c);
      if (sh < 0)
        throw CodegenError(
            fmt::format("error: scalar division by {} (only powers of two compile)", y.c));
      if (sh == 0) return k == K::Div ? x : ScalarVal::constant(0);
      // Truncating division: add (2^sh - 1) to negative dividends first.
      MOperand sign = fn_.newReg(RegClass::Scalar), bias = fn_.newReg(RegClass::Scalar),
               sum = fn_.newReg(RegClass::Scalar), q = fn_.newReg(RegClass::Scalar);
      emit(Opcode::SSra, {sign, x.reg, constReg(31)});
      emit(Opcode::SShrI, {bias, sign, I(32 - sh)});
      emit(Opcode::SAdd, {sum, x.reg, bias});
      emit(Opcode::SSra, {q, sum, constReg(sh)});
      if (k == K::Div) return R(q);
      MOperand back = fn_.newReg(RegClass::Scalar), d = fn_.newReg(RegClass::Scalar);
      emit(Opcode::SShlI, {back, q, I(sh)});
      emit(Opcode::SSub, {d, x.reg, back});
      return R(d);
    }
  }
  if (k == K::Div || k == K::Rem)
    throw CodegenError(
        "error: scalar division by a run-time value does not compile (the scalar "
        "unit has no divider)");
  MOperand xr = x.reg, yr = reg(y);
  switch (k) {
    case K::Mul:
      return R(pure(Opcode::SMul, {xr, yr}));
    case K::Min:
      return R(pure(Opcode::SMin, {xr, yr}));
    case K::Max:
      return R(pure(Opcode::SMax, {xr, yr}));
    case K::And:
      return R(pure(Opcode::SAnd, {xr, yr}), 0, y.isConst && y.c >= 0);
    case K::Or:
      return R(pure(Opcode::SOr, {xr, yr}));
    case K::Xor:
      return R(pure(Opcode::SXor, {xr, yr}));
    case K::Shl:
      return R(pure(Opcode::SShl, {xr, yr}));
    case K::Shr:
      return R(pure(Opcode::SShr, {xr, yr}));
    case K::Eq:
      return R(pure(Opcode::SCmpEq, {xr, yr}), 0, true);
    case K::Ne:
      return R(pure(Opcode::SCmpNe, {xr, yr}), 0, true);
    case K::Lt:
      return R(pure(Opcode::SCmpLt, {xr, yr}), 0, true);
    case K::Le:
      return R(pure(Opcode::SCmpLe, {xr, yr}), 0, true);
    case K::Gt:
      return R(pure(Opcode::SCmpLt, {yr, xr}), 0, true);
    case K::Ge:
      return R(pure(Opcode::SCmpLe, {yr, xr}), 0, true);
    default:
      break;
  }
  throw CodegenError("internal: unhandled scalar op");
}

void Lowerer::baseAndOffset(const ScalarVal& addr, MOperand* base, int64_t* offset) {
  if (addr.isConst && fitsS16(addr.c)) {
    auto z = zeroReg_.find(cur_);
    if (z == zeroReg_.end()) z = zeroReg_.emplace(cur_, constReg(0)).first;
    *base = z->second;
    *offset = addr.c;
  } else if (!addr.isConst && fitsS16(addr.c) && (addr.c <= 0 || addr.nonNeg)) {
    *base = addr.reg;
    *offset = addr.c;
  } else if (addr.c > 0 && (addr.isConst || addr.nonNeg)) {
    // Past the immediate's reach: one register per 32 Ki window of the
    // offset (shared in the block), the rest in the immediate.
    int64_t inWindow = addr.c & 0x7FFF, window = addr.c - inWindow;
    MOperand w = pure(Opcode::SLi, {I(window)});
    *base = addr.isConst ? w : pure(Opcode::SAdd, {addr.reg, w});
    *offset = inWindow;
  } else {
    *base = reg(addr);
    *offset = 0;
  }
}

const RefPlace& Lowerer::place(const llo::Value* v) const {
  auto it = refs_.find(v);
  if (it == refs_.end()) throw CodegenError(fmt::format("internal: ref %{} has no place", v->id));
  return it->second;
}

ScalarVal Lowerer::scalar(const llo::Value* v) const {
  auto it = scalars_.find(v);
  if (it == scalars_.end())
    throw CodegenError(fmt::format("internal: scalar %{} not lowered", v->id));
  return it->second;
}

MOperand Lowerer::tile(const llo::Value* v) const {
  auto it = tiles_.find(v);
  if (it == tiles_.end()) throw CodegenError(fmt::format("internal: tile %{} not lowered", v->id));
  return it->second;
}

ScalarVal Lowerer::vmemRow(const RefPlace& r, const std::vector<ScalarVal>& idx) {
  const auto& shape = r.type.shape;
  llo::TiledLayout l = llo::tiledLayout(shape);
  size_t n = shape.size();
  ScalarVal m{true, 0, {}};
  for (size_t d = 0; d + 2 < n; ++d) m = add(mulImm(m, shape[d]), idx[d]);
  ScalarVal row = n >= 2 ? idx[n - 2] : ScalarVal{true, 0, {}};
  ScalarVal ct = scalarOp(llo::ScalarBin::Shr, idx[n - 1], ScalarVal{true, 7, {}});
  ScalarVal off = add(add(mulImm(m, l.rowsPerMatrix()), mulImm(ct, l.paddedRows)), row);
  return add(placeBase(r), off);
}

ScalarVal Lowerer::smemWord(const RefPlace& r, const std::vector<ScalarVal>& idx) {
  ScalarVal flat{true, 0, {}};
  for (size_t d = 0; d < idx.size(); ++d) flat = add(mulImm(flat, r.type.shape[d]), idx[d]);
  return add(placeBase(r), flat);
}

void Lowerer::lowerOps(const llo::Block& b, const std::string& kernelName) {
  kernel_ = kernelName;
  for (const auto& op : b.ops) {
    setDebug(debugFor(op->loc, kernelName));
    lowerOp(*op);
  }
}

void Lowerer::lowerVLoad(const llo::Op& op) {
  const RefPlace& r = place(op.operands[0]);
  std::vector<ScalarVal> idx;
  for (size_t i = 1; i < op.operands.size(); ++i) idx.push_back(scalar(op.operands[i]));
  ScalarVal row = vmemRow(r, idx);
  MOperand base;
  int64_t off;
  baseAndOffset(row, &base, &off);
  MOperand d = fn_.newReg(RegClass::Vector);
  MInstr mi = makeInstr(Opcode::VLd, {d, base, I(off), I(op.ints[0]), I(op.ints[1])});
  mi.mem = {MemAccess::Space::Vmem, r.region, false, row.isConst ? row.c : -1,
            op.ints[0] == 0 ? 1 : 8 * int(op.ints[0])};
  emit(mi);
  tiles_[op.result()] = d;
}

void Lowerer::lowerVStore(const llo::Op& op) {
  MOperand v = tile(op.operands[0]);
  const RefPlace& r = place(op.operands[1]);
  std::vector<ScalarVal> idx;
  for (size_t i = 2; i < op.operands.size(); ++i) idx.push_back(scalar(op.operands[i]));
  ScalarVal row = vmemRow(r, idx);
  MOperand base;
  int64_t off;
  baseAndOffset(row, &base, &off);
  int64_t sublanes = op.ints[0], lanes = op.ints[1];
  MemAccess mem{MemAccess::Space::Vmem, r.region, true, row.isConst ? row.c : -1, 8};
  if (lanes == llo::kLanes) {
    MInstr mi = makeInstr(Opcode::VSt, {v, base, I(off), I(1), I(sublanes)});
    mi.mem = mem;
    return emit(mi);
  }
  // A lane-masked store: mask = (lane < lanes) & (sublane < valid rows).
  auto bound = [&](Opcode iota, int64_t limit) {
    MOperand idxv = fn_.newReg(RegClass::Vector), lim = fn_.newReg(RegClass::Vector);
    MOperand m = fn_.newReg(RegClass::Mask);
    emit(iota, {idxv});
    emit(Opcode::VImm, {lim, I(limit)});
    emit(Opcode::VCmpLtS32, {m, idxv, lim});
    return m;
  };
  MOperand m = bound(Opcode::VIotaLane, lanes);
  if (sublanes != 0xFF) {
    int valid = 0;
    while (valid < 8 && (sublanes >> valid & 1)) ++valid;
    if (sublanes != (1 << valid) - 1)
      unsupported(op, "a lane-masked store needs contiguous sublanes");
    MOperand both = fn_.newReg(RegClass::Mask);
    emit(Opcode::MAnd, {both, m, bound(Opcode::VIotaSub, valid)});
    m = both;
  }
  MInstr mi = makeInstr(Opcode::VStM, {v, base, I(off), m});
  mi.mem = mem;
  emit(mi);
}

void Lowerer::lowerTileOp(const llo::Op& op) {
  const auto& o = op.operands;
  auto vdst = [&] {
    MOperand d = fn_.newReg(RegClass::Vector);
    tiles_[op.result()] = d;
    return d;
  };
  switch (op.kind) {
    case OpKind::VConst:
      return emit(Opcode::VImm, {vdst(), I(uint32_t(op.ints[0]))});
    case OpKind::VSplat: {
      MOperand s = reg(scalar(o[0]));
      return emit(Opcode::VBcast, {vdst(), s});
    }
    case OpKind::VIota:
      return emit(op.ints[0] == 0 ? Opcode::VIotaLane : Opcode::VIotaSub, {vdst()});
    case OpKind::VBinary: {
      Opcode opc = binaryOpcode(llo::VecBin(op.ints[0]), o[0]->type.dtype);
      MOperand a = tile(o[0]), b = tile(o[1]);
      return emit(opc, {vdst(), a, b});
    }
    case OpKind::VUnary: {
      MOperand a = tile(o[0]);
      return emit(unaryOpcode(llo::VecUn(op.ints[0]), o[0]->type.dtype), {vdst(), a});
    }
    case OpKind::VCmp: {
      MOperand a = tile(o[0]), b = tile(o[1]);
      MOperand m = fn_.newReg(RegClass::Mask);
      tiles_[op.result()] = m;
      return emit(cmpOpcode(llo::Cmp(op.ints[0]), o[0]->type.dtype), {m, a, b});
    }
    case OpKind::VSelect: {
      MOperand m = tile(o[0]), a = tile(o[1]), b = tile(o[2]);
      return emit(Opcode::VSel, {vdst(), m, a, b});
    }
    case OpKind::MaskBinary:
    case OpKind::MaskNot: {
      MOperand m = fn_.newReg(RegClass::Mask);
      MOperand a = tile(o[0]);
      tiles_[op.result()] = m;
      if (op.kind == OpKind::MaskNot) return emit(Opcode::MNot, {m, a});
      return emit(op.ints[0] == 0 ? Opcode::MAnd : Opcode::MOr, {m, a, tile(o[1])});
    }
    case OpKind::VCast: {
      llo::DType from = o[0]->type.dtype, to = op.dtype;
      MOperand a = tile(o[0]);
      if (!op.ints.empty() && op.ints[0] == 1) return emit(Opcode::VMov, {vdst(), a});  // bitcast
      if (from == llo::DType::S8) return emit(Opcode::VUnpackS8, {vdst(), a, I(0)});
      Opcode opc = Opcode::Nop;
      if (from == llo::DType::F32 && to == llo::DType::S32) opc = Opcode::VCvtS32F32;
      if (from == llo::DType::S32 && to == llo::DType::F32) opc = Opcode::VCvtF32S32;
      if (from == llo::DType::F32 && to == llo::DType::Bf16) opc = Opcode::VCvtBf16F32;
      if (from == llo::DType::Bf16 && to == llo::DType::F32) opc = Opcode::VCvtF32Bf16;
      if (from == llo::DType::S32 && to == llo::DType::S8) opc = Opcode::VCvtS8S32;
      if (opc == Opcode::Nop) unsupported(op, "no convert instruction for this cast");
      return emit(opc, {vdst(), a});
    }
    case OpKind::VReduceLanes: {
      bool f = o[0]->type.dtype == llo::DType::F32;
      bool sum = llo::Reduce(op.ints[0]) == llo::Reduce::Sum;
      Opcode opc = sum ? (f ? Opcode::XluSumF32 : Opcode::XluSumS32)
                       : (f ? Opcode::XluMaxF32 : Opcode::XluMaxS32);
      MOperand a = tile(o[0]);
      return emit(opc, {vdst(), a});
    }
    case OpKind::VRotSublanes: {
      MOperand a = tile(o[0]);
      return emit(Opcode::XluRotSub, {vdst(), a, I(((op.ints[0] % 8) + 8) % 8)});
    }
    case OpKind::VRotLanes: {
      MOperand a = tile(o[0]);
      int64_t by = ((op.ints[0] % llo::kLanes) + llo::kLanes) % llo::kLanes;
      if (by == 0) return emit(Opcode::VMov, {vdst(), a});
      // One register per amount and block (value-numbered), not one per rotate.
      return emit(Opcode::XluRotLane, {vdst(), a, pure(Opcode::SLi, {I(by)})});
    }
    case OpKind::VLanePerm: {
      MOperand a = tile(o[0]), b = tile(o[1]);
      return emit(Opcode::XluPerm, {vdst(), a, b});
    }
    default:
      unsupported(op, "not a tile op");
  }
}

void Lowerer::copyScalar(MOperand dst, const ScalarVal& v) {
  if (v.isConst)
    emit(Opcode::SLi, {dst, I(uint32_t(int32_t(v.c)))});
  else if (fitsS16(v.c))
    emit(Opcode::SAddI, {dst, v.reg, I(v.c)});
  else
    emit(Opcode::SAddI, {dst, reg(v), I(0)});
}

// A register holding a carried value (i32, tile or mask) and a copy into it.
MOperand Lowerer::carryReg(const llo::Value* v) {
  if (v->type.kind == llo::TypeKind::Scalar) return fn_.newReg(RegClass::Scalar);
  return fn_.newReg(v->type.kind == llo::TypeKind::Mask ? RegClass::Mask : RegClass::Vector);
}
void Lowerer::copyInto(MOperand dst, const llo::Value* v) {
  if (v->type.kind == llo::TypeKind::Scalar) {
    copyScalar(dst, scalar(v));
  } else if (v->type.kind == llo::TypeKind::Mask) {
    emit(Opcode::MOr, {dst, tile(v), tile(v)});
  } else {
    emit(Opcode::VMov, {dst, tile(v)});
  }
}
void Lowerer::bindCarry(const llo::Value* v, MOperand r) {
  if (v->type.kind == llo::TypeKind::Scalar)
    bindScalar(v, ScalarVal{false, 0, r});
  else
    tiles_[v] = r;
}

void Lowerer::lowerFor(const llo::Op& op) {
  ScalarVal lo = scalar(op.operands[0]), hi = scalar(op.operands[1]);
  int64_t step = op.ints[0];
  // Carried values live in one register each for the whole loop: the initial
  // value is copied in before it, the yielded one at the end of every trip.
  const size_t carries = op.operands.size() - 2;
  std::vector<MOperand> carry;
  for (size_t k = 0; k < carries; ++k) {
    carry.push_back(carryReg(op.operands[k + 2]));
    copyInto(carry[k], op.operands[k + 2]);
    bindCarry(op.regions[0].args[k + 1], carry[k]);
    bindCarry(op.results[k], carry[k]);
  }
  ScalarVal trip;
  if (lo.isConst && hi.isConst) {
    int64_t t = hi.c > lo.c ? (hi.c - lo.c + step - 1) / step : 0;
    if (t == 0) return;
    trip = ScalarVal{true, t, {}};
  } else {
    if (log2Exact(step) < 0) unsupported(op, "a run-time trip count needs a power-of-two step");
    ScalarVal span = scalarOp(llo::ScalarBin::Sub, hi, lo);
    trip =
        scalarOp(llo::ScalarBin::Max,
                 scalarOp(llo::ScalarBin::Div, addImm(span, step - 1), ScalarVal{true, step, {}}),
                 ScalarVal{true, 0, {}});
  }
  MOperand iv = fn_.newReg(RegClass::Scalar), count = fn_.newReg(RegClass::Scalar);
  copyScalar(iv, lo);
  copyScalar(count, trip);
  int guardBlock = -1;
  if (!trip.isConst) {
    guardBlock = currentBlock();
    emit(Opcode::BrZ, {count, MOperand::block(-1)});
  }
  int body = newBlock("loop");
  // The index counts up from a non-negative start: addresses may fold offsets from it.
  bool ivNonNeg = step > 0 && lo.c >= 0 && (lo.isConst || lo.nonNeg);
  bindScalar(op.regions[0].args[0], ScalarVal::inReg(iv, ivNonNeg));
  lowerOps(op.regions[0], kernel_);
  newBlock("latch");
  int latch = currentBlock();
  if (carries > 0) {
    // Yielded values go through fresh registers first when one of them is
    // another carry register (a swap), so no copy reads an overwritten value.
    const llo::Op& y = *op.regions[0].ops.back();
    std::vector<MOperand> from;
    bool overlap = false;
    for (size_t k = 0; k < carries; ++k) {
      const llo::Value* v = y.operands[k];
      for (size_t j = 0; j < carries; ++j)
        if (j != k && v == op.regions[0].args[j + 1]) overlap = true;
    }
    for (size_t k = 0; k < carries; ++k) {
      const llo::Value* v = y.operands[k];
      if (v == op.regions[0].args[k + 1]) {
        from.push_back({});  // unchanged
        continue;
      }
      MOperand t = overlap ? carryReg(v) : carry[k];
      copyInto(t, v);
      from.push_back(t);
    }
    if (overlap)
      for (size_t k = 0; k < carries; ++k)
        if (from[k].kind != MOperand::Kind::None) {
          if (carry[k].cls == RegClass::Scalar)
            emit(Opcode::SAddI, {carry[k], from[k], I(0)});
          else if (carry[k].cls == RegClass::Mask)
            emit(Opcode::MOr, {carry[k], from[k], from[k]});
          else
            emit(Opcode::VMov, {carry[k], from[k]});
        }
  }
  emit(Opcode::SAddI, {iv, iv, I(step)});
  emit(Opcode::Loop, {count, MOperand::block(body)});
  int exit = newBlock("exit");
  if (guardBlock >= 0) fn_.blocks[guardBlock].instrs.back().ops[1] = MOperand::block(exit);
  loops_.push_back(LoopRange{body, latch});
}

void Lowerer::lowerIf(const llo::Op& op) {
  ScalarVal c = scalar(op.operands[0]);
  if (c.isConst) {
    if (c.c)
      lowerOps(op.regions[0], kernel_);
    else if (op.regions.size() > 1)
      lowerOps(op.regions[1], kernel_);
    return;
  }
  // Parts of input blocks still arriving (Arrival): with both branches, each
  // waits for them where it reads them and for the rest at its end, so the
  // step waits for every part once on either path.
  // An `if` that reads none of them waits for none (nothing in it waits).
  const bool twoSided = op.regions.size() > 1;
  const bool waits = awaitsArrivals(op);
  if (waits && !twoSided) awaitArrivals();
  const auto arriving = arrivals_;
  int condBlock = currentBlock();
  emit(Opcode::BrZ, {reg(c), MOperand::block(-1)});
  newBlock("then");
  lowerOps(op.regions[0], kernel_);
  if (waits) awaitArrivals();
  int thenEnd = currentBlock();
  int elseStart = -1;
  if (twoSided) {
    emit(Opcode::Jmp, {MOperand::block(-1)});
    elseStart = newBlock("else");
    arrivals_ = arriving;
    lowerOps(op.regions[1], kernel_);
    if (waits) awaitArrivals();
  }
  int end = newBlock("endif");
  fn_.blocks[condBlock].instrs.back().ops[1] = MOperand::block(elseStart >= 0 ? elseStart : end);
  if (elseStart >= 0) fn_.blocks[thenEnd].instrs.back().ops[0] = MOperand::block(end);
}

void Lowerer::awaitRows(const llo::Value* ref, int64_t rowEnd) {
  auto it = arrivals_.find(ref);
  if (it == arrivals_.end()) return;
  Arrival& a = it->second;
  int64_t count = 0;
  while (a.done < a.rowEnd.size() && (a.done == 0 || a.rowEnd[a.done - 1] < rowEnd))
    count += a.descriptors[a.done++];
  if (count > 0) {
    MInstr mi = makeInstr(Opcode::SyncWait, {I(a.flag), I(count)});
    mi.waitRegion = a.region;
    emit(mi);
  }
  if (a.done == a.rowEnd.size()) arrivals_.erase(it);
}

void Lowerer::awaitRegion(int region) {
  for (auto it = arrivals_.begin(); it != arrivals_.end();) {
    auto next = std::next(it);
    if (it->second.region == region) awaitRows(it->first, std::numeric_limits<int64_t>::max());
    it = next;
  }
}

void Lowerer::awaitLoadRows(const llo::Op& op) {
  const size_t r = op.kind == llo::OpKind::VStore ? 1 : 0;
  const int region = place(op.operands[r]).region;
  for (auto it = arrivals_.begin(); it != arrivals_.end();) {
    auto next = std::next(it);
    if (it->second.region == region) {
      // A vector load of the block itself at a constant row (its second-last
      // index): the parts up to that tile; else all of it.
      int64_t rowEnd = std::numeric_limits<int64_t>::max();
      const size_t rank = it->first->type.shape.size();
      if (!it->second.byEntry && op.kind == llo::OpKind::VLoad && op.operands[r] == it->first &&
          op.operands.size() == rank + 1 && rank >= 2) {
        ScalarVal row = scalar(op.operands[rank - 1]);
        if (row.isConst) rowEnd = row.c + (op.ints[0] == 0 ? 1 : 8 * op.ints[0]);
      }
      awaitRows(it->first, rowEnd);
    }
    it = next;
  }
}

void Lowerer::awaitArrivals() {
  while (!arrivals_.empty())
    awaitRows(arrivals_.begin()->first, std::numeric_limits<int64_t>::max());
}

bool Lowerer::awaitsArrivals(const llo::Op& op) const {
  if (arrivals_.empty()) return false;
  return touchesRef(op, [&](const llo::Value* v) {
    auto it = refs_.find(v);
    if (it == refs_.end()) return true;
    for (const auto& [ref, a] : arrivals_)
      if (a.region == it->second.region) return true;
    return false;
  });
}

void Lowerer::lowerOp(const llo::Op& op) {
  struct OverlapScope {
    bool& flag;
    bool saved;
    ~OverlapScope() { flag = saved; }
  } overlapScope{overlap_, overlap_};
  overlap_ = op.overlap;
  const auto& o = op.operands;
  // Parts of input blocks still arriving: the matmul and vector loads wait
  // for the parts they read, other ops for the blocks of their ref operands,
  // two-sided ifs in each branch (lowerIf), loops for all (those that may
  // read one: awaitsArrivals).
  if (!arrivals_.empty()) switch (op.kind) {
      case OpKind::SConst:
      case OpKind::SBinary:
      case OpKind::SSelect:
      case OpKind::ProgramId:
      case OpKind::NumPrograms:
      case OpKind::Matmul:
      case OpKind::If:  // lowerIf
        break;
      case OpKind::VLoad:
      case OpKind::VStore:  // only a block still arriving is waited for
        awaitLoadRows(op);
        break;
      default: {
        // An op without regions touches only its ref operands' memory (none:
        // register work); one with regions (a loop) waits for all.
        if (!op.regions.empty()) {
          if (awaitsArrivals(op)) awaitArrivals();
          break;
        }
        for (const llo::Value* v : o) {
          if (!v->type.isRef()) continue;
          auto it = refs_.find(v);
          if (it == refs_.end()) {
            awaitArrivals();
            break;
          }
          awaitRegion(it->second.region);
        }
      }
    }
  switch (op.kind) {
    case OpKind::SConst:
      return bindScalar(op.result(), ScalarVal{true, op.ints[0], {}});
    case OpKind::SBinary:
      return bindScalar(op.result(),
                        scalarOp(llo::ScalarBin(op.ints[0]), scalar(o[0]), scalar(o[1])));
    case OpKind::SSelect: {
      ScalarVal c = scalar(o[0]);
      if (c.isConst) return bindScalar(op.result(), c.c ? scalar(o[1]) : scalar(o[2]));
      MOperand d = fn_.newReg(RegClass::Scalar);
      MOperand cr = reg(c), a = reg(scalar(o[1])), b = reg(scalar(o[2]));
      emit(Opcode::SSel, {d, cr, a, b});
      return bindScalar(op.result(), ScalarVal{false, 0, d});
    }
    case OpKind::ProgramId:
    case OpKind::NumPrograms: {
      size_t axis = size_t(op.ints[0]);
      if (axis >= grid_.size()) unsupported(op, "grid axis out of range");
      return bindScalar(op.result(), op.kind == OpKind::ProgramId
                                         ? ids_[axis]
                                         : ScalarVal{true, grid_[axis], {}});
    }
    case OpKind::SLoad:
    case OpKind::SStore: {
      size_t r = op.kind == OpKind::SStore ? 1 : 0;
      const RefPlace& p = place(o[r]);
      std::vector<ScalarVal> idx;
      for (size_t i = r + 1; i < o.size(); ++i) idx.push_back(scalar(o[i]));
      ScalarVal w = smemWord(p, idx);
      MOperand base;
      int64_t off;
      baseAndOffset(w, &base, &off);
      MemAccess mem{MemAccess::Space::Smem, p.region, r == 1, -1, 0};
      if (r == 1) {
        MInstr mi = makeInstr(Opcode::SSt, {reg(scalar(o[0])), base, I(off)});
        mi.mem = mem;
        return emit(mi);
      }
      MOperand d = fn_.newReg(RegClass::Scalar);
      MInstr mi = makeInstr(Opcode::SLd, {d, base, I(off)});
      mi.mem = mem;
      emit(mi);
      return bindScalar(op.result(), ScalarVal{false, 0, d});
    }
    case OpKind::VLoad:
      return lowerVLoad(op);
    case OpKind::VStore:
      return lowerVStore(op);
    case OpKind::AllocVmem: {
      RefPlace p;
      p.type = op.result()->type;
      p.base =
          mem_.vmem(fmt::format("temporary {} (line {})", p.type.str(), op.loc.line), p.type.shape);
      p.region = newRegion();
      return bindRef(op.result(), p);
    }
    case OpKind::Matmul:
      return lowerMatmul(op);
    case OpKind::MxuLatch:
      return lowerMxuLatch(op);
    case OpKind::MxuStart:
      return lowerMxuStart(op);
    case OpKind::MxuFinish:
      return lowerMxuFinish(op);
    case OpKind::DmaStart:
    case OpKind::DmaWait:
    case OpKind::RemoteDmaStart:
      return lowerDma(op);
    case OpKind::SemSignal:
    case OpKind::SemWait:
      return lowerSemaphore(op);
    case OpKind::DeviceId:
    case OpKind::NumDevices: {
      MOperand d = fn_.newReg(RegClass::Scalar);
      emit(op.kind == OpKind::DeviceId ? Opcode::ChipId : Opcode::ChipCount, {d});
      return bindScalar(op.result(), ScalarVal::inReg(d, true));
    }
    case OpKind::For:
      return lowerFor(op);
    case OpKind::If:
      return lowerIf(op);
    case OpKind::Return:
      unsupported(op, "return outside an index map");
    case OpKind::Yield:
      return;  // lowerFor copies the yielded values into the carry registers
    default:
      return lowerTileOp(op);
  }
}

}  // namespace tpusim::kernels::codegen
