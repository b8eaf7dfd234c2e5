// Types of kernel-IR values: scalars (the scalar unit's 32-bit registers),
// tiles (one vreg: 8 sublanes x 128 lanes of one element type), masks (8x128
// bits) and refs (a buffer in a memory space with a shape and element type).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/Isa.h"
#include "isa/Program.h"

namespace tpusim::kernels::llo {

using isa::DType;

constexpr int kSublanes = isa::kSublanes;
constexpr int kLanes = isa::kLanes;
constexpr int kTileElems = kSublanes * kLanes;

// Where a ref lives. Semaphore refs hold counting semaphores (sync flags).
enum class MemSpace : uint8_t { Vmem, Smem, Hbm, Semaphore };
const char* memSpaceName(MemSpace s);

enum class TypeKind : uint8_t { Scalar, Tile, Mask, Ref };

struct Type {
  TypeKind kind = TypeKind::Scalar;
  // Scalar: S32 (the scalar unit is integer only; f32 scalars travel as bits).
  // Tile: F32, S32, Bf16 / F16 / S16 / U16 (unpacked: low 16 bits of each 32-bit lane), S8 or U8
  // (low 8 bits of each lane). Ref: the element type.
  DType dtype = DType::S32;
  MemSpace space = MemSpace::Vmem;  // Ref only
  std::vector<int64_t> shape;       // Ref only
  // HBM refs only: element strides per dim when the array is a view of a
  // buffer laid out in another dim order (a transpose read in place); empty:
  // dense row-major.
  std::vector<int64_t> strides;

  static Type scalar() { return Type{}; }
  static Type tile(DType d) { return Type{TypeKind::Tile, d, MemSpace::Vmem, {}, {}}; }
  static Type mask() { return Type{TypeKind::Mask, DType::Pred, MemSpace::Vmem, {}, {}}; }
  static Type ref(MemSpace s, DType d, std::vector<int64_t> shape,
                  std::vector<int64_t> strides = {}) {
    return Type{TypeKind::Ref, d, s, std::move(shape), std::move(strides)};
  }

  bool isScalar() const { return kind == TypeKind::Scalar; }
  bool isTile() const { return kind == TypeKind::Tile; }
  bool isMask() const { return kind == TypeKind::Mask; }
  bool isRef() const { return kind == TypeKind::Ref; }
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numElements() const;
  bool operator==(const Type& o) const {
    return kind == o.kind && dtype == o.dtype &&
           (kind != TypeKind::Ref ||
            (space == o.space && shape == o.shape && strides == o.strides));
  }
  bool operator!=(const Type& o) const { return !(*this == o); }
  std::string str() const;
};

// The (8,128) tiled VMEM layout of a ref (every element in its own 32-bit word;
// bf16 and int8 in the low bits). For shape (..., R, C): the last two dims form
// ceil(C/128) column tiles, each ceil(R/8)*8 consecutive VMEM rows; column tiles
// follow one another, then the leading dims in row-major order. Any 8
// consecutive rows of one column tile are 8 consecutive VMEM rows (distinct
// banks), so a tile load never conflicts with itself.
struct TiledLayout {
  int64_t paddedRows = 0;  // ceil(R/8)*8
  int64_t colTiles = 0;    // ceil(C/128)
  int64_t matrices = 1;    // product of the leading dims
  int64_t rowsPerMatrix() const { return paddedRows * colTiles; }
  int64_t totalRows() const { return rowsPerMatrix() * matrices; }
  int64_t totalBytes() const { return totalRows() * isa::kVmemRowBytes; }
  // VMEM row (relative to the ref's base) of element row r, column tile ct, matrix m.
  int64_t row(int64_t m, int64_t r, int64_t ct) const {
    return m * rowsPerMatrix() + ct * paddedRows + r;
  }
};
// Layout of a VMEM ref of this shape (rank 0 and 1 are treated as (1,1) and (1,C)).
TiledLayout tiledLayout(const std::vector<int64_t>& shape);

// Bytes a ref occupies in its memory space (VMEM: tiled and padded; SMEM: one
// 32-bit word per element; HBM: dense row-major elements; semaphores: one each).
int64_t refBytes(const Type& ref);

// Element types a tile may hold, and which of them arithmetic accepts.
bool isTileDType(DType d);
bool isFloatDType(DType d);
std::string shapeStr(const std::vector<int64_t>& shape);

}  // namespace tpusim::kernels::llo
