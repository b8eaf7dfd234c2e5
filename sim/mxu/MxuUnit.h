// One matrix unit (MXU) as the TensorCore sees it: the earliest cycle each
// command may issue, the commands themselves, and statistics. The cycle-level
// and numeric behaviour is the "MXU" section of isa/README.md; MxuModel (the
// fast model) and RtlMxu (the Verilated RTL, hw/mxu_wrapper) both implement it
// and testbench/cosim proves them equal cycle for cycle.
//
// Calling protocol (the core's local loop follows it naturally):
//  - Commands are issued in non-decreasing cycle order. Several commands may
//    share a cycle if they use different ports (weight port: wpush; LHS port:
//    mm/mma; latch: both; pop port: pop).
//  - For a bundle, ask the ready cycle of each of its MXU commands first,
//    then issue them all at one cycle t >= every answer, in slot order (mpush
//    before mpop). A pop may share its cycle with an mm to the same slot: it
//    reads the slot's previous contents. An answer counts every command issued
//    so far, so it stays valid for any later cycle; it is never earlier than
//    the cycle of the last command issued to this MXU. The RTL implementation
//    advances its clock to answer, so only ask for commands you are about to
//    issue.
//  - Issuing a command before its ready cycle is a simulator bug: it throws
//    MxuPanic. Program errors (staging overflow, dtype mismatch) are returned
//    as a fault in MxuStatus and leave the MXU unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/common/Vreg.h"

namespace tpusim::target {
struct MxuConfig;
}

namespace tpusim::sim {

// S8x2: packed int8, each 16-bit value holds K elements k (low byte) and k + N
// (high byte) of a 2N-deep K tile: twice the MACs per mm, at the s8 timing
// (isa/README.md, "MXU", packed int8).
enum class MxuDtype : uint8_t { Bf16, S8, S8x2 };
const char* mxuDtypeName(MxuDtype d);

// Which implementation stands behind MxuUnit: the fast C++ model or the RTL.
enum class MxuModelKind : uint8_t { Model, Rtl };

// Thrown for a simulator bug (a command issued before its ready cycle, a
// missing second vreg for N = 256, an RTL that disagrees with its own
// handshake). Never a program error.
class MxuPanic : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// The program errors a command may meet (isa/README.md, "MXU").
enum class MxuFaultKind : uint8_t {
  None,
  NoPackedInt8,     // an s8x2 command on an MXU without packed int8
  StagingOverflow,  // a wpush past ceil(N/8) since the last latch
  PushDtype,        // a wpush of another dtype than the staged weights
  MatmulDtype,      // an mm of another dtype than the active weights
};

// The outcome of a command: ok = done; otherwise the program error, kept as
// its kind and values (no string per command) and worded by fault(), e.g.
// "MXU staging overflow: wpush number 17 since the last latch, ...".
struct MxuStatus {
  MxuFaultKind kind = MxuFaultKind::None;
  bool matmul = false;       // NoPackedInt8: an mm (else a wpush)
  MxuDtype dtype{}, held{};  // the command's dtype; the staged / active one
  int count = 0, n = 0;      // StagingOverflow: the wpush's number, the array's N
  bool ok() const { return kind == MxuFaultKind::None; }
  std::string fault() const;  // "" when ok
};

struct MxuStats {
  uint64_t pushes = 0;        // wpush commands (both forms)
  uint64_t latches = 0;       // latch commands
  uint64_t matmuls = 0;       // mm + mma commands
  uint64_t rowsStreamed = 0;  // LHS rows that entered the array (8 per mm)
  uint64_t busyCycles = 0;  // cycles in which an LHS row entered the array (utilization numerator)
  uint64_t pops = 0;        // pop commands
};

// For N <= 128 a row is lanes 0..N-1 of one vreg (hi unused, may be null);
// for N = 256 a row spans lo (elements 0..127) and hi (128..255).
struct VregIn {
  const VregData* lo = nullptr;
  const VregData* hi = nullptr;
};
struct VregOut {
  VregData* lo = nullptr;
  VregData* hi = nullptr;
};

// One result row written into the result buffer: `cycle` is the first cycle a
// pop could read it, `values` are the N 32-bit words written (f32 or s32).
// Used by cosimulation; values are empty in timing-only mode.
struct MxuResultRow {
  uint64_t cycle = 0;
  int slot = 0;
  int row = 0;
  std::vector<uint32_t> values;
};
using MxuResultObserver = std::function<void(const MxuResultRow&)>;

class MxuUnit {
 public:
  virtual ~MxuUnit() = default;

  virtual int size() const = 0;   // N
  virtual int slots() const = 0;  // result-buffer slots a0..
  virtual bool functional() const = 0;
  virtual const char* kindName() const = 0;  // "model" or "rtl"

  // Earliest cycle each command may issue (see the protocol above).
  virtual uint64_t weightPushReadyAt(bool transposed) = 0;
  virtual uint64_t latchReadyAt() = 0;
  virtual uint64_t matmulReadyAt() = 0;
  virtual uint64_t popReadyAt(int slot) = 0;

  // mxu.wpush[.t]: 8 weight rows (or columns, transposed) from `rows`.
  virtual MxuStatus weightPush(uint64_t cycle, VregIn rows, bool transposed, MxuDtype dtype) = 0;
  // mxu.latch: staging -> active weights, staging cleared.
  virtual MxuStatus latch(uint64_t cycle) = 0;
  // mxu.mm / mxu.mma: 8 LHS rows; results overwrite (accumulate = false) or
  // add to (true) slot `slot`.
  virtual MxuStatus matmul(uint64_t cycle, VregIn lhs, MxuDtype dtype, int slot,
                           bool accumulate) = 0;
  // mxu.pop: the 8 rows of `slot` as of `cycle` into out (lanes >= N zero).
  virtual MxuStatus pop(uint64_t cycle, int slot, VregOut out) = 0;

  // The run ended at `cycle`: implementations that step a clock advance to it
  // (so every result row in flight is written and observed).
  virtual void finish(uint64_t cycle) = 0;

  virtual const MxuStats& stats() const = 0;
  virtual void setResultObserver(MxuResultObserver observer) = 0;
};

// Builds one MXU. Model is always available; Rtl only for the array sizes
// whose Verilated model was built and linked (target tpusim_rtl_mxu_registered).
// On failure returns null and sets *error to a message that says how to fix it.
std::unique_ptr<MxuUnit> makeMxu(const target::MxuConfig& config, MxuModelKind kind,
                                 bool functional, std::string* error);

// Parses "model" / "rtl" (for --mxu-model); false on anything else.
bool parseMxuModelKind(const std::string& text, MxuModelKind* kind);

}  // namespace tpusim::sim
