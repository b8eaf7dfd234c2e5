#include "kernels/llo/Ir.h"

#include <algorithm>
#include <climits>

namespace tpusim::kernels::llo {

std::vector<int64_t> ArrayOperand::bufferShape() const {
  if (strides.empty()) return shape;
  std::vector<size_t> order(shape.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return strides[x] > strides[y]; });
  std::vector<int64_t> out;
  for (size_t d : order) out.push_back(shape[d]);
  return out;
}

const char* opKindName(OpKind k) {
  static const char* const kNames[] = {
#define LLO_OP(e, name, operands, results, attrs) name,
#include "kernels/llo/Ops.def"
  };
  return kNames[static_cast<int>(k)];
}

std::optional<int32_t> evalScalarBin(ScalarBin k, int32_t a, int32_t b) {
  const uint32_t x = uint32_t(a), y = uint32_t(b);
  switch (k) {
    case ScalarBin::Add:
      return int32_t(x + y);
    case ScalarBin::Sub:
      return int32_t(x - y);
    case ScalarBin::Mul:
      return int32_t(x * y);
    case ScalarBin::Div:
    case ScalarBin::Rem:
      if (b == 0) return std::nullopt;
      if (a == INT32_MIN && b == -1) return k == ScalarBin::Div ? a : 0;
      return k == ScalarBin::Div ? a / b : a % b;
    case ScalarBin::Min:
      return std::min(a, b);
    case ScalarBin::Max:
      return std::max(a, b);
    case ScalarBin::And:
      return int32_t(x & y);
    case ScalarBin::Or:
      return int32_t(x | y);
    case ScalarBin::Xor:
      return int32_t(x ^ y);
    case ScalarBin::Shl:
      return int32_t(x << (y & 31));
    case ScalarBin::Shr:
      return int32_t(x >> (y & 31));
    case ScalarBin::Eq:
      return a == b;
    case ScalarBin::Ne:
      return a != b;
    case ScalarBin::Lt:
      return a < b;
    case ScalarBin::Le:
      return a <= b;
    case ScalarBin::Gt:
      return a > b;
    case ScalarBin::Ge:
      return a >= b;
  }
  return std::nullopt;
}

