// Builds the machine code of one data-movement fragment on the kernel code
// generator's machine IR (kernels/codegen/MachineIR.h): scalar code in virtual
// registers, basic blocks and counted loops, then the same list scheduler,
// register allocator, bundle assembler and hazard check as compiled kernels.
//
// What a fragment owns: SMEM words [smemBase, smemBase + smemWords) (DMA
// descriptor templates, loaded as one data segment, and staging words for
// run-time indices), sync flag q for DMA queue q, and VMEM from byte 0 for
// staging buffers (every kernel's VMEM is free between kernels). When the
// kernel before started a later kernel's first blocks across the fragment
// (placement.inFlight), the fragment's flags and VMEM start past that region
// when it is at the bottom (vmemBase), its VMEM ends below it when it is at
// the top (vmemEnd), and its queues avoid the region's. It starts with
// `mark 0` and ends with a `sync.wait` for every DMA it issued, so its flags
// are back at zero and its writes are in HBM when the next fragment starts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "isa/DmaDescriptor.h"
#include "isa/Program.h"
#include "kernels/codegen/Compile.h"
#include "kernels/codegen/MachineIR.h"
#include "kernels/codegen/RegAlloc.h"
#include "kernels/codegen/Scheduler.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::lower {

using kernels::codegen::MOperand;

// An address written into a descriptor at run time: a base known at compile
// time plus an unsigned 32-bit offset held in a register (no register: the
// base alone). `maxOffset` bounds the offset, so the fragment knows whether
// the high address word can change (a carry out of the low word).
struct RuntimeAddress {
  uint64_t base = 0;
  bool hasOffset = false;
  MOperand offset;
  int64_t maxOffset = 0;
};

// The debug-map / cost identity of the fragment.
struct FragmentInfo {
  std::string name;            // symbol, debug-map op name and cost name (the HLO instruction)
  std::string hloInstruction;  // the debug map's HLO field (op_name metadata, else the name)
  std::string sourceFile;
  uint32_t sourceLine = 0;
  uint64_t hbmRead = 0, hbmWritten = 0;
  uint64_t vmemRead = 0, vmemWritten = 0;  // bytes staged through VMEM by DMA

  // `bytes` read from HBM into VMEM and written back out (a staged move).
  void countStagedThroughVmem(uint64_t bytes) {
    hbmRead += bytes;
    hbmWritten += bytes;
    vmemRead += bytes;
    vmemWritten += bytes;
  }
};

class DmaFragment {
 public:
  DmaFragment(const kernels::codegen::TargetInfo& target,
              const kernels::codegen::CompileOptions& placement);

  const kernels::codegen::TargetInfo& target() const { return target_; }
  // The fragment's queues, numbered 0 .. queues()-1 (each with a flag of its own).
  int queues() const { return queues_; }
  // Also run on the queues of the prefetch region in flight (after the free
  // ones), when the fragment moves at least kBusyQueueShare times the region's
  // bytes: its copies on such a queue wait once for the region's (descriptors
  // of a queue complete in order), and every later one gains a queue's depth
  // of copies in flight (a gather of 65,536 rows on 3 of v6e's 4 queues:
  // 24 rows in flight). Call before the first copy.
  static constexpr int64_t kBusyQueueShare = 8;
  void shareBusyQueues(int64_t hbmBytes);
  // First VMEM byte the fragment may use; it uses at most half of VMEM from
  // there (the prefetch planner keeps a region in flight within the other
  // half), or up to vmemEnd() when it must (a scatter's table).
  int64_t vmemBase() const { return vmemBase_; }
  // One past the last VMEM byte free to the fragment: below a region in
  // flight at the top, else the end of VMEM.
  int64_t vmemEnd() const { return vmemEnd_; }

  // ---- scalar code (32-bit, wrapping)
  MOperand constant(int64_t value);  // sli
  MOperand binary(isa::Opcode op, MOperand a, MOperand b);
  MOperand addImm(MOperand a, int64_t imm);
  MOperand mulImm(MOperand a, int64_t imm);
  MOperand copy(MOperand a) { return addImm(a, 0); }
  MOperand select(MOperand cond, MOperand ifNonZero, MOperand ifZero);
  void emit(isa::Opcode op, std::vector<MOperand> operands);
  // An MXU op on a 256-wide row (isa/README.md, "MXU"): operand `k` is the
  // row's low register, `hi` its high one (MInstr::pairHi); neither spills.
  void emitPaired(isa::Opcode op, std::vector<MOperand> operands, int k, MOperand hi);

  // ---- SMEM
  // Reserves `words` words and returns the first (absolute word address).
  int64_t allocSmem(int64_t words);
  // The value word `word` (reserved by allocSmem) holds when the program is loaded.
  void initSmem(int64_t word, uint32_t value);
  // Reserves 16 words holding `d` when the program is loaded.
  int64_t addDescriptor(const isa::DmaDescriptor& d);
  // sld of SMEM[addr + imm] (addr a register holding a word address).
  MOperand loadSmem(MOperand addr, int64_t imm);

