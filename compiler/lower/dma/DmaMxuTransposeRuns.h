// A 16-bit matrix transpose in strips as tall as VMEM allows, written one
// MXU column tile at a time, so the result's rows get long HBM runs
// (DmaMxuTransposeRuns.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/lower/dma/DmaFragment.h"

namespace tpusim::lower {

struct DmaOp;

// The transpose as tryXluTranspose normalizes it: `batch` matrices of [rows,
// cols] (source rows rowStrideBytes apart) into [cols, rows] each.
struct TransposeGeometry {
  int64_t rows = 0, cols = 0, batch = 1;
  int64_t rowStrideBytes = 0;
  int64_t pitch = 0;               // VMEM rows between source rows in a strip
  int64_t total = 0;               // bytes of the operand
  int64_t doubleBufferedTall = 0;  // source rows of the strip tryXluTranspose would use
  bool inOrder = false;            // strips follow each other in the source and the result
  std::vector<DmaFragment::LoopAxis> batchAxes;  // (source, result) byte steps per matrix
};

// Emits the transpose and returns true when the MXU takes it (16-bit
// elements, packed int8) and the HBM run model prices the long runs below the
// double-buffered strips'; false (nothing emitted) otherwise.
bool tryMxuTransposeLongRuns(DmaOp& op, const TransposeGeometry& g);

// VMEM bytes the tall strips take with `vmemBytes` free (0: the path is not taken).
int64_t mxuTransposeLongRunsVmem(const kernels::codegen::TargetInfo& t, const TransposeGeometry& g,
                                 int64_t vmemBytes);

}  // namespace tpusim::lower
