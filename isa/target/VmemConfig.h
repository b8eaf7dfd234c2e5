// Vector memory (VMEM): capacity and banking. Rows are 128 x 32 bit (512 bytes);
// row r lives in bank r mod banks (isa/README.md).
// Ownership: the engineer who owns this unit may add a field here. Add it with
// its key, unit, one-line doc and limits in visit(), give it a value and a
// "sources" entry in every sim/chips/*.json (non-extending presets must list
// every field), then regenerate docs/presets.md with
// `build/bin/tpusim-config --doc > docs/presets.md`.
#pragma once

#include "isa/Isa.h"
#include "isa/target/Params.h"

namespace tpusim::target {

struct VmemConfig {
  int64_t bytes = int64_t(16) << 20;
  int64_t banks = 16;

  template <class V>
  void visit(V& v) {
    v.field("bytes", bytes, "bytes", "VMEM capacity per core", isa::kVmemRowBytes,
            int64_t(1) << 32);
    v.field("banks", banks, "count",
            "VMEM banks, each with one read and one write port (row r in bank r mod banks)", 1,
            1024);
  }

  int64_t rows() const { return bytes / isa::kVmemRowBytes; }

  void check(ConfigProblems& p) const {
    p.require(bytes % isa::kVmemRowBytes == 0, "bytes", "must be a whole number of 512-byte rows");
    p.require(rows() >= banks, "banks", "more banks than VMEM rows");
    p.require(rows() % banks == 0, "banks", "must divide the number of VMEM rows evenly");
  }
};

}  // namespace tpusim::target
