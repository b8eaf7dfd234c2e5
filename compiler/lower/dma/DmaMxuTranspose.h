// The transpose fragment's 128-row strips through the MXU instead of the
// transpose unit, for 16-bit elements on an MXU with packed int8 (s8x2).
//
// A tile D (N x N source elements, one 16-bit value per VMEM word) is pushed
// transposed as packed int8 weights: W[k][n] = low byte of D[n][k] and
// W[k + N][n] = its high byte. An LHS of identity rows whose values hold 1 in
// the low byte (lo pass) or in the high byte (hi pass) then yields each byte
// of Dᵀ, sign-extended, in s32 (isa/README.md, "MXU", s8x2: integer products,
// so exact for any bits: no 0 x inf as in a bf16 identity product), and one
// `vpack.b8` per vreg joins the bytes. The transpose unit moves 64 elements
// per cycle; each MXU here moves N² per 2N/8 mm, 4 x 128 per cycle on v6e.
#pragma once

#include <cstdint>

#include "compiler/lower/dma/DmaFragment.h"

namespace tpusim::lower {

struct MxuTransposeStrip {
  int64_t rows = 0;    // source rows in the strip (a multiple of N)
  int64_t cols = 0;    // source columns (a multiple of N)
  int64_t pitch = 0;   // VMEM rows between source rows (each row: cols / 128 VMEM rows)
  int64_t opitch = 0;  // VMEM rows between result rows (each row: rows / 128 VMEM rows)
  // The MXUs take different row tiles of one column tile (cols == N) instead
  // of the column tiles of one row tile: a column of tiles still uses all of them.
  bool overRows = false;
  int64_t depth = 0;  // overRows: row tiles per MXU in a block (0: four)
};

// Whether the MXU path serves 16-bit elements for this strip shape.
bool mxuTransposeFits(const kernels::codegen::TargetInfo& t, int64_t elemBytes,
                      const MxuTransposeStrip& s);
// Source rows of one overRows block of a tall strip: two row tiles per MXU.
int64_t mxuTransposeBlockRows(const kernels::codegen::TargetInfo& t);
// overRows row tiles per MXU for one block of `rows` source rows (a multiple
// of mxuTransposeBlockRows).
int64_t mxuTransposeDepthFor(const kernels::codegen::TargetInfo& t, int64_t rows);
// VMEM rows the identity table takes (mxuTransposeTable writes them).
int64_t mxuTransposeTableRows(const kernels::codegen::TargetInfo& t);
// Stores the lo and hi identity rows at VMEM row `tableRow` (once per fragment).
void mxuTransposeTable(DmaFragment& f, int64_t tableRow);
// Transposes one strip: source at VMEM row `aRow` (row i, 128-column tile j at
// aRow + i * pitch + j), result at `oRow` (the same with opitch).
void mxuTransposeStrip(DmaFragment& f, const MxuTransposeStrip& s, int64_t aRow, int64_t oRow,
                       int64_t tableRow);
// The same with the rows in registers (inside a loop of the caller's).
void mxuTransposeStrip(DmaFragment& f, const MxuTransposeStrip& s, MOperand aRow, MOperand oRow,
                       int64_t tableRow);

}  // namespace tpusim::lower
