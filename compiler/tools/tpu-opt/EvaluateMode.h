// tpu-opt --evaluate: runs the reference evaluator on the (optimized) module.
//
//   tpu-opt IN.hlo --evaluate [--input NAME=x.npy ...] --output-dir DIR
//           [--replicas N] [--seed S] [--force]
//
// NAME is a parameter of the entry computation, by instruction name (with or
// without '%') or by number. Parameters without --input get seeded random data
// (Evaluator.h: floats uniform in [-1, 1), signed ints in [-8, 8], unsigned in
// [0, 16], pred 0/1), different per parameter and per replica. bf16 inputs may
// be uint16 files of bf16 bits or float32 files (rounded to nearest even).
// The result is written as DIR/out.npy, or out.0.npy, out.1.npy ... for a tuple
// (out.1.0.npy for nested tuples); with several replicas each name gets the
// replica, out.r0.npy, out.r1.0.npy .... bf16 results are written as uint16
// bits. Existing files are not overwritten unless --force. One line per output
// file is printed: "out.npy = f32[2] {1, 2}". A file holding several modules
// ("// -----") writes module k's results into DIR/k/.
//
// The mode registers itself with tpu-opt (TpuOptMode.h); this function is the
// whole mode, exposed for tests.
#pragma once

#include "compiler/tools/tpu-opt/TpuOptMode.h"

namespace tpuopt {

int runEvaluateMode(ModeInput& in);

}  // namespace tpuopt