  // ---- DMA
  // Issues a descriptor that never changes, on the next queue (round robin).
  void dmaStatic(const isa::DmaDescriptor& d);
  // The next queue of the round robin (for dmaAt).
  int takeQueue();
  // Issues a descriptor that never changes on `queue` (straight-line code only).
  void dmaOn(const isa::DmaDescriptor& d, int queue);
  // Issues `count` 4-byte reads of `hbmAddr` into one SMEM scratch word on
  // `queue`: stand-ins for the writes before the first, so a buffer's wait
  // for its previous write finds a completion the first time too.
  void dmaStandIns(uint64_t hbmAddr, int count, int queue);
  // sst of `value` into word `index` of the descriptor template at `word`
  // (before the dmaAt that issues it).
  void storeDescriptorWord(int64_t word, int index, MOperand value);
  // Waits for the oldest DMA of `queue` not yet waited for (descriptors of a
  // queue complete in order, each adding 1 to the queue's flag). Inside a
  // loop it runs once per iteration.
  void waitOldest(int queue);
  // Writes the run-time source/destination addresses into the template at
  // `word` (only the words that change) and issues it on `queue`.
  void dmaAt(int64_t word, const RuntimeAddress& src, const RuntimeAddress& dst, int queue);
  // While deferred, dmaAt writes the descriptor's words but holds its `dma`
  // until issueDeferred(): a `dma` is a scheduling barrier, so the address
  // work of several run-time descriptors (a gather's rows) overlaps only when
  // their issues come after all of it.
  void deferDmas() { deferring_ = true; }
  void issueDeferred();
  // sync.wait on every queue for all DMAs issued so far (inside loops: times
  // the trip counts), so flags are back at zero.
  void waitAll();

  // ---- control flow
  struct LoopAxis {
    int64_t count = 1;
    std::vector<int64_t> steps;  // one per cursor (signed, added after each point)
  };
  // Runs `body` once per point of `axes` (outer to inner, counts >= 1).
  // Cursors start as copies of `init` and advance by each axis's steps. The
  // innermost axis is unrolled `unroll` times (its count must be a multiple),
  // `copy` (0 .. unroll-1) tells the body which unrolled copy it emits.
  void loopNest(const std::vector<LoopAxis>& axes, const std::vector<MOperand>& init, int unroll,
                const std::function<void(const std::vector<MOperand>& cursors, int copy)>& body);

  // ---- hand-scheduled blocks (the list scheduler does not model the
  // transpose unit's push/pop order and occupancy, so that code is placed
  // at explicit cycles of its own block)
  // Starts a loop body block whose instructions are placed with emitAt.
  int beginManualLoop();
  void emitAt(int cycle, isa::Opcode op, std::vector<MOperand> operands,
              kernels::codegen::MemAccess mem = {});
  // Ends the manual block with `loop count` at `cycle` (the block's last
  // bundle) back to its start, and continues in a new scheduled block.
  void endManualLoop(MOperand count, int cycle, int64_t trips);
  MOperand newScalar();
  MOperand newVector();

  // Schedules, allocates registers, assembles at placement.firstBundle and
  // checks hazards; returns the linkable piece.
  kernels::codegen::CompiledKernel finish(const FragmentInfo& info);

 private:
  kernels::codegen::MBlock& block() { return fn_.blocks.back(); }
  int newBlock(const std::string& label);
  void emitInstr(kernels::codegen::MInstr mi);
  void writeAddress(MOperand templ, int wordIndex, const RuntimeAddress& a);

  const kernels::codegen::TargetInfo& target_;
  kernels::codegen::CompileOptions placement_;
  int queues_ = 1;
  // The fragment's queue q runs on DMA queue queueMap_[q] with flag flagBase_ + q.
  std::vector<int> queueMap_;
  int flagBase_ = 0;
  int64_t vmemBase_ = 0, vmemEnd_ = 0;
  int flagOf(int q) const { return flagBase_ + q; }
  int queueOf(int q) const { return queueMap_[size_t(q)]; }
  kernels::codegen::MFunction fn_;
  std::vector<kernels::codegen::LoopRange> loops_;
  std::vector<uint32_t> smemImage_;  // words from placement.smemBase
  std::vector<int64_t> pending_;     // DMAs per queue not yet waited for
  bool deferring_ = false;
  std::vector<std::pair<MOperand, int>> deferred_;  // (template, queue) held by deferDmas
  int64_t multiplier_ = 1;                          // trip count of the enclosing loops
  int nextQueue_ = 0;
  // Hand-made schedules by block index (the others go to the list scheduler).
  std::vector<std::pair<int, kernels::codegen::BlockSchedule>> manual_;
  bool inManual_ = false;
};

}  // namespace tpusim::lower
