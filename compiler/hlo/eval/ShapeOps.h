// Data-movement kernels: they move whole elements (any element type) without
// looking at values. All index arguments are already validated by the caller
// (the verifier checked shapes) except where a comment says it clamps.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

// out[idx] = in[idx restricted to `dims`]: operand dim i maps to output dim dims[i].
Literal broadcastLit(const Literal& in, const std::vector<int64_t>& outDims,
                     const std::vector<int64_t>& dims);
// Output dim i is operand dim perm[i].
Literal transposeLit(const Literal& in, const std::vector<int64_t>& perm);
// Same elements in row-major order, new dims.
Literal reshapeLit(const Literal& in, const std::vector<int64_t>& dims);
// Reinterprets the physical buffer: `in` laid out by `fromMinorToMajor` read back
// with dims `toDims` laid out by `toMinorToMajor` (XLA's bitcast).
Literal bitcastLit(const Literal& in, const std::vector<int64_t>& fromMinorToMajor,
                   const std::vector<int64_t>& toDims, const std::vector<int64_t>& toMinorToMajor);
Literal sliceLit(const Literal& in, const std::vector<int64_t>& starts,
                 const std::vector<int64_t>& limits, const std::vector<int64_t>& strides);
// Starts are clamped to [0, dim - size], as XLA does.
Literal dynamicSliceLit(const Literal& in, std::vector<int64_t> starts,
                        const std::vector<int64_t>& sizes);
Literal dynamicUpdateSliceLit(const Literal& base, const Literal& update,
                              std::vector<int64_t> starts);
Literal concatenateLit(const std::vector<const Literal*>& ins, int64_t dim);
// lows/highs may be negative (cropping); interior >= 0.
Literal padLit(const Literal& in, const Literal& padValue, const std::vector<int64_t>& lows,
               const std::vector<int64_t>& highs, const std::vector<int64_t>& interiors);
Literal reverseLit(const Literal& in, const std::vector<int64_t>& dims);
Literal iotaLit(ElemType type, const std::vector<int64_t>& dims, int64_t iotaDim);

// Clamps dynamic-slice starts into range: start in [0, dim - size].
void clampStarts(std::vector<int64_t>& starts, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& sizes);

// Copies elements over the index space `space`:
//   dst[dstOff + sum(idx[d] * dstStrides[d])] = src[srcOff + sum(idx[d] * srcStrides[d])]
// Offsets and strides are in elements; elemBytes is the element size.
void affineCopy(const std::vector<int64_t>& space, uint8_t* dst, int64_t dstOff,
                const std::vector<int64_t>& dstStrides, const uint8_t* src, int64_t srcOff,
                const std::vector<int64_t>& srcStrides, size_t elemBytes);

}  // namespace tpusim::hlo::eval
