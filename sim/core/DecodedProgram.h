// The program decoded once, before the run, into the form the issue loop
// wants: per bundle, its non-empty ops in slot order with their operands split
// by class, the registers each reads and writes (one flat scoreboard index
// space) and the latency from the preset. Anything the preset forbids (a
// register, flag, MXU, slot instance the chip does not have, two writes to
// one register) is recorded on the bundle and becomes a fault when, and only
// when, the bundle is reached.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/Program.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::sim {

// Flat register numbering for the scoreboard: s0..s31, then v0..v63, then m0..m7.
constexpr int kScoreboardScalarBase = 0;
constexpr int kScoreboardVectorBase = isa::kNumScalarRegs;
constexpr int kScoreboardMaskBase = kScoreboardVectorBase + isa::kMaxVectorRegs;
constexpr int kScoreboardSize = kScoreboardMaskBase + isa::kNumMaskRegs;

struct DecodedOp {
  isa::Opcode op = isa::Opcode::Nop;
  isa::SlotKind slot = isa::SlotKind::Misc;
  uint8_t slotInstance = 0;  // index into isa::kSlotLayout
  uint8_t slotIndex = 0;     // index among the slots of its kind
  int32_t latency = 0;       // cycles from issue until its result may be read
  // Operands by class, in table order.
  uint8_t numV = 0, numS = 0, numM = 0;
  uint8_t vsrc[3] = {};  // vector sources
  uint8_t ssrc[3] = {};  // scalar sources
  uint8_t msrc[2] = {};  // mask sources
  int16_t dst = -1;      // register written, as a scoreboard index (-1: none)
  int64_t imm[3] = {};   // immediates (Simm/Uimm/Imm32/Target) in order
  int64_t unit = 0;      // MXU, flag, or queue index (first unit-like operand)
  int64_t unit2 = 0;     // acc slot, or queue index for dma
  int64_t unit3 = 0;     // the third unit-like operand (dma.remote's queue)
  // Scoreboard entries read (sources) and checked for WAW (destinations).
  uint8_t numReads = 0;
  uint8_t reads[4] = {};
  // A 256-wide MXU: the second register mxu.pop writes (WAW) or a push reads,
  // as a scoreboard index (-1: none).
  int16_t wideRead = -1;
  // Whether the issue check asks a unit beyond the registers (VMEM rows, an
  // MXU, the XLU, the EUP, DMA queues and flags); false: registers only.
  bool unitCheck = false;
  // vld / vst / vst.m: the VMEM rows touched, relative to the base register,
  // in sublane order (rowOffsets), their sublanes, and the lowest and highest
  // offset, so that the issue loop neither re-derives them per sublane nor
  // checks bounds per row when every row is in range.
  uint8_t numRows = 0;
  uint8_t rowSublane[isa::kSublanes] = {};
  int64_t rowLo = 0, rowHi = 0;
  int64_t rowOff[isa::kSublanes] = {};
};

struct DecodedBundle {
  uint32_t firstOp = 0;  // index into DecodedProgram::ops
  uint8_t numOps = 0;
  bool hasBranch = false;
  bool needsSync = false;  // has a DMA, sync.wait/read/set, fence or halt: shared state
  uint8_t numLoads = 0, numStores = 0;
  // When the loads share one base register and the stores share one (always
  // so with at most one load and one store), the bank-conflict cycles do not
  // depend on the base registers' values (a shift moves every row of the set
  // to another bank alike), so they are computed here once.
  bool conflictStatic = true;
  int32_t staticConflict = 0;
  // The issue record, so that an issue without a stall walks no op: every
  // scoreboard entry the ops read or write (sources, destinations, a wide
  // MXU's second register; each once) at DecodedProgram::regs[firstReg..],
  // the ops that ask a unit (bit i: op i has unitCheck), and the scoreboard
  // writes at issue in slot order at DecodedProgram::writes[firstWrite..].
  uint32_t firstReg = 0, firstWrite = 0;
  uint8_t numRegs = 0, numWrites = 0;
  uint32_t unitOps = 0;
  std::string invalid;  // non-empty: the bundle faults when reached (the reason)
  std::string invalidSlot;
};

// A scoreboard entry an issued bundle sets to issue + latency.
struct ScoreboardWrite {
  uint8_t reg;
  int32_t latency;
};

struct DecodedProgram {
  // The distinct decoded bundles: a shared kernel body's (isa/SharedCode.h)
  // once for all its instances, only an instance's patched bundles apart.
  std::vector<DecodedBundle> bundles;
  std::vector<DecodedOp> ops;
  std::vector<uint8_t> regs;            // DecodedBundle::firstReg
  std::vector<ScoreboardWrite> writes;  // DecodedBundle::firstWrite
  // Per bundle of the program (pc): its decoded bundle in `bundles`.
  std::vector<uint32_t> index;
  // Per bundle: index into Program::debugMap of the entry holding it, or -1.
  std::vector<int32_t> debugEntry;

  int64_t size() const { return int64_t(index.size()); }
  const DecodedBundle& at(int64_t pc) const { return bundles[index[size_t(pc)]]; }
};

DecodedProgram decodeProgram(const isa::Program& program, const target::ChipConfig& chip);

// Extra cycles for rows read (or written) together: max over banks of k - 1,
// where k counts the distinct rows in the bank. Sorts `rows` in place.
int64_t bankConflictExtra(int64_t* rows, int n, int64_t banks);
// The rows (relative to the base register) a vld/vst/vst.m op touches.
int rowOffsets(const DecodedOp& op, int64_t* offsets);

// "valu1", "misc0": the name of a slot instance.
std::string slotName(int slotInstance);

}  // namespace tpusim::sim
