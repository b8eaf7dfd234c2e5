// Random MXU command streams and the runner that drives one MxuUnit with them
// exactly as a TensorCore would: for each command in order, ask its ready
// cycle, issue it at max(wanted cycle, ready cycle). Everything observable is
// recorded so two implementations can be compared (mxu-cosim, mxu-bench).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sim/mxu/MxuUnit.h"

namespace tpusim::cosim {

enum class MxuOp : uint8_t { Push, PushT, Latch, Matmul, Pop };

struct MxuCommand {
  MxuOp op = MxuOp::Pop;
  uint64_t gap = 0;  // wanted cycle = issue cycle of the previous command + gap
  sim::MxuDtype dtype = sim::MxuDtype::Bf16;
  int slot = 0;
  bool accumulate = false;
  int data = -1;  // index into MxuStream::vregs (pairs for N = 256), -1 = none
};

struct MxuStream {
  int n = 0;
  uint64_t seed = 0;
  std::vector<MxuCommand> commands;
  std::vector<sim::VregData> vregs;
  std::string describe() const;  // "N=8 seed=0x1234 commands=57"
};

struct StreamShape {
  int commands = 60;
  int slots = 16;
  bool specialValues = false;  // bf16 subnormals, infinities, NaN, huge/tiny exponents
  bool faults = false;         // occasionally a staging overflow or dtype mismatch
  bool packedInt8 = true;      // s8x2 commands are legal (mxu.int8_rate 2); else only as faults
};

MxuStream randomMxuStream(int n, uint64_t seed, const StreamShape& shape);

// A dense, legal stream for speed measurement: `tiles` weight tiles, each
// loaded behind the previous one's `rowsPerTile / 8` mms, results popped.
MxuStream matmulMxuStream(int n, int tiles, int rowsPerTile, uint64_t seed);

// What one run of a stream produced.
struct MxuRunRecord {
  std::vector<uint64_t> readyAt;      // per command
  std::vector<uint64_t> issueCycle;   // per command
  std::vector<std::string> faults;    // per command ("" = ok)
  std::vector<sim::VregData> popped;  // per pop (lo then hi for N = 256)
  std::vector<sim::MxuResultRow> rows;
  sim::MxuStats stats;
  uint64_t endCycle = 0;
  std::string panic;  // a simulator bug stopped the run (MxuPanic)
};

MxuRunRecord runMxuStream(sim::MxuUnit& unit, const MxuStream& stream, bool recordRows = true);

// Empty if equal; otherwise the first difference, with cycle and both values.
std::string compareMxuRuns(const MxuStream& stream, const MxuRunRecord& model,
                           const MxuRunRecord& rtl);

const char* mxuOpName(MxuOp op);

}  // namespace tpusim::cosim