const char* scalarBinName(ScalarBin k) {
  static const char* const n[] = {"add", "sub", "mul", "div", "rem", "min", "max", "and", "or",
                                  "xor", "shl", "shr", "eq",  "ne",  "lt",  "le",  "gt",  "ge"};
  return n[static_cast<int>(k)];
}
const char* vecBinName(VecBin k) {
  static const char* const n[] = {"add", "sub", "mul", "max", "min", "and",
                                  "or",  "xor", "shl", "shr", "sra"};
  return n[static_cast<int>(k)];
}
const char* vecUnName(VecUn k) {
  static const char* const n[] = {"abs", "neg",  "exp",  "log",       "rsqrt",
                                  "rcp", "tanh", "sqrt", "round_bf16"};
  return n[static_cast<int>(k)];
}
const char* cmpName(Cmp k) {
  static const char* const n[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return n[static_cast<int>(k)];
}
const char* reduceName(Reduce k) { return k == Reduce::Sum ? "sum" : "max"; }
const char* dimSemanticsName(DimSemantics d) {
  return d == DimSemantics::Parallel ? "parallel" : "arbitrary";
}

Value* Function::newValue(Type t, std::string hint) {
  values.push_back(Value{static_cast<int>(values.size()), std::move(t), nullptr, std::move(hint)});
  return &values.back();
}

Value* Function::addArg(Type t, std::string hint) {
  Value* v = newValue(std::move(t), std::move(hint));
  body.args.push_back(v);
  return v;
}

Value* remoteDevice(const Op& op) {
  bool remote = op.kind == OpKind::RemoteDmaStart ||
                (op.kind == OpKind::SemSignal && op.ints.size() > 1 && op.ints[1] == 1);
  return remote && !op.operands.empty() ? op.operands[0] : nullptr;
}

std::vector<ViewRange> opViews(const Op& op) {
  std::vector<ViewRange> views;
  // A remote copy or signal names its device before its views.
  size_t i = remoteDevice(op) ? 1 : 0;
  while (i < op.operands.size()) {
    Value* ref = op.operands[i++];
    ViewRange v{ref, {}};
    for (int d = 0; d < ref->type.rank() && i < op.operands.size(); ++d)
      v.indices.push_back(op.operands[i++]);
    views.push_back(std::move(v));
  }
  return views;
}

bool matmulScaled(const Op& op) {
  return op.kind == OpKind::Matmul && op.ints.size() > 9 && op.ints[9] == 1;
}

size_t matmulFirstAddend(const Op& op) { return matmulScaled(op) ? 4 : 3; }

int64_t matmulLhsDiagonalBlocks(const Op& op) {
  return op.kind == OpKind::Matmul && op.ints.size() > 10 ? op.ints[10] : 1;
}

int64_t Kernel::gridPoints() const {
  int64_t n = 1;
  for (int64_t g : grid) n *= g;
  return n;
}

Op* Builder::create(OpKind kind, std::vector<Value*> operands, std::vector<Type> resultTypes,
                    std::vector<int64_t> ints, DType dtype) {
  auto op = std::make_unique<Op>();
  op->kind = kind;
  op->operands = std::move(operands);
  op->ints = std::move(ints);
  op->dtype = dtype;
  op->loc = loc_;
  op->overlap = overlap_;
  for (Type& t : resultTypes) {
    Value* v = fn_->newValue(std::move(t));
    v->def = op.get();
    op->results.push_back(v);
  }
  Op* raw = op.get();
  block_->ops.push_back(std::move(op));
  return raw;
}

Value* Builder::sconst(int64_t v) {
  return create(OpKind::SConst, {}, {Type::scalar()}, {v})->result();
}
Value* Builder::sbin(ScalarBin k, Value* a, Value* b) {
  return create(OpKind::SBinary, {a, b}, {Type::scalar()}, {int64_t(k)})->result();
}
Value* Builder::vbin(VecBin k, Value* a, Value* b) {
  return create(OpKind::VBinary, {a, b}, {a->type}, {int64_t(k)})->result();
}
Value* Builder::vun(VecUn k, Value* a) {
  return create(OpKind::VUnary, {a}, {a->type}, {int64_t(k)})->result();
}
Value* Builder::vconst(uint32_t bits, DType d) {
  return create(OpKind::VConst, {}, {Type::tile(d)}, {int64_t(bits)}, d)->result();
}
Value* Builder::vcast(Value* a, DType to) {
  return create(OpKind::VCast, {a}, {Type::tile(to)}, {}, to)->result();
}

Value* Builder::vbitcast(Value* a, DType to) {
  return create(OpKind::VCast, {a}, {Type::tile(to)}, {1}, to)->result();
}

Op* Builder::forLoop(Value* lower, Value* upper, int64_t step, const std::string& ivHint,
                     const std::vector<Value*>& inits) {
  std::vector<Value*> operands{lower, upper};
  std::vector<Type> types;
  for (Value* v : inits) {
    operands.push_back(v);
    types.push_back(v->type);
  }
  Op* op = create(OpKind::For, operands, types, {step});
  op->regions.resize(1);
  Value* iv = fn_->newValue(Type::scalar(), ivHint);
  op->regions[0].args.push_back(iv);
  for (Value* v : inits) op->regions[0].args.push_back(fn_->newValue(v->type, "carry"));
  return op;
}

Op* Builder::ifOp(Value* cond, bool withElse) {
  Op* op = create(OpKind::If, {cond}, {});
  op->regions.resize(withElse ? 2 : 1);
  return op;
}

}  // namespace tpusim::kernels::llo
