// A 32-bit integer on the scalar unit (grid indices, loop counters, offsets).
// Integer literals convert implicitly; arithmetic wraps, `/` and `%` truncate
// toward zero, comparisons and `&&`/`||` give 0 or 1.
#pragma once

#include <cstdint>

#include "kernels/dsl/Trace.h"

namespace tpusim::kernels::dsl {

class Scalar {
 public:
  Scalar(int64_t constant);                            // NOLINT: literals are scalars
  Scalar(int constant) : Scalar(int64_t(constant)) {}  // NOLINT
  explicit Scalar(llo::Value* v) : v_(v) {}
  llo::Value* value() const { return v_; }
  // The value when it is a compile-time constant.
  bool isConstant(int64_t* out = nullptr) const;

 private:
  llo::Value* v_;
};

Scalar operator+(Scalar a, Scalar b);
Scalar operator-(Scalar a, Scalar b);
Scalar operator*(Scalar a, Scalar b);
Scalar operator/(Scalar a, Scalar b);
Scalar operator%(Scalar a, Scalar b);
Scalar operator==(Scalar a, Scalar b);
Scalar operator!=(Scalar a, Scalar b);
Scalar operator<(Scalar a, Scalar b);
Scalar operator<=(Scalar a, Scalar b);
Scalar operator>(Scalar a, Scalar b);
Scalar operator>=(Scalar a, Scalar b);
Scalar operator&&(Scalar a, Scalar b);
Scalar operator||(Scalar a, Scalar b);
Scalar min(Scalar a, Scalar b);
Scalar max(Scalar a, Scalar b);
Scalar select(Scalar cond, Scalar a, Scalar b);

// Grid position (Pallas pl.program_id / pl.num_programs).
Scalar program_id(int axis, Loc loc = Loc::here());
Scalar num_programs(int axis, Loc loc = Loc::here());

// SPMD kernels: this chip's device id (0 .. num_devices() - 1, row-major over
// the topology as XLA numbers devices) and the number of chips; 0 and 1 alone
// (Pallas `lax.axis_index` / the mesh size).
Scalar device_id(Loc loc = Loc::here());
Scalar num_devices(Loc loc = Loc::here());

}  // namespace tpusim::kernels::dsl
