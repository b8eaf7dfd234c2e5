// Shapes of HLO values: element (primitive) types, array dimensions, layouts
// (minor_to_major, tiles, memory space) and tuples, as XLA writes them:
//   f32[8,128]{1,0}   bf16[8,128]{1,0:T(8,128)(2,1)S(1)}   (s32[], f32[4]{0})   token[]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim::hlo {

// Element types. The f8/f4/s4/u4/c64/c128 kinds are parsed and printed, but the
// verifier and the evaluator may reject them. Tuple/Token/Opaque are not
// element types but shape kinds.
enum class PrimitiveType : uint8_t {
  Invalid,
  Pred,
  S2,
  S4,
  S8,
  S16,
  S32,
  S64,
  U2,
  U4,
  U8,
  U16,
  U32,
  U64,
  F16,
  BF16,
  F32,
  F64,
  F8E5M2,
  F8E4M3FN,
  F8E4M3B11FNUZ,
  F8E5M2FNUZ,
  F8E4M3FNUZ,
  F8E4M3,
  F8E3M4,
  F4E2M1FN,
  F8E8M0FNU,
  C64,
  C128,
  Tuple,
  Token,
  Opaque,
};

// "f32", "bf16", "pred", "token", ... as written in HLO text.
std::string_view primitiveTypeName(PrimitiveType t);
// The inverse of primitiveTypeName (Tuple is never returned: tuples are written "(...)").
std::optional<PrimitiveType> parsePrimitiveType(std::string_view name);

bool isFloatingType(PrimitiveType t);  // f16, bf16, f32, f64 and the f8/f4 kinds
bool isF8Type(PrimitiveType t);        // the f8 and f4 kinds (parse only)
bool isIntegralType(PrimitiveType t);  // s* and u* (not pred)
bool isSignedIntegralType(PrimitiveType t);
bool isUnsignedIntegralType(PrimitiveType t);
bool isComplexType(PrimitiveType t);
bool isArrayElementType(PrimitiveType t);  // anything but Invalid/Tuple/Token/Opaque
int bitWidth(PrimitiveType t);             // 1 for pred (stored in a byte), 0 for non-arrays

// One tile of a tiled layout: T(8,128). A dimension of -1 is XLA's '*' (combine).
struct Tile {
  std::vector<int64_t> dims;
  bool operator==(const Tile& o) const { return dims == o.dims; }
};

// An array layout: {minor_to_major : T(..)(..) E(bits) S(space) other}.
struct Layout {
  std::vector<int64_t> minorToMajor;
  std::vector<Tile> tiles;
  int64_t elementSizeBits = 0;  // E(n); 0 when absent
  int64_t memorySpace = 0;      // S(n); 0 (default memory) when absent
  std::string extra;            // any other layout items after ':', kept verbatim
  bool operator==(const Layout& o) const;
  bool operator!=(const Layout& o) const { return !(*this == o); }
  std::string toString() const;  // "{1,0:T(8,128)(2,1)S(1)}"
};

// A shape: an array (element type + dims + optional layout), a tuple, a token
// or opaque. Fields are public; the helpers below keep the common cases short.
struct Shape {
  PrimitiveType type = PrimitiveType::Invalid;
  std::vector<int64_t> dims;       // arrays only; dims[i] is the size (or the bound if dynamic)
  std::vector<bool> dynamicDims;   // empty, or one flag per dim: written "<=N"
  std::optional<Layout> layout;    // arrays only; absent when the text gave none
  std::vector<Shape> tupleShapes;  // tuples only

  static Shape array(PrimitiveType t, std::vector<int64_t> dims);
  static Shape scalar(PrimitiveType t) { return array(t, {}); }
  static Shape tuple(std::vector<Shape> elements);
  static Shape token();

  bool isValid() const { return type != PrimitiveType::Invalid; }
  bool isArray() const { return isArrayElementType(type); }
  bool isTuple() const { return type == PrimitiveType::Tuple; }
  bool isToken() const { return type == PrimitiveType::Token; }
  bool isScalar() const { return isArray() && dims.empty(); }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool isDynamicDim(int64_t i) const;
  // Product of dims; saturates at INT64_MAX instead of overflowing. 1 for scalars, 0 for
  // non-arrays.
  int64_t elementCount() const;
  // The layout if present, otherwise the default {rank-1,...,0}.
  std::vector<int64_t> minorToMajorOrDefault() const;

  // Same kind, element types and dims (recursively for tuples); layouts ignored.
  bool compatible(const Shape& o) const;
  // Same dims as o (arrays), element type ignored.
  bool sameDims(const Shape& o) const { return dims == o.dims; }
  // Exact equality, including layouts.
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

  // HLO text: "f32[2,3]{1,0}", "(s32[], f32[4])". printLayout=false drops layouts.
  std::string toString(bool printLayout = true) const;
  // A copy with the element type replaced (arrays only).
  Shape withType(PrimitiveType t) const;
};

}  // namespace tpusim::hlo
