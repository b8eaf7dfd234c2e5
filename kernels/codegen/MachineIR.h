// Machine code before scheduling and register allocation: ISA instructions
// (isa::Opcode) whose register operands are virtual registers, grouped into
// basic blocks. Lowering produces it; the scheduler packs each block into
// bundles; the register allocator then maps virtual to physical registers.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "isa/Isa.h"

namespace tpusim::kernels::codegen {

enum class RegClass : uint8_t { Scalar, Vector, Mask };
const char* regClassName(RegClass c);
// The register class an operand kind names (ScalarReg/VectorReg/MaskReg), if any.
bool regClassOf(isa::OperandKind k, RegClass* out);

struct MOperand {
  enum class Kind : uint8_t { None, VirtReg, PhysReg, Imm, Block };
  Kind kind = Kind::None;
  RegClass cls = RegClass::Scalar;
  int64_t value = 0;  // register number, immediate, or target block index

  static MOperand vreg(RegClass c, int id) { return {Kind::VirtReg, c, id}; }
  static MOperand preg(RegClass c, int n) { return {Kind::PhysReg, c, n}; }
  static MOperand imm(int64_t v) { return {Kind::Imm, RegClass::Scalar, v}; }
  static MOperand block(int b) { return {Kind::Block, RegClass::Scalar, b}; }
  bool isReg() const { return kind == Kind::VirtReg || kind == Kind::PhysReg; }
};

// Memory an instruction touches, for ordering: loads/stores of one region are
// kept in order (RAW/WAR/WAW through memory). Region -1 = none.
struct MemAccess {
  enum class Space : uint8_t { None, Vmem, Smem } space = Space::None;
  int region = -1;  // an id per buffer; accesses of different regions commute
  bool write = false;
  int64_t row = -1;  // first VMEM row when static (bank-conflict model), -1 unknown
  int rows = 0;
};

struct MInstr {
  isa::Opcode op = isa::Opcode::Nop;
  std::array<MOperand, isa::kMaxOperands> ops{};
  MemAccess mem;
  int debug = -1;  // index into the function's debug locations
  // The upper register of a 256-wide MXU row (isa/README.md, "MXU"): the
  // machine reads va and va+1 for a wpush/mm and writes vd and vd+1 for a pop.
  // Set (a Vector register) only on those ops when N = 256; the register
  // allocator gives it the physical register after the vector operand's.
  MOperand pairHi;
  // A chunk wait (Lowerer::awaitRows): a sync.wait for the first parts of an
  // input block, which orders only the accesses of that block's memory region
  // after it (and stays after the instructions emitted before it); -1 for
  // every other instruction.
  int waitRegion = -1;
  // Lowered from an llo::Op marked overlap: the scheduler's lookahead does
  // not count it (it floats into the MXU work that follows).
  bool overlap = false;
  // A `dma` that later vector loads and register-only ops may move above (a
  // grid step's next copy, issued after the step has waited for its own
  // block: Compile.cpp stepOutlastsCopies); waits and other `dma`s keep
  // their order around it.
  bool passable = false;
  // Misc-slot ops that synchronise with DMA (sync.wait, dma, fence, halt) are
  // barriers: nothing is moved across them (but chunk waits, above).
  bool barrier() const;
  const isa::OpcodeInfo& info() const { return isa::opcodeInfo(op); }
  // The operand `pairHi` extends (the instruction's vector register operand), or -1.
  int pairedOperand() const;
};

// Calls f(operand, access) for every register an instruction reads or writes:
// its register operands in table order, then `pairHi` (with its partner's access).
template <class Instr, class F>
void forEachReg(Instr& mi, F&& f) {
  const isa::OpcodeInfo& info = mi.info();
  for (int k = 0; k < info.numOperands; ++k)
    if (mi.ops[size_t(k)].isReg())
      f(mi.ops[size_t(k)], isa::operandInfo(info.operands[size_t(k)]).access);
  if (mi.pairHi.isReg()) {
    int k = mi.pairedOperand();
    f(mi.pairHi, isa::operandInfo(info.operands[size_t(k)]).access);
  }
}

struct MBlock {
  std::string label;
  std::vector<MInstr> instrs;  // a branch, if any, is the last instruction
  // MXU work may be in flight when the block starts and may stay in flight
  // when it ends: the kernel keeps matmul results in the MXU result slots
  // across blocks (LowerMatmul.cpp, "resident"). The scheduler then lets an mm
  // whose slot the block does not pop end the block 8 cycles after issue (its
  // LHS port) instead of after its result latency, and assumes on entry that
  // any MXU may have latched and mm'd in the cycle before (isa/README.md,
  // "MXU": a latch or transposed push waits N cycles, a pop of a slot 2N + 7).
  bool mxuCarry = false;
  // Only the entry half of mxuCarry: the block pops results an earlier block
  // left in the MXU (dsl::mxu_finish after a loop of mxu_starts) and drains
  // its own MXU work before it ends.
  bool mxuEntry = false;
  // A loop body that pops (mxu_finish) the results its previous iteration
  // left in the MXU (mxu_start after the finish of the same slot set): its
  // mms of such slots end the block after their LHS port, and the block is
  // long enough that a pop of iteration i + 1 comes 2N + 7 cycles after the
  // mm of iteration i. Its first iteration's pops read slots the block before
  // filled and drained (that block is not mxuCarry).
  bool mxuLoop = false;
};

struct DebugLoc {
  std::string op;  // kernel name
  std::string file;
  int line = 0;
};

struct MFunction {
  std::string name;
  std::vector<MBlock> blocks;
  std::array<int, 3> numVirtRegs{};  // per RegClass
  std::vector<DebugLoc> debugLocs;
  // (RegClass, virtual register) pairs the register allocator may not spill:
  // spill code's own temporaries, and registers a branch writes (loop counters).
  std::set<std::pair<int, int>> unspillable;
  // A matmul keeps its results in the MXU across blocks: every block is
  // scheduled and checked with MBlock::mxuCarry.
  bool mxuCarry = false;

  MOperand newReg(RegClass c) { return MOperand::vreg(c, numVirtRegs[static_cast<int>(c)]++); }
};

// Builds an instruction from an opcode and operands in table order; checks the
// count and that register operands have the right class.
MInstr makeInstr(isa::Opcode op, std::vector<MOperand> operands);

// Text form for tests and --dump ("mxu.mm.bf16 mxu0, %v3, a0").
std::string printInstr(const MInstr& mi);

}  // namespace tpusim::kernels::codegen
