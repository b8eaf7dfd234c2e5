#include "kernels/dsl/Scalar.h"

namespace tpusim::kernels::dsl {

using llo::ScalarBin;

Scalar::Scalar(int64_t constant) : v_(nullptr) {
  if (constant < INT32_MIN || constant > UINT32_MAX)
    throw Error("error: scalar constant " + std::to_string(constant) + " does not fit 32 bits");
  v_ = builder("a scalar constant").sconst(constant);
}

bool Scalar::isConstant(int64_t* out) const {
  if (!v_->def || v_->def->kind != llo::OpKind::SConst) return false;
  if (out) *out = v_->def->ints[0];
  return true;
}

namespace {
Scalar bin(ScalarBin k, Scalar a, Scalar b) {
  int64_t x, y;
  // Fold constants so index arithmetic of static shapes stays static.
  if (a.isConstant(&x) && b.isConstant(&y)) {
    int32_t p = int32_t(x), q = int32_t(y);
    uint32_t up = uint32_t(p), uq = uint32_t(q);
    switch (k) {
      case ScalarBin::Add:
        return Scalar(int64_t(int32_t(up + uq)));
      case ScalarBin::Sub:
        return Scalar(int64_t(int32_t(up - uq)));
      case ScalarBin::Mul:
        return Scalar(int64_t(int32_t(up * uq)));
      case ScalarBin::Div:
        if (q != 0 && !(p == INT32_MIN && q == -1)) return Scalar(int64_t(p / q));
        break;
      case ScalarBin::Rem:
        if (q != 0 && !(p == INT32_MIN && q == -1)) return Scalar(int64_t(p % q));
        break;
      case ScalarBin::Min:
        return Scalar(int64_t(p < q ? p : q));
      case ScalarBin::Max:
        return Scalar(int64_t(p > q ? p : q));
      case ScalarBin::Eq:
        return Scalar(int64_t(p == q));
      case ScalarBin::Ne:
        return Scalar(int64_t(p != q));
      case ScalarBin::Lt:
        return Scalar(int64_t(p < q));
      case ScalarBin::Le:
        return Scalar(int64_t(p <= q));
      case ScalarBin::Gt:
        return Scalar(int64_t(p > q));
      case ScalarBin::Ge:
        return Scalar(int64_t(p >= q));
      default:
        break;
    }
  }
  if (k == ScalarBin::Add && b.isConstant(&y) && y == 0) return a;
  if (k == ScalarBin::Mul && b.isConstant(&y) && y == 1) return a;
  return Scalar(builder().sbin(k, a.value(), b.value()));
}
}  // namespace

Scalar operator+(Scalar a, Scalar b) { return bin(ScalarBin::Add, a, b); }
Scalar operator-(Scalar a, Scalar b) { return bin(ScalarBin::Sub, a, b); }
Scalar operator*(Scalar a, Scalar b) { return bin(ScalarBin::Mul, a, b); }
Scalar operator/(Scalar a, Scalar b) { return bin(ScalarBin::Div, a, b); }
Scalar operator%(Scalar a, Scalar b) { return bin(ScalarBin::Rem, a, b); }
Scalar operator==(Scalar a, Scalar b) { return bin(ScalarBin::Eq, a, b); }
Scalar operator!=(Scalar a, Scalar b) { return bin(ScalarBin::Ne, a, b); }
Scalar operator<(Scalar a, Scalar b) { return bin(ScalarBin::Lt, a, b); }
Scalar operator<=(Scalar a, Scalar b) { return bin(ScalarBin::Le, a, b); }
Scalar operator>(Scalar a, Scalar b) { return bin(ScalarBin::Gt, a, b); }
Scalar operator>=(Scalar a, Scalar b) { return bin(ScalarBin::Ge, a, b); }
Scalar operator&&(Scalar a, Scalar b) { return bin(ScalarBin::And, a != 0, b != 0); }
Scalar operator||(Scalar a, Scalar b) { return bin(ScalarBin::Or, a != 0, b != 0); }
Scalar min(Scalar a, Scalar b) { return bin(ScalarBin::Min, a, b); }
Scalar max(Scalar a, Scalar b) { return bin(ScalarBin::Max, a, b); }
Scalar select(Scalar cond, Scalar a, Scalar b) {
  int64_t c;
  if (cond.isConstant(&c)) return c ? a : b;
  return Scalar(
      builder()
          .create(llo::OpKind::SSelect, {cond.value(), a.value(), b.value()}, {llo::Type::scalar()})
          ->result());
}

Scalar program_id(int axis, Loc loc) {
  locate(loc);
  return Scalar(builder("program_id")
                    .create(llo::OpKind::ProgramId, {}, {llo::Type::scalar()}, {axis})
                    ->result());
}
Scalar num_programs(int axis, Loc loc) {
  locate(loc);
  return Scalar(builder("num_programs")
                    .create(llo::OpKind::NumPrograms, {}, {llo::Type::scalar()}, {axis})
                    ->result());
}

Scalar device_id(Loc loc) {
  locate(loc);
  return Scalar(
      builder("device_id").create(llo::OpKind::DeviceId, {}, {llo::Type::scalar()})->result());
}
Scalar num_devices(Loc loc) {
  locate(loc);
  return Scalar(
      builder("num_devices").create(llo::OpKind::NumDevices, {}, {llo::Type::scalar()})->result());
}

}  // namespace tpusim::kernels::dsl
