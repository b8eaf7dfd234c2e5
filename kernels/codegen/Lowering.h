// Lowering of kernel-IR functions to machine code (virtual registers, basic
// blocks). The grid pipeline (Pipeline.cpp) binds the body's refs and grid
// indices and calls lowerBody once; matmuls (LowerMatmul.cpp) and DMAs
// (LowerDma.cpp) have their own files.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "isa/Program.h"
#include "kernels/codegen/MachineIR.h"
#include "kernels/codegen/MemoryPlan.h"
#include "kernels/codegen/RegAlloc.h"
#include "kernels/llo/Ir.h"

namespace tpusim::kernels::codegen {

// Where a ref's data is: VMEM row / SMEM word / HBM byte address of its
// element 0, known at compile time or a scalar register plus a constant.
struct RefPlace {
  llo::Type type;
  bool dynamic = false;
  int64_t base = 0;      // the address when !dynamic; added to baseReg when dynamic
  MOperand baseReg;      // when dynamic (non-negative: an address)
  int region = -1;       // memory-ordering region
  int flagBase = -1;     // semaphore refs: first sync flag
  int64_t pairRows = 0;  // S: an s8 block in the DMA's paired (s8x2) layout (PairPack.h)
};

// The bytes a DMA address can point into: an HBM array's [begin, end). VMEM
// and SMEM addresses (and an empty span) fit the low 32 bits.
struct AddressSpan {
  int64_t begin = 0, end = 0;
  // Whether [begin, end) crosses a 4 GiB boundary (the high word varies).
  bool crossesSegment() const { return end > begin && (begin >> 32) != ((end - 1) >> 32); }
};

// A scalar: a compile-time constant `c`, or a register plus a constant
// (`reg + c`, 32-bit wrapping arithmetic). The constant stays apart so that a
// memory op can fold it into its immediate offset and `x + 8`, `x + 16`, ...
// share x's register; Lowerer::reg() materializes the sum where an
// instruction needs a plain register.
struct ScalarVal {
  bool isConst = true;
  int64_t c = 0;  // the value, or the offset added to `reg` (a signed 32-bit value)
  MOperand reg;   // when !isConst
  // When !isConst: `reg` is known to be non-negative (built from addresses,
  // loop indices and grid indices; 32-bit overflow of index arithmetic is
  // the program's bug either way). A vld/vst/sld/sst adds its immediate to
  // the register without wrapping (isa/README.md), so a positive offset may
  // be folded into the immediate only then.
  bool nonNeg = false;

  static ScalarVal constant(int64_t v) { return ScalarVal{true, v, {}, false}; }
  static ScalarVal inReg(MOperand r, bool nonNeg = false) { return ScalarVal{false, 0, r, nonNeg}; }
};

// The address of a ref's element 0 as a scalar.
inline ScalarVal placeBase(const RefPlace& p) {
  return p.dynamic ? ScalarVal{false, p.base, p.baseReg, true} : ScalarVal::constant(p.base);
}

class Lowerer {
 public:
  Lowerer(MFunction& fn, MemoryPlan& mem, const TargetInfo& t, std::vector<LoopRange>& loops,
          std::vector<isa::DataSegment>& data);

  // --- blocks
  int newBlock(const std::string& label);
  void setBlock(int b) { cur_ = b; }
  int currentBlock() const { return cur_; }
  void emit(MInstr mi);
  void emit(isa::Opcode op, std::vector<MOperand> ops) { emit(makeInstr(op, std::move(ops))); }
  void setDebug(int d) { debug_ = d; }
  int debugFor(const llo::SourceLoc& loc, const std::string& op);

  // --- scalars
  // A register holding `v`: a constant is loaded (one `sli` per call, as
  // before); `reg + c` is added once per block (value-numbered, see pure()).
  MOperand reg(const ScalarVal& v);
  MOperand constReg(int64_t c);
  // dst = v (dst a register written in place: a loop index, counter or carry).
  void copyScalar(MOperand dst, const ScalarVal& v);
  ScalarVal scalarOp(llo::ScalarBin k, const ScalarVal& a, const ScalarVal& b);
  ScalarVal addImm(const ScalarVal& a, int64_t c) {
    return scalarOp(llo::ScalarBin::Add, a, ScalarVal{true, c, {}});
  }
  ScalarVal mulImm(const ScalarVal& a, int64_t c) {
    return scalarOp(llo::ScalarBin::Mul, a, ScalarVal{true, c, {}});
  }
  ScalarVal add(const ScalarVal& a, const ScalarVal& b) {
    return scalarOp(llo::ScalarBin::Add, a, b);
  }
  // A scalar as base register + 16-bit immediate (for vld/vst/sld/sst): the
  // offset of `reg + c` goes into the immediate when it fits and the address
  // cannot wrap (ScalarVal::nonNeg), else the sum is materialized.
  void baseAndOffset(const ScalarVal& addr, MOperand* base, int64_t* offset);
  // A pure scalar ALU op (no memory, no side effects) into a fresh register,
  // or the register of the same op emitted earlier in the current block when
  // none of its operands has been written since (local value numbering).
  MOperand pure(isa::Opcode op, std::vector<MOperand> sources);

