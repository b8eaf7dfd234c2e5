// The reference evaluator's value type: a dense array of one element type in
// row-major (C) order, or a tuple of literals. Independent of the HLO IR so the
// kernels can be written and tested on their own; EvalTypes.h maps IR shapes to
// literals.
//
// Element storage: pred as uint8_t 0/1; s8..s64 and u8..u64 as the C++ integer
// of that width; f16 and bf16 as their uint16_t bits; f32 as float; f64 as
// double. Layouts in the HLO text (`{1,0}`, tiling) do not change a literal:
// values are always held in logical row-major order, as XLA's evaluator does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim::hlo::eval {

// An evaluation failure (unsupported op, bad input, runtime error such as an
// out-of-range argument). The message names the instruction when one is known.
class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ElemType : uint8_t { Pred, S8, S16, S32, S64, U8, U16, U32, U64, F16, BF16, F32, F64 };

size_t elemSize(ElemType t);
std::string_view elemTypeName(ElemType t);  // HLO spelling: "pred", "s32", "bf16" ...
bool isFloat(ElemType t);
bool isSignedInt(ElemType t);
bool isUnsignedInt(ElemType t);
inline bool isInteger(ElemType t) { return isSignedInt(t) || isUnsignedInt(t); }
int bitWidth(ElemType t);

// Number of elements of `dims`; throws EvalError on a negative dimension or overflow.
int64_t checkedElementCount(const std::vector<int64_t>& dims);
// Row-major strides in elements.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims);

class Literal {
 public:
  Literal() = default;
  // A zero-filled array.
  static Literal array(ElemType type, std::vector<int64_t> dims);
  static Literal scalar(ElemType type, double value);  // converted like `convert`
  static Literal tuple(std::vector<Literal> elements);

  bool isTuple() const { return isTuple_; }
  ElemType type() const { return type_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t numElements() const { return count_; }
  size_t byteSize() const { return bytes_.size(); }

  uint8_t* raw() { return bytes_.data(); }
  const uint8_t* raw() const { return bytes_.data(); }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes_.data());
  }

  std::vector<Literal>& elements() { return elements_; }
  const std::vector<Literal>& elements() const { return elements_; }

  // Element i as a double / int64 (slow; for indices, tests and printing).
  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
  // Sets element i from a double, converting as `convert` does.
  void setDouble(int64_t i, double v);
  void setInt(int64_t i, int64_t v);

  // Same type, dims and bits (tuples element by element).
  bool operator==(const Literal& o) const;
  bool operator!=(const Literal& o) const { return !(*this == o); }
  // "f32[2,3]" or "(f32[2], s32[])".
  std::string shapeString() const;
  // Values for messages and tests: "f32[3] {1, 2.5, -inf}"; at most `limit` elements.
  std::string toString(size_t limit = 64) const;

 private:
  bool isTuple_ = false;
  ElemType type_ = ElemType::F32;
  std::vector<int64_t> dims_;
  int64_t count_ = 0;
  std::vector<uint8_t> bytes_;
  std::vector<Literal> elements_;
};

}  // namespace tpusim::hlo::eval
