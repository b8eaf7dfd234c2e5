// Bit-exact semantics of the kernel IR's tile operations, written from the ISA
// contract (isa/Opcodes.def, isa/README.md): f32 with round-to-nearest-even and
// canonical NaN results, wrapping s32, bf16 via isa/support/Numerics.h, the XLU
// lane-reduction tree, and the MXU's k-order accumulation. Interpret mode uses
// these, so its results equal what the generated bundles compute.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>

#include "kernels/llo/Ir.h"

namespace tpusim::kernels::llo {

using TileData = std::array<uint32_t, kTileElems>;  // [sublane * 128 + lane]
using MaskData = std::bitset<kTileElems>;

TileData tileBinary(VecBin k, DType d, const TileData& a, const TileData& b);
TileData tileUnary(VecUn k, DType d, const TileData& a);
MaskData tileCompare(Cmp k, DType d, const TileData& a, const TileData& b);
TileData tileCast(DType from, DType to, const TileData& a);
TileData tileReduceLanes(Reduce k, DType d, const TileData& a);
TileData tileRotSublanes(const TileData& a, int amount);
// result[s][(l + amount) mod 128] = a[s][l] (the XLU's lane rotate).
TileData tileRotLanes(const TileData& a, int amount);
TileData tileLanePerm(const TileData& a, const TileData& idx);

// Element value of a tile word as the MXU and the converts see it.
float bf16WordToF32(uint32_t word);  // low 16 bits
int32_t s8WordToS32(uint32_t word);  // low 8 bits, sign-extended
uint32_t f32ResultBits(float f);     // canonical NaN

// One output element of a matmul as the MXU computes it: products of
// a[0..K) and b[0..K) accumulated in k order in chunks of `mxuSize`, each chunk
// starting at +0 (mm), chunk results added in order (mma). Returns f32 bits
// (bf16 inputs) or the wrapped s32 (int8 inputs).
uint32_t mxuDotBf16(const uint32_t* a, const uint32_t* b, int64_t k, int mxuSize);
// The same continued from an MXU result slot holding `init` (f32 bits): every
// chunk result is added to the running value in order (mma), the first too.
uint32_t mxuDotBf16From(uint32_t init, const uint32_t* a, const uint32_t* b, int64_t k,
                        int mxuSize);
uint32_t mxuDotS8(const uint32_t* a, const uint32_t* b, int64_t k);

}  // namespace tpusim::kernels::llo
