// The expression nodes behind dsl::Array (internal to the DSL).
#pragma once

#include <vector>

#include "kernels/dsl/Array.h"

namespace tpusim::kernels::dsl {

struct ArrayNode {
  enum class Kind {
    View,     // a window of a VMEM ref
    Splat,    // a constant (bits) or a scalar value
    Iota,     // row or column index
    Unary,    // llo::VecUn
    Binary,   // llo::VecBin
    Compare,  // llo::Cmp, gives BOOL
    MaskOp,   // 0 = and, 1 = or on BOOL
    Select,   // cond ? a : b
    Cast,     // to dtype
    Dot,      // lazy matmul (materialized on first use)
    Tiles,    // values already in tiles (a loop's carried array), row-major over tiles
    LaneRoll  // lanes rotated within the tile: column j = arg column (j - op) mod 128
  };
  Kind kind = Kind::View;
  int64_t rows = 1, cols = 1;
  DType dtype = DType::F32;
  int op = 0;  // the llo enum value for Unary/Binary/Compare/MaskOp, axis for Iota
  std::vector<std::shared_ptr<const ArrayNode>> args;

  // View: ref window (leading indices, first row, first column: a multiple of 128).
  llo::Value* ref = nullptr;
  std::vector<llo::Value*> lead;
  llo::Value* row0 = nullptr;
  llo::Value* col0 = nullptr;
  // Every lane of the view's tiles holds the row's value (a lane reduction's
  // result), so broadcasting along columns needs no lane shuffle.
  bool laneReplicated = false;

  // Splat: the 32-bit pattern, or a scalar (bits) when `scalar` is set.
  uint32_t bits = 0;
  llo::Value* scalar = nullptr;

  // Tiles: one value per (8,128) tile. A 1-row array holds its row in every
  // sublane, a 1-column array its column in every lane (ready to broadcast).
  std::vector<llo::Value*> tiles;

  // Dot
  DotOptions dot;
  Loc loc;
};

using NodePtr = std::shared_ptr<const ArrayNode>;

}  // namespace tpusim::kernels::dsl