  // --- values of the function being lowered
  void bindRef(const llo::Value* v, RefPlace p) { refs_[v] = std::move(p); }
  void bindScalar(const llo::Value* v, ScalarVal s) { scalars_[v] = s; }
  void setGrid(std::vector<ScalarVal> ids, std::vector<int64_t> grid) {
    ids_ = std::move(ids);
    grid_ = std::move(grid);
  }
  // Scalar register `r` holds a value in [lo, hi] in the code lowered until
  // clearRanges (a grid index in a peeled grid loop's middle steps):
  // comparisons that range decides fold to constants.
  void setRange(MOperand r, int64_t lo, int64_t hi) { ranges_[r.value] = {lo, hi}; }
  void clearRanges() { ranges_.clear(); }
  const RefPlace& place(const llo::Value* v) const;
  ScalarVal scalar(const llo::Value* v) const;
  MOperand tile(const llo::Value* v) const;
  int newRegion() { return nextRegion_++; }

  // Lowers the ops of a block (and nested regions) at the current position.
  void lowerOps(const llo::Block& b, const std::string& kernelName);
  void lowerOp(const llo::Op& op);

  // Input blocks that arrive in parts (chunked arrival, CopyPlan.h): the
  // pipeline registers the block's ref before the body instead of waiting for
  // the whole block; the body waits for the parts it reads before their first
  // read (awaitRows, from the matmul lowering), for all of a block before a
  // vector load or store of its region, at the end of each branch of a
  // two-sided `if` (lowerIf), and for all that is left before any other op that
  // touches memory or branches (not a loop or `if` that reads none of them:
  // awaitsArrivals), and at its end (awaitArrivals), so every wait runs once
  // per step whatever the body does.
  struct Arrival {
    int flag = 0;
    int region = -1;                   // the block ref's memory region
    std::vector<int64_t> rowEnd;       // part c holds rows [rowEnd[c - 1], rowEnd[c])
    std::vector<int64_t> descriptors;  // copies of part c (each adds 1 to the flag)
    bool byEntry = false;              // rowEnd counts leading entries (CopyPlan.h)
    size_t done = 0;                   // parts waited for so far
  };
  void expectArrival(const llo::Value* ref, Arrival a) { arrivals_[ref] = std::move(a); }
  // Waits for the parts holding rows [0, rowEnd) of the block (its first
  // dimension), if `ref` is one that arrives in parts.
  void awaitRows(const llo::Value* ref, int64_t rowEnd);
  void awaitArrivals();
  // Whether `op` (a loop or an `if`) may read or write a block still arriving
  // (a ref of its region or one not bound yet): one that cannot waits for
  // none, so a one-sided `if` or a loop before the first reads (the causal
  // init) does not wait for every part.
  bool awaitsArrivals(const llo::Op& op) const;
  // Before a vector load or store: waits for the parts it reads of a block
  // still arriving in its memory region (all of it unless a load at a
  // constant row of the block's ref).
  void awaitLoadRows(const llo::Op& op);
  // Waits for what is left of the blocks in memory region `region`.
  void awaitRegion(int region);

  // VMEM row address of (lead..., row, col) in a ref; `col` a multiple of 128.
  ScalarVal vmemRow(const RefPlace& r, const std::vector<ScalarVal>& idx);

  // --- parts in their own files
  void lowerMatmul(const llo::Op& op);
  void lowerMxuLatch(const llo::Op& op);  // LowerMatmulLatched.cpp
  void lowerMatmulLatched(const llo::Op& op);
  void lowerMxuStart(const llo::Op& op);
  void lowerMxuFinish(const llo::Op& op);
  void lowerDma(const llo::Op& op);  // also RemoteDmaStart
  void lowerSemaphore(const llo::Op& op);
  int semaphoreFlag(const llo::Op& op, const llo::ViewRange& sem);
  // A DMA descriptor template in SMEM (static fields); returns its word address.
  // Descriptor addresses are 64-bit and scalar registers 32-bit: the run-time
  // address computation gives the low word (storeDescriptorAddress), and the
  // template holds the high word of an address in `src` / `dst` unless the
  // span crosses a 4 GiB boundary (then it is computed at run time).
  int64_t descriptorTemplate(isa::DmaDescriptor d, const std::string& what, AddressSpan src = {},
                             AddressSpan dst = {});
  // A complete descriptor (every address final) in an SMEM data segment: its
  // first word. Nothing is written into it at run time.
  int64_t fixedDescriptor(const isa::DmaDescriptor& d, const std::string& what);
  // Stores `addr` (a byte address in `span`, computed modulo 2^32) into word
  // `word` (1: source, 3: destination) of the template at SMEM word `templ`,
  // and the high word when `span` crosses a 4 GiB boundary.
  void storeDescriptorAddress(MOperand templ, int word, const ScalarVal& addr, AddressSpan span,
                              const MemAccess& mem);

