// Construction of Array expressions: shape broadcasting and dtype rules.
#include <fmt/format.h>

#include <cmath>

#include "isa/support/Numerics.h"
#include "kernels/dsl/ArrayNode.h"
#include "kernels/dsl/Emit.h"

namespace tpusim::kernels::dsl {

using Kind = ArrayNode::Kind;

int64_t Array::rows() const { return node_->rows; }
int64_t Array::cols() const { return node_->cols; }
DType Array::dtype() const { return node_->dtype; }

namespace {

const ArrayNode& need(const Array& a, const char* what) {
  if (!a.valid()) throw Error(fmt::format("error: {} of an empty Array", what));
  return *a.node();
}

std::string desc(const Array& a) {
  return fmt::format("{}[{},{}]", isa::dtypeName(a.dtype()), a.rows(), a.cols());
}

int64_t broadcastDim(int64_t x, int64_t y, bool* ok) {
  if (x == y || y == 1) return x;
  if (x == 1) return y;
  *ok = false;
  return x;
}

Array make(ArrayNode n) { return Array(std::make_shared<const ArrayNode>(std::move(n))); }

ArrayNode nodeOf(Kind k, int64_t rows, int64_t cols, DType d, int op, std::vector<NodePtr> args) {
  ArrayNode n;
  n.kind = k;
  n.rows = rows;
  n.cols = cols;
  n.dtype = d;
  n.op = op;
  n.args = std::move(args);
  return n;
}

Array castTo(const Array& a, DType to);

Array bitsAs(const Array& a, DType to) {
  return make(nodeOf(Kind::Cast, a.rows(), a.cols(), to, 1, {a.node()}));
}
Array sconst(uint32_t bits) {
  ArrayNode n = nodeOf(Kind::Splat, 1, 1, S32, 0, {});
  n.bits = bits;
  return make(std::move(n));
}
Array sbin(llo::VecBin k, const Array& a, const Array& b);
Array scmp(llo::Cmp k, const Array& a, const Array& b);
Array sel(const Array& c, const Array& a, const Array& b);

// f16 bits (low 16 bits of an s32 word) -> f32, exact: the exponent is
// rebased by integer adds (twice for inf / NaN: ((e >> 23) + 1) >> 5 is 1 for
// the all-ones exponent only, so no compare), and a subnormal is renormalized
// by one f32 subtract. One mask: the kernels keep up to 8 (not spilled).
Array f16ToF32(const Array& h16) {
  Array h = bitsAs(h16, S32);
  Array o = sbin(llo::VecBin::Shl, sbin(llo::VecBin::And, h, sconst(0x7fff)), sconst(13));
  Array e = sbin(llo::VecBin::Shr, o, sconst(23));
  Array infNan = sbin(llo::VecBin::Shr, sbin(llo::VecBin::Add, e, sconst(1)), sconst(5));
  Array normal =
      sbin(llo::VecBin::Add, sbin(llo::VecBin::Add, o, sconst(112u << 23)),
           sbin(llo::VecBin::Shl, sbin(llo::VecBin::Mul, infNan, sconst(112)), sconst(23)));
  // Subnormal: (1 + m 2^-10) 2^-14 - 2^-14 = m 2^-24, computed in f32.
  Array sub = bitsAs(bitsAs(sbin(llo::VecBin::Add, normal, sconst(1u << 23)), F32) -
                         full(1, 1, std::ldexp(1.0, -14), F32),
                     S32);
  Array mag = sel(scmp(llo::Cmp::Eq, e, sconst(0)), sub, normal);
  Array sign = sbin(llo::VecBin::Shl, sbin(llo::VecBin::And, h, sconst(0x8000)), sconst(16));
  return bitsAs(sbin(llo::VecBin::Or, mag, sign), F32);
}

// f32 -> f16 bits, round to nearest even (NaN -> quiet 0x7E00 with its sign),
// as tpusim::f32ToF16Bits: normal results round by adding 0xFFF plus the kept
// lsb (clamping |x| to 2^16 first makes everything from 65520 on round to
// inf); subnormal ones by an f32 add of 0.5 that aligns the f16 units with the
// f32 ulp, so the adder rounds to nearest even. Two masks.
Array f32ToF16(const Array& x) {
  Array u = bitsAs(x, S32);
  Array a = sbin(llo::VecBin::And, u, sconst(0x7fffffff));
  Array sign = sbin(llo::VecBin::And, sbin(llo::VecBin::Shr, u, sconst(16)), sconst(0x8000));
  Array c = sbin(llo::VecBin::Min, a, sconst(0x47800000));
  Array lsb = sbin(llo::VecBin::And, sbin(llo::VecBin::Shr, c, sconst(13)), sconst(1));
  Array normal = sbin(llo::VecBin::Shr,
                      sbin(llo::VecBin::Add,
                           sbin(llo::VecBin::Add, c, sconst(uint32_t(-(112 << 23)) + 0xfff)), lsb),
                      sconst(13));
  Array sub = sbin(llo::VecBin::Sub, bitsAs(bitsAs(a, F32) + full(1, 1, 0.5, F32), S32),
                   sconst(0x3f000000));
  Array h = sel(scmp(llo::Cmp::Gt, a, sconst(0x7f800000)), sconst(0x7e00),
                sel(scmp(llo::Cmp::Ge, a, sconst(0x38800000)), normal, sub));
  return bitsAs(sbin(llo::VecBin::Or, h, sign), F16);
}

bool isNarrowInt(DType d) { return d == S16 || d == U16 || d == U8; }
uint32_t narrowMask(DType d) { return d == U8 ? 0xffu : 0xffffu; }

// The s32 value of s16 / u16 / u8 bits (sign- or zero-extended), and back:
// the low bits, so a narrowing wraps (two's-complement truncation).
Array widenNarrow(const Array& a) {
  Array w = bitsAs(a, S32);
  if (a.dtype() == S16)
    return sbin(llo::VecBin::Sra, sbin(llo::VecBin::Shl, w, sconst(16)), sconst(16));
  return sbin(llo::VecBin::And, w, sconst(narrowMask(a.dtype())));
}
Array wrapNarrow(const Array& s32, DType to) {
  return bitsAs(sbin(llo::VecBin::And, s32, sconst(narrowMask(to))), to);
}

Array castTo(const Array& a, DType to) {
  if (a.dtype() == to) return a;
  DType from = a.dtype();
  if (isNarrowInt(from)) return castTo(widenNarrow(a), to);
  if (isNarrowInt(to)) return wrapNarrow(castTo(a, S32), to);
  if (from == F16) return castTo(f16ToF32(a), to);
  if (to == F16) return f32ToF16(castTo(a, F32));
  auto one = [&](DType f, DType t, const Array& x) {
    return make(nodeOf(Kind::Cast, x.rows(), x.cols(), t, 0, {x.node()}));
  };
  // Only the machine's direct converts are nodes; others go through f32 / s32.
  if ((from == F32 && (to == S32 || to == BF16)) || (from == S32 && (to == F32 || to == S8)) ||
      (from == BF16 && to == F32) || (from == S8 && to == S32))
    return one(from, to, a);
  if (from == BF16 && to == S32) return castTo(castTo(a, F32), S32);
  if (from == S32 && to == BF16) return castTo(castTo(a, F32), BF16);
  if (from == S8 && (to == F32 || to == BF16)) return castTo(castTo(a, S32), to);
  if ((from == F32 || from == BF16) && to == S8) return castTo(castTo(a, S32), S8);
  throw Error(
      fmt::format("error: no conversion from {} to {}", isa::dtypeName(from), isa::dtypeName(to)));
}

// Arithmetic dtype: bf16 computes in f32, s8 in s32.
DType computeType(DType d) {
  return d == BF16 || d == F16 ? F32 : (d == S8 || isNarrowInt(d) ? S32 : d);
}

Array binary(llo::VecBin k, const Array& a, const Array& b, const char* what) {
  need(a, what);
  need(b, what);
  if (a.dtype() != b.dtype())
    throw Error(
        fmt::format("error: {} of {} and {}: dtypes differ (use astype)", what, desc(a), desc(b)));
  if (a.dtype() == BOOL) throw Error(fmt::format("error: {} of boolean arrays", what));
  bool ok = true;
  int64_t r = broadcastDim(a.rows(), b.rows(), &ok), c = broadcastDim(a.cols(), b.cols(), &ok);
  if (!ok)
    throw Error(
        fmt::format("error: {} of {} and {}: shapes do not broadcast", what, desc(a), desc(b)));
  DType d = a.dtype(), cd = computeType(d);
  Array x = castTo(a, cd), y = castTo(b, cd);
  bool bitwise = k == llo::VecBin::And || k == llo::VecBin::Or || k == llo::VecBin::Xor ||
                 k == llo::VecBin::Shl || k == llo::VecBin::Shr || k == llo::VecBin::Sra;
  if (bitwise && cd != S32) throw Error(fmt::format("error: {} needs integer arrays", what));
  Array out = make(nodeOf(Kind::Binary, r, c, cd, int(k), {x.node(), y.node()}));
  return castTo(out, d);
}

Array unary(llo::VecUn k, const Array& a, const char* what) {
  need(a, what);
  DType d = a.dtype(), cd = computeType(d);
  bool intOk = k == llo::VecUn::Abs || k == llo::VecUn::Neg;
  if (d == BOOL || (cd == S32 && !intOk))
    throw Error(fmt::format("error: {} of {} (needs a float array)", what, desc(a)));
  Array x = castTo(a, cd);
  return castTo(make(nodeOf(Kind::Unary, a.rows(), a.cols(), cd, int(k), {x.node()})), d);
}

Array compare(llo::Cmp k, const Array& a, const Array& b) {
  need(a, "compare");
  need(b, "compare");
  if (a.dtype() != b.dtype())
    throw Error(fmt::format("error: compare of {} and {}: dtypes differ", desc(a), desc(b)));
  bool ok = true;
  int64_t r = broadcastDim(a.rows(), b.rows(), &ok), c = broadcastDim(a.cols(), b.cols(), &ok);
  if (!ok)
    throw Error(
        fmt::format("error: compare of {} and {}: shapes do not broadcast", desc(a), desc(b)));
  DType cd = computeType(a.dtype());
  return make(
      nodeOf(Kind::Compare, r, c, BOOL, int(k), {castTo(a, cd).node(), castTo(b, cd).node()}));
}

Array sbin(llo::VecBin k, const Array& a, const Array& b) { return binary(k, a, b, "bit op"); }
Array scmp(llo::Cmp k, const Array& a, const Array& b) { return compare(k, a, b); }
Array sel(const Array& c, const Array& a, const Array& b) { return where(c, a, b); }

// A scalar operand takes the array's dtype (bf16 arrays: the constant is rounded to bf16).
Array scalarFor(const Array& a, double v) {
  need(a, "arithmetic");
  return full(1, 1, v, a.dtype());
}

}  // namespace

Array Array::astype(DType to, Loc loc) const {
  need(*this, "astype");
  locate(loc);
  return castTo(*this, to);
}

Array operator+(const Array& a, const Array& b) { return binary(llo::VecBin::Add, a, b, "add"); }
Array operator-(const Array& a, const Array& b) {
  return binary(llo::VecBin::Sub, a, b, "subtract");
}
Array operator*(const Array& a, const Array& b) {
  return binary(llo::VecBin::Mul, a, b, "multiply");
}
Array operator/(const Array& a, const Array& b) {
  if (computeType(a.dtype()) != F32) throw Error("error: division needs float arrays");
  return a * reciprocal(b);
}
Array operator-(const Array& a) { return unary(llo::VecUn::Neg, a, "negate"); }
Array operator+(const Array& a, double b) { return a + scalarFor(a, b); }
Array operator-(const Array& a, double b) { return a - scalarFor(a, b); }
Array operator*(const Array& a, double b) { return a * scalarFor(a, b); }
Array operator/(const Array& a, double b) { return a / scalarFor(a, b); }
Array operator+(double a, const Array& b) { return scalarFor(b, a) + b; }
Array operator-(double a, const Array& b) { return scalarFor(b, a) - b; }
Array operator*(double a, const Array& b) { return scalarFor(b, a) * b; }
Array operator<(const Array& a, const Array& b) { return compare(llo::Cmp::Lt, a, b); }
Array operator<=(const Array& a, const Array& b) { return compare(llo::Cmp::Le, a, b); }
Array operator>(const Array& a, const Array& b) { return compare(llo::Cmp::Gt, a, b); }
Array operator>=(const Array& a, const Array& b) { return compare(llo::Cmp::Ge, a, b); }
Array operator==(const Array& a, const Array& b) { return compare(llo::Cmp::Eq, a, b); }
Array operator!=(const Array& a, const Array& b) { return compare(llo::Cmp::Ne, a, b); }

Array operator&(const Array& a, const Array& b) {
  if (a.dtype() == BOOL && b.dtype() == BOOL) {
    bool ok = true;
    int64_t r = broadcastDim(a.rows(), b.rows(), &ok), c = broadcastDim(a.cols(), b.cols(), &ok);
    if (!ok) throw Error("error: '&' of masks whose shapes do not broadcast");
    return make(nodeOf(Kind::MaskOp, r, c, BOOL, 0, {a.node(), b.node()}));
  }
  return binary(llo::VecBin::And, a, b, "bitwise and");
}
Array operator|(const Array& a, const Array& b) {
  if (a.dtype() == BOOL && b.dtype() == BOOL) {
    bool ok = true;
    int64_t r = broadcastDim(a.rows(), b.rows(), &ok), c = broadcastDim(a.cols(), b.cols(), &ok);
    if (!ok) throw Error("error: '|' of masks whose shapes do not broadcast");
    return make(nodeOf(Kind::MaskOp, r, c, BOOL, 1, {a.node(), b.node()}));
  }
  return binary(llo::VecBin::Or, a, b, "bitwise or");
}

Array operator^(const Array& a, const Array& b) {
  return binary(llo::VecBin::Xor, a, b, "bitwise xor");
}
Array shift_left(const Array& a, const Array& amount) {
  return binary(llo::VecBin::Shl, a, amount, "shift left");
}
Array shift_right_logical(const Array& a, const Array& amount) {
  return binary(llo::VecBin::Shr, a, amount, "logical shift right");
}
Array shift_right_arithmetic(const Array& a, const Array& amount) {
  return binary(llo::VecBin::Sra, a, amount, "arithmetic shift right");
}
Array bitcast(const Array& a, DType to) {
  need(a, "bitcast");
  if (a.dtype() == BOOL || to == BOOL || a.dtype() == S8 || to == S8)
    throw Error(fmt::format("error: bitcast of {} to {}: only f32, s32, bf16 and f16 words",
                            desc(a), isa::dtypeName(to)));
  return a.dtype() == to ? a : bitsAs(a, to);
}

Array maximum(const Array& a, const Array& b) { return binary(llo::VecBin::Max, a, b, "maximum"); }
Array minimum(const Array& a, const Array& b) { return binary(llo::VecBin::Min, a, b, "minimum"); }
Array exp(const Array& a) { return unary(llo::VecUn::Exp, a, "exp"); }
Array log(const Array& a) { return unary(llo::VecUn::Log, a, "log"); }
Array tanh(const Array& a) { return unary(llo::VecUn::Tanh, a, "tanh"); }
Array sqrt(const Array& a) { return unary(llo::VecUn::Sqrt, a, "sqrt"); }
Array rsqrt(const Array& a) { return unary(llo::VecUn::Rsqrt, a, "rsqrt"); }
Array reciprocal(const Array& a) { return unary(llo::VecUn::Rcp, a, "reciprocal"); }
Array abs(const Array& a) { return unary(llo::VecUn::Abs, a, "abs"); }

Array where(const Array& cond, const Array& a, const Array& b) {
  need(cond, "where");
  if (cond.dtype() != BOOL) throw Error("error: where needs a boolean condition");
  if (a.dtype() != b.dtype())
    throw Error(fmt::format("error: where of {} and {}: dtypes differ", desc(a), desc(b)));
  bool ok = true;
  int64_t r = broadcastDim(broadcastDim(cond.rows(), a.rows(), &ok), b.rows(), &ok);
  int64_t c = broadcastDim(broadcastDim(cond.cols(), a.cols(), &ok), b.cols(), &ok);
  if (!ok) throw Error("error: where: shapes do not broadcast");
  return make(nodeOf(Kind::Select, r, c, a.dtype(), 0, {cond.node(), a.node(), b.node()}));
}

Array full(int64_t rows, int64_t cols, double value, DType dtype) {
  ArrayNode n = nodeOf(Kind::Splat, rows, cols, dtype, 0, {});
  switch (dtype) {
    case DType::F32:
      n.bits = bitsOf(float(value));
      break;
    case DType::Bf16:
      n.bits = f32ToBf16Bits(float(value));
      break;
    case DType::F16:
      n.bits = f32ToF16Bits(float(value));
      break;
    case DType::S32:
    case DType::S8:
      n.bits = uint32_t(int32_t(int64_t(value)));
      break;
    case DType::S16:
    case DType::U16:
    case DType::U8:
      n.bits = uint32_t(int64_t(value)) & narrowMask(dtype);
      break;
    default:
      throw Error("error: full() of an unsupported dtype");
  }
  return make(std::move(n));
}
Array zeros(int64_t rows, int64_t cols, DType dtype) { return full(rows, cols, 0.0, dtype); }

Array splat(Scalar s, int64_t rows, int64_t cols) {
  ArrayNode n = nodeOf(Kind::Splat, rows, cols, S32, 0, {});
  n.scalar = s.value();
  return make(std::move(n));
}

Array iota(int64_t rows, int64_t cols, int axis) {
  if (axis != 0 && axis != 1) throw Error("error: iota axis must be 0 or 1");
  return make(nodeOf(Kind::Iota, rows, cols, S32, axis, {}));
}

Array broadcast_to(const Array& a, int64_t rows, int64_t cols) {
  bool ok = (a.rows() == rows || a.rows() == 1) && (a.cols() == cols || a.cols() == 1);
  if (!ok) throw Error(fmt::format("error: cannot broadcast {} to [{},{}]", desc(a), rows, cols));
  // Broadcasting is resolved when tiles are emitted; a select with itself
  // carries the new shape without changing a value.
  Array t = full(rows, cols, 0, S32) == full(rows, cols, 0, S32);
  return where(t, a, a);
}

Array roll_lanes(const Array& a, int64_t shift, int64_t cols) {
  need(a, "roll_lanes");
  if (a.cols() == 1) return broadcast_to(a, a.rows(), cols);  // every lane holds the value
  if (a.cols() > llo::kLanes || cols < 2 || cols > llo::kLanes)
    throw Error(
        fmt::format("error: roll_lanes of {} to {} columns: one lane tile (2..{} "
                    "columns) on both sides",
                    desc(a), cols, llo::kLanes));
  int64_t by = ((shift % llo::kLanes) + llo::kLanes) % llo::kLanes;
  if (by == 0 && cols == a.cols()) return a;
  return make(nodeOf(Kind::LaneRoll, a.rows(), cols, a.dtype(), int(by), {a.node()}));
}

Array sum(const Array& a, int axis, Loc loc) {
  need(a, "sum");
  locate(loc);
  return Array(reduce(a.node(), llo::Reduce::Sum, axis, loc));
}

Array max(const Array& a, int axis, Loc loc) {
  need(a, "max");
  locate(loc);
  return Array(reduce(a.node(), llo::Reduce::Max, axis, loc));
}

Array in_vregs(const Array& a, Loc loc) {
  need(a, "in_vregs");
  locate(loc);
  int64_t tiles = (a.rows() + llo::kSublanes - 1) / llo::kSublanes *
                  ((a.cols() + llo::kLanes - 1) / llo::kLanes);
  if (tiles > kMaxVregTiles)
    fail(loc, fmt::format("in_vregs of {}: {} (8,128) tiles, at most {} stay in registers", desc(a),
                          tiles, kMaxVregTiles));
  if (a.dtype() == BOOL) fail(loc, "in_vregs of a boolean array (use where)");
  return Array(tilesNode(emitTiles(a.node(), /*cse=*/true), a.rows(), a.cols(), a.dtype()));
}

Array sum_vregs(const Array& a, Loc loc) {
  need(a, "sum_vregs");
  locate(loc);
  return Array(reduce(a.node(), llo::Reduce::Sum, 1, loc, /*inVregs=*/true));
}

Array max_vregs(const Array& a, Loc loc) {
  need(a, "max_vregs");
  locate(loc);
  return Array(reduce(a.node(), llo::Reduce::Max, 1, loc, /*inVregs=*/true));
}

Array dot(const Array& a, const Array& b, DotOptions options, Loc loc) {
  need(a, "dot");
  need(b, "dot");
  if (a.dtype() != b.dtype() || (a.dtype() != BF16 && a.dtype() != S8))
    fail(loc, fmt::format("dot of {} and {}: the MXU multiplies bf16 x bf16 or s8 x s8 "
                          "(cast with astype)",
                          desc(a), desc(b)));
  int64_t m = options.transpose_lhs ? a.cols() : a.rows();
  int64_t k = options.transpose_lhs ? a.rows() : a.cols();
  int64_t kb = options.transpose_rhs ? b.cols() : b.rows();
  int64_t n = options.transpose_rhs ? b.rows() : b.cols();
  if (k != kb)
    fail(loc, fmt::format("dot of {} and {}: contracting dimensions differ ({} vs {})", desc(a),
                          desc(b), k, kb));
  if (options.latched_earlier && !options.latched)
    fail(loc, fmt::format("dot of {} and {}: latched_earlier needs latched", desc(a), desc(b)));
  if (options.latched && (a.dtype() != BF16 || options.transpose_lhs || options.transpose_rhs ||
                          options.resident != MxuResident::None || options.continue_in_mxu))
    fail(loc, fmt::format("dot of {} and {}: a latched dot is bf16, not transposed and not "
                          "kept in the MXU",
                          desc(a), desc(b)));
  const int64_t diag = options.lhs_diagonal_blocks;
  if (diag < 1 || (diag > 1 && (a.dtype() != BF16 || options.transpose_lhs || options.latched ||
                                options.resident != MxuResident::None || options.continue_in_mxu ||
                                m % 8 != 0 || k % diag != 0)))
    fail(loc, fmt::format("dot of {} and {}: lhs_diagonal_blocks {} needs a plain bf16 dot (no "
                          "transposed LHS, not latched or resident), LHS rows a multiple of 8 "
                          "and K a multiple of the blocks",
                          desc(a), desc(b), diag));
  m *= diag;
  ArrayNode node = nodeOf(Kind::Dot, m, n, a.dtype() == BF16 ? F32 : S32, 0, {a.node(), b.node()});
  node.dot = options;
  node.loc = loc;
  return make(std::move(node));
}

void mxu_latch(const Array& w, Loc loc) {
  need(w, "mxu_latch");
  if (w.dtype() != BF16)
    fail(loc, fmt::format("mxu_latch of {}: the latched weights must be bf16", desc(w)));
  emitMxuLatch(w.node(), loc);
}

}  // namespace tpusim::kernels::dsl
