#include "kernels/llo/Types.h"

#include <fmt/format.h>

namespace tpusim::kernels::llo {

const char* memSpaceName(MemSpace s) {
  switch (s) {
    case MemSpace::Vmem:
      return "vmem";
    case MemSpace::Smem:
      return "smem";
    case MemSpace::Hbm:
      return "hbm";
    case MemSpace::Semaphore:
      return "sem";
  }
  return "?";
}

int64_t Type::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shapeStr(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string Type::str() const {
  switch (kind) {
    case TypeKind::Scalar:
      return "i32";
    case TypeKind::Tile:
      return fmt::format("tile<{}>", isa::dtypeName(dtype));
    case TypeKind::Mask:
      return "mask";
    case TypeKind::Ref:
      return fmt::format("ref<{} {}{}{}>", memSpaceName(space), isa::dtypeName(dtype),
                         shapeStr(shape), strides.empty() ? "" : " strides=" + shapeStr(strides));
  }
  return "?";
}

TiledLayout tiledLayout(const std::vector<int64_t>& shape) {
  int64_t rows = 1, cols = 1, matrices = 1;
  size_t n = shape.size();
  if (n >= 1) cols = shape[n - 1];
  if (n >= 2) rows = shape[n - 2];
  for (size_t i = 0; i + 2 < n; ++i) matrices *= shape[i];
  TiledLayout l;
  l.paddedRows = (rows + kSublanes - 1) / kSublanes * kSublanes;
  l.colTiles = (cols + kLanes - 1) / kLanes;
  l.matrices = matrices;
  return l;
}

int64_t refBytes(const Type& ref) {
  switch (ref.space) {
    case MemSpace::Vmem:
      return tiledLayout(ref.shape).totalBytes();
    case MemSpace::Smem:
      return ref.numElements() * 4;
    case MemSpace::Hbm:
      return ref.numElements() * isa::dtypeBytes(ref.dtype);
    case MemSpace::Semaphore:
      return ref.numElements();
  }
  return 0;
}

bool isTileDType(DType d) {
  return d == DType::F32 || d == DType::S32 || d == DType::Bf16 || d == DType::S8 ||
         d == DType::F16 || d == DType::S16 || d == DType::U16 || d == DType::U8;
}
bool isFloatDType(DType d) { return d == DType::F32 || d == DType::Bf16; }

}  // namespace tpusim::kernels::llo
