// Bytes a value occupies in memory: an array's elements, padded to its layout's
// first tile (T(8,128) pads the two most minor physical dims to multiples of 8
// and 128; T(256) pads a rank-1 array to 256), times the element width
// (packed: bf16 is 2 bytes, int8 1, pred 1). A tuple's bytes are the sum of its
// elements' (the tuple's own index table is not counted).
#pragma once

#include <cstdint>

#include "compiler/hlo/Shape.h"

namespace tpusim::lower {

// Bytes of one element (pred and sub-byte types round up to 1); 0 for non-arrays.
int64_t elementBytes(hlo::PrimitiveType t);
// Padded bytes of `shape` as its layout tiles it (no padding without tiles).
// Saturates at INT64_MAX instead of overflowing.
int64_t shapeBytes(const hlo::Shape& shape);

}  // namespace tpusim::lower
