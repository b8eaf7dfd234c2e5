// Which pipeline input blocks the DMA lays out in the packed int8 (s8x2)
// weight layout: word (c * 2S + r, n) of the VMEM block holds rows c * 2S + r
// (low byte) and c * 2S + S + r (high byte) of the block, S = mxu.size; the
// rows c * 2S + S + r hold nothing the kernel reads. That is the value
// `mxu.wpush.s8x2` pushes, so the matmul loads it and pushes it with no
// `vpack.b8`, and the DMA's VMEM port moves 2 bytes per weight instead of 4
// (isa/README.md, DMA "pair mode").
//
// The rule (no shape or name cases): an s8 input of a rank-2 VMEM block that
// the body reads only as the right-hand side of untransposed matmuls deeper
// than one MXU tile, each starting at a constant row that is a multiple of
// 2S, and each either s8 x s8 (LowerMatmul's packed form, mxu.int8_rate 2) or
// bf16 x s8 (the dequantized form: the push of K chunk kc unpacks byte kc % 2
// of the words at rows (kc / 2) * 2S + r with `vunpack.s8`, the same one VALU
// op as the unpaired byte 0, so the weights cross the DMA's VMEM port at 2
// bytes each instead of 4). Interpret mode does not see the layout (it is
// the code generator's), so results are unchanged bit for bit.
#pragma once

#include <cstdint>

#include "kernels/codegen/TargetInfo.h"
#include "kernels/llo/Ir.h"

namespace tpusim::kernels::codegen {

// S (the rows per half chunk) when input `input` of `k` (an index into
// k.inputs) is moved paired, else 0. An input stored in the packed s8x2 HBM
// layout (ArrayOperand::pairRows) is always paired: CodegenError when the
// body does not read it so (packedLayoutFits).
int64_t pairedRows(const llo::Kernel& k, int input, const TargetInfo& t);

// Whether `k` can read input `input` from the packed s8x2 HBM layout
// (isa::BufferDesc::pairRows = S): the rule above holds for it, it is a
// whole rank-2 array (no strided view) and its rows and block rows are
// multiples of 2S, so every block copy is whole chunks. tpuc stores an entry
// parameter packed only when every kernel that reads it passes this.
bool packedLayoutFits(const llo::Kernel& k, int input, const TargetInfo& t);

}  // namespace tpusim::kernels::codegen
