// The chip's tiled layouts, as XLA's TPU backend prints them. An array is
// stored in tiles over its two most minor physical dims; the second-level tile
// packs narrow types so that one (8,128) tile of 32-bit words holds them:
//   32-bit (f32, s32, u32):  T(8,128)          f32[64,64]{1,0:T(8,128)}
//   16-bit (bf16, f16, ...): T(8,128)(2,1)     two rows per 32-bit sublane
//   8-bit and pred:          T(8,128)(4,1)     four rows per 32-bit sublane
//   4-bit:                   T(8,128)(8,1)
// Small shapes (the rules seen in XLA TPU dumps):
//   - rank 0: a scalar is padded to one lane row: {:T(128)} for 32-bit,
//     {:T(256)} for 16-bit, {:T(512)} for 8-bit and pred (one 512-byte row);
//   - rank 1: one tile over the lanes, at least 256 elements and at most 1024:
//     T(256), T(512) or T(1024) (the next power of two), packed types add
//     (128)(2,1) / (128)(4,1): bf16[1000]{0:T(1024)(128)(2,1)};
//   - rank >= 2 with a second-minor physical dim of 1, 2 or 4 (or less than 8):
//     the tile's row count shrinks to the smallest of 1, 2, 4, 8 that holds it
//     (f32[2,1024]{1,0:T(2,128)}), but never below the packing (bf16 rows are
//     tiled by at least 2, 8-bit by 4), so a small batch is not padded eightfold.
// 64-bit and complex types are not native to the chip: they keep their
// minor_to_major and get no tiles.
#pragma once

#include <optional>
#include <vector>

#include "compiler/hlo/Shape.h"

namespace tpusim::passes {

// The tiles of an array of `shape`'s type and dims stored with `minorToMajor`
// (empty for types that are not tiled).
std::vector<hlo::Tile> tpuTiles(const hlo::Shape& shape, const std::vector<int64_t>& minorToMajor);
// `shape` (recursively for tuples) with the given minor_to_major for arrays
// (nullopt: keep the shape's own, or the default {rank-1,...,0}) and TPU tiles.
// Element size and memory space of an existing layout are kept.
hlo::Shape withTpuLayout(const hlo::Shape& shape,
                         const std::optional<std::vector<int64_t>>& minorToMajor = std::nullopt);
// `shape` with the default minor_to_major {rank-1,...,0} and TPU tiles for every
// array (every element of a tuple).
hlo::Shape withDefaultTpuLayout(const hlo::Shape& shape);
// {rank-1, ..., 0}.
std::vector<int64_t> defaultMinorToMajor(int64_t rank);

}  // namespace tpusim::passes
