// Internal to the data-movement lowering (DataMovement.h): what the per-op
// files (DataMovement.cpp, DmaPad.cpp, DmaDynamicSlice.cpp, DmaGather.cpp)
// share: the op being lowered with its addresses, the emission of a Move as
// static descriptors or a run-time loop, and run-time index scalars.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/HloInstruction.h"
#include "compiler/lower/dma/DmaFragment.h"
#include "compiler/lower/dma/DmaMove.h"

namespace tpusim::lower {

// Enumerated descriptor points up to this many become static descriptors
// (16 SMEM words each); more run as a loop that rewrites one template.
constexpr int64_t kMaxStaticDescriptors = 64;
// A single descriptor at least this big whose runs are at most
// kQueueSplitMaxRun bytes is cut into one piece per DMA queue.
constexpr uint64_t kQueueSplitBytes = 64 * 1024;
constexpr int64_t kQueueSplitMaxRun = 64;
// Static HBM -> HBM moves of at least kStageMinBytes whose runs are at least
// kStageMinRun bytes go through VMEM (DmaStaged.cpp).
constexpr int64_t kStageMinRun = 32;
constexpr int64_t kStageMinBytes = 256 * 1024;

struct DmaOp {
  const hlo::HloInstruction& instr;
  const std::vector<uint64_t>& operandAddresses;
  uint64_t resultAddress;
  DmaFragment& frag;
  FragmentInfo& info;  // the op lowering adds the HBM bytes it moves

  [[noreturn]] void fail(const std::string& reason) const;  // throws CannotLower
  const hlo::Shape& operandShape(int64_t i) const;
  const hlo::Shape& resultShape() const { return instr.shape(); }
  int64_t elemBytes() const;  // of the result (checked: 1, 2 or 4)
};

// A value known at compile time or held in a register at run time.
struct ScalarValue {
  bool isConst = true;
  int64_t c = 0;
  MOperand reg;
};

// A register offset added to a move's source or destination offset at run
// time (a dynamic-slice start, a gather row), with its largest value.
struct RuntimeOffset {
  MOperand reg;
  int64_t max = 0;
};

// Emits the DMAs of `m` from srcBase to dstBase (byte addresses in `spaces`),
// with optional run-time offsets. Counts the HBM bytes into op.info unless
// countBytes is false (a caller inside a loop counts them itself). Throws
// CannotLower when an offset could reach 2^32 or a run exceeds a
// descriptor's 32 bits.
struct MoveSpaces {
  isa::MemorySpace src = isa::MemorySpace::Hbm, dst = isa::MemorySpace::Hbm;
};
void emitMove(DmaOp& op, const Move& m, uint64_t srcBase, uint64_t dstBase,
              const std::optional<RuntimeOffset>& srcRuntime = std::nullopt,
              const std::optional<RuntimeOffset>& dstRuntime = std::nullopt, bool countBytes = true,
              MoveSpaces spaces = {});

// Moves `m` through VMEM buffers when that keeps both HBM streams
// sequential; false (nothing emitted) when the move does not qualify.
bool tryStagedMove(DmaOp& op, const Move& m, uint64_t srcBase, uint64_t dstBase);

// A transpose moving the innermost dim (whole 128x128 tiles) through VMEM and
// the transpose unit (DmaXluTranspose.cpp); false when it does not qualify.
bool tryXluTranspose(DmaOp& op);

// Reads scalar index operands: constants from their literal, others DMA'd
// from HBM into SMEM and loaded (sign-extended for s8/s16). Integer types of
// 1, 2 or 4 bytes only.
std::vector<ScalarValue> loadIndexScalars(DmaOp& op, const std::vector<int64_t>& operandIndices);

// max(0, min(v, hi)) for a start index of type `type` (unsigned compares for u32).
ScalarValue clampIndex(DmaOp& op, const ScalarValue& v, int64_t hi, hlo::PrimitiveType type);

// sum of values[i] * scale[i] (scale in bytes); constants folded.
ScalarValue linearOffset(DmaOp& op, const std::vector<ScalarValue>& values,
                         const std::vector<int64_t>& scale);

// Per-op lowerings (one file each besides the static ones in DataMovement.cpp).
void lowerPad(DmaOp& op);
void lowerDynamicSlice(DmaOp& op);
void lowerDynamicUpdateSlice(DmaOp& op);
void lowerGather(DmaOp& op);
void lowerScatter(DmaOp& op);  // DmaScatter.cpp: whole slabs, add or replace

}  // namespace tpusim::lower