  MFunction& fn() { return fn_; }
  const TargetInfo& target() const { return t_; }
  MemoryPlan& memory() { return mem_; }
  std::vector<LoopRange>& loops() { return loops_; }
  std::vector<isa::DataSegment>& data() { return data_; }
  // FLOPs of matmuls lowered so far (per execution of the body).
  double bodyFlops = 0;
  // A new copy of the body's code starts (a peeled grid step): a resident
  // destination's dot counts its FLOPs once per copy, not once per kernel.
  void beginBodyCopy() { flopsCounted_.clear(); }

 private:
  MFunction& fn_;
  MemoryPlan& mem_;
  const TargetInfo& t_;
  std::vector<LoopRange>& loops_;
  std::vector<isa::DataSegment>& data_;
  int cur_ = 0;
  int debug_ = -1;
  bool overlap_ = false;  // the op being lowered is llo::Op::overlap
  int nextRegion_ = 0;
  std::map<const llo::Value*, RefPlace> refs_;
  std::map<const llo::Value*, ScalarVal> scalars_;
  std::map<const llo::Value*, MOperand> tiles_;  // vregs and masks
  std::map<int, MOperand> zeroReg_;              // per block: a register holding 0
  // pure(): results of the current block's pure scalar ops by (opcode,
  // sources), and every register those entries name (a write to one of them
  // drops the table).
  int pureBlock_ = -1;
  std::map<std::vector<int64_t>, MOperand> pure_;
  std::set<int64_t> pureRegs_;
  std::vector<ScalarVal> ids_;
  std::vector<int64_t> grid_;
  std::map<int64_t, std::pair<int64_t, int64_t>> ranges_;  // setRange, by virtual register
  // The [lo, hi] a scalar lies in, when known (a constant, or a register with
  // a range plus its offset).
  std::optional<std::pair<int64_t, int64_t>> rangeOf(const ScalarVal& v) const;
  std::string kernel_;
  // Matmuls share the MXUs across ops: the next op's first work item goes to
  // the MXU after the previous op's last, and each MXU's result slots are
  // handed out as a ring of windows (lowerMatmul), so consecutive small
  // matmuls (one per attention head) overlap instead of each filling and
  // draining the MXUs alone.
  int64_t nextMxu_ = 0;
  std::vector<int64_t> nextSlot_;  // per MXU
  // Transposed weight tiles shared between the MXUs' transposed pushes and
  // the transpose unit (lowerMatmul): the cycles each MXU's weight port and
  // the unit have been given in basic block `balanceBlock_`.
  int balanceBlock_ = -1;
  std::vector<int64_t> weightPortCycles_;  // per MXU
  int64_t transposeUnitCycles_ = 0;
  // Resident matmuls (results kept in the MXU across grid steps): per
  // destination (region, row, M, N, K), each item's (MXU, first slot).
  std::map<std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>> residentItems_;
  // Resident destinations whose dot's FLOPs this copy of the body counted:
  // its exclusive first / middle / last K variants are one dot per step.
  std::set<std::vector<int64_t>> flopsCounted_;
  // In value order, not address order: awaitArrivals emits the waits in this
  // order, and an order by address changed the program from run to run.
  struct ByValueId {
    bool operator()(const llo::Value* a, const llo::Value* b) const {
      return a->id != b->id ? a->id < b->id : a < b;
    }
  };
  std::map<const llo::Value*, Arrival, ByValueId> arrivals_;

  // The (K, N) of the weights mxu_latch left on the MXUs ({0, 0}: none, or
  // another matmul pushed its own since), in program order.
  std::pair<int64_t, int64_t> latched_{0, 0};
  void checkLatchable(const llo::Op& op, int64_t K, int64_t N) const;
  // checkLatchable, and a K x N weight set latched by the last mxu_latch.
  void checkLatched(const llo::Op& op, int64_t K, int64_t N) const;
  MOperand loadTile(const RefPlace& p, const ScalarVal& origin, int64_t off, int64_t sublanes);
  ScalarVal viewOrigin(const llo::ViewRange& v);
  void popSumStore(const RefPlace& dstP, const ScalarVal& dst0, int64_t M, int64_t N,
                   int64_t chunks, int64_t rt, const std::vector<int64_t>& slot0, int64_t i,
                   bool accumulate);
  std::vector<int64_t> slotSet(const llo::Op& op, int64_t M, int64_t chunks);
  // Per slot set of split latched matmuls: the block of its last mxu_start / mxu_finish.
  std::map<int64_t, int> startedIn_, finishedIn_;

  void lowerFor(const llo::Op& op);
  MOperand carryReg(const llo::Value* v);
  void copyInto(MOperand dst, const llo::Value* v);
  void bindCarry(const llo::Value* v, MOperand r);
  void lowerIf(const llo::Op& op);
  void lowerVLoad(const llo::Op& op);
  void lowerVStore(const llo::Op& op);
  void lowerTileOp(const llo::Op& op);
  ScalarVal smemWord(const RefPlace& r, const std::vector<ScalarVal>& idx);
};

}  // namespace tpusim::kernels::codegen
