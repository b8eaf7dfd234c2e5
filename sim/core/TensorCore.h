// One TensorCore as a SystemC module. Its single SC_THREAD runs bundles in a
// plain C++ loop with a local cycle count (temporal decoupling) and meets
// SystemC time only where it interacts with the rest of the chip: a DMA issue,
// a sync.wait / fence / halt / full DMA queue that its own bookkeeping cannot
// resolve, and every `quantum` cycles. A bundle that cannot issue does not
// step cycle by cycle: the core computes the cycle at which each blocking
// condition clears and jumps there, charging the cycles to the cause of the
// first blocking op in slot order. `referenceStepping` instead advances one
// cycle at a time and waits on SystemC every cycle: the naive model the fast
// loop must agree with (testbench/unit/core/CoreEquivalenceTest.cpp).
#pragma once

#include <systemc>

#include <array>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "isa/Program.h"
#include "isa/target/ChipConfig.h"
#include "sim/common/Vreg.h"
#include "sim/core/CoreStats.h"
#include "sim/core/CycleClock.h"
#include "sim/core/DecodedProgram.h"
#include "sim/core/DmaPort.h"
#include "sim/core/RemotePort.h"
#include "sim/core/SimFault.h"
#include "sim/mem/ChipMemory.h"
#include "sim/mxu/MxuUnit.h"
#include "sim/systemc/HostThreads.h"
#include "sim/trace/TraceRecorder.h"
#include "sim/vpu/MaskData.h"
#include "sim/xlu/XluSemantics.h"

namespace tpusim::sim {

struct CoreOptions {
  bool functional = true;          // false: timing only, no vector data
  bool strict = false;             // a schedulable hazard is a fault
  bool referenceStepping = false;  // per-cycle reference model
  int64_t maxCycles = int64_t(1) << 40;
  int64_t quantum = 10000;       // cycles the core may run ahead of SystemC time
  int chipIndex = 0;             // names the trace tracks (chipN/coreM)
  RemotePort* remote = nullptr;  // the multi-chip system, if any (chip.id, dma.remote, ...)
  // Runs stretches of bundles that need nothing of SystemC on host threads
  // (null: all on SystemC's thread). Not with a trace or reference stepping.
  HostThreads* host = nullptr;
};

class TensorCore : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(TensorCore);
  TensorCore(sc_core::sc_module_name name, int coreId, const target::ChipConfig& chip,
             const isa::Program& program, const DecodedProgram& decoded, mem::ChipMemory& memory,
             DmaPort& dma, std::vector<std::unique_ptr<MxuUnit>> mxus, TraceRecorder* trace,
             CoreOptions options);

  int id() const { return id_; }
  bool halted() const { return halted_; }
  bool finished() const { return halted_ || fault_.has_value(); }
  const std::optional<FaultInfo>& fault() const { return fault_; }
  const CoreStats& stats() const { return stats_; }
  int64_t cycle() const { return now_; }  // local cycle (progress reports)
  int64_t pc() const { return pc_; }
  MxuUnit& mxu(int i) { return *mxus_[i]; }
  int numMxus() const { return int(mxus_.size()); }
  // Notified when the core halts or faults.
  sc_core::sc_event& finishedEvent() { return finishedEvent_; }
  // Why the core is not finished (for a run that ended with no event left).
  std::string waitingFor() const { return waitingFor_; }

  // From a multi-chip system, in SystemC context (the cycle is SystemC
  // time's): a remote DMA this core sent has left (frees its queue entry and
  // signals its flag, as a local DMA completion does); a remote chip added
  // `amount` to flag `flag`. Both are visible to bundles from the next cycle.
  void deliverCompletion(const DmaCompletion& done);
  void deliverSignal(int flag, uint32_t amount);

  // Registers, for tests and the driver.
  uint32_t sreg(int i) const { return sregs_[i]; }
  const VregData& vreg(int i) const { return vregs_[i]; }
  uint32_t flag(int i) const { return flags_[i]; }

 private:
  // A condition that keeps an op from issuing: clears at `until` (kExternal:
  // when some DMA completes, known only to SystemC).
  struct Block {
    int64_t until;
    StallCause cause;
  };
  static constexpr int64_t kExternal = INT64_MAX;

  void thread();
  void runLoop();
  // One bundle from pc_: waits for its issue cycle, issues it, advances pc_
  // and now_. False once the core has halted.
  bool stepBundle();
  // Bundles up to the first that needs SystemC (a sync, a fault the SystemC
  // thread must raise) or the quantum; touches only this core's state, so it
  // may run on a host thread (HostThreads). Serial: the bundle at pc_ needs
  // the SystemC thread; Quantum: sync to now_ first.
  enum class LocalStop { Serial, Quantum };
  LocalStop runLocal();
  // The first blocking condition of the bundle at cycle c, in slot order, if any.
  bool firstBlock(const DecodedBundle& b, int64_t c, Block* block, const DecodedOp** op);
  // The unit part of the check (op.unitCheck): VMEM rows, MXU, XLU, EUP, DMA, sync.
  bool unitBlock(const DecodedOp& op, int64_t c, Block* block);
  int64_t loadRowsReady(const DecodedOp& op) const;
  int64_t bankConflictCycles(const DecodedBundle& b);
  // Executes every op of the bundle at cycle t; returns the next pc.
  int64_t execute(const DecodedBundle& b, int64_t t);
  void executeScalar(const DecodedOp& op, int64_t t, int64_t* nextPc);
  void executeVectorAlu(const DecodedOp& op, int64_t t);
  void executeLoad(const DecodedOp& op, int64_t t);
  void executeStore(const DecodedOp& op, int64_t t);
  void executeMxu(const DecodedOp& op, int64_t t);
  void executeXlu(const DecodedOp& op, int64_t t);
  void executeMisc(const DecodedOp& op, int64_t t);
  // The DMA descriptor at SMEM word `word` for dma / dma.remote `op`; faults if it runs past
  // SMEM or does not unpack.
  isa::DmaDescriptor readDmaDescriptor(const DecodedOp& op, uint64_t word);
  void commit();

  // SystemC interaction.
  void syncTo(int64_t cycle);
  void drainCompletions(int64_t cycle);  // applies completions visible at `cycle`
  // Returns the first cycle anything may have changed; `op` blocks (reports).
  int64_t waitForCompletion(int64_t c, const DecodedOp* op);
  bool haltReady(int64_t c, int64_t* until);
  int64_t popReadyAt(int mxu, int slot, int64_t c);

  // Faults.
  [[noreturn]] void fault(const std::string& kind, const std::string& message, const DecodedOp* op,
                          const std::string& unit, int64_t address = -1,
                          const std::string& slot = "");
  std::string opNameAt(int64_t pc) const;
  void chargeStall(StallCause cause, int64_t from, int64_t to, const DecodedOp* op);
  void finishRun(int64_t haltCycle);

  // The fault of `op`'s k-th VMEM row, `row`, out of range.
  [[noreturn]] void vmemRowFault(const DecodedOp& op, int k, int64_t row, bool store);
  // Inline: once per bundle (stepBundle) and after each mark.
  int currentOp() const {
    if (markOp_ >= 0 && size_t(markOp_) < program_.debugMap.size()) return markOp_;
    int32_t e = pc_ < int64_t(decoded_.debugEntry.size()) ? decoded_.debugEntry[pc_] : -1;
    return e >= 0 ? e : int(program_.debugMap.size());
  }

  int id_;
  const target::ChipConfig& chip_;
  const isa::Program& program_;
  const DecodedProgram& decoded_;
  mem::ChipMemory& memory_;
  DmaPort& dma_;
  std::vector<std::unique_ptr<MxuUnit>> mxus_;
  TraceRecorder* trace_;
  CoreOptions options_;
  CycleClock clock_;

  // Architectural state.
  std::array<uint32_t, isa::kNumScalarRegs> sregs_{};
  std::vector<VregData> vregs_;
  std::array<MaskData, isa::kNumMaskRegs> masks_{};
  std::vector<uint32_t> flags_;
  TransposeUnit transpose_;

  // Timing state.
  std::array<int64_t, kScoreboardSize> ready_{};
  int64_t eupFreeAt_ = 0;
  std::vector<int64_t> xluFreeAt_;
  int64_t transposeFreeAt_ = 0;
  std::vector<int64_t> rowReady_;  // per VMEM row: first cycle a load sees the last store
  int64_t branchUntil_ = 0;        // taken-branch penalty ends here
  int64_t now_ = 0;                // earliest cycle the next bundle may issue
  int64_t pc_ = 0;
  int64_t lastSync_ = 0;

  // Host-thread stretches (runLocal). A stretch goes to the pool when the last
  // one from the same bundle ran at least kMinHostJobBundles bundles: a short
  // one costs more to hand over than it saves.
  static constexpr uint16_t kMinHostJobBundles = 256;
  HostJob hostJob_;
  LocalStop localStop_ = LocalStop::Serial;
  bool local_ = false;              // in runLocal: SystemC must not be touched
  std::vector<uint16_t> localRun_;  // per bundle: bundles of the last stretch from it (saturating)
  int markOp_ = -1;                 // op set by `mark`, -1 = use the debug map
  int curOp_ = 0;                   // currentOp() of the bundle being executed

  // DMA bookkeeping (the core's own view, from issues and completion records).
  std::array<int, isa::kMaxDmaQueues> queueOutstanding_{};
  std::vector<int> flagOutstanding_;
  int dmaOutstanding_ = 0;
  std::vector<DmaCompletion> completions_;  // delivered, not yet applied
  struct RemoteSignal {
    int64_t cycle;
    int flag;
    uint32_t amount;
  };
  std::vector<RemoteSignal> signals_;  // from other chips, not yet applied
  sc_core::sc_event completionEvent_;
  std::array<int, isa::kMaxDmaQueues> traceDma_{};
  // Timing mode moves no DMA data. Values that depend on data a DMA would
  // have brought are tracked (taint) so that control flow depending on them is
  // reported (CoreStats::unmovedSmemBranches): SMEM word ranges [begin, end)
  // a DMA writes, SMEM words stored from such values, and scalar registers.
  std::vector<std::pair<uint64_t, uint64_t>> unmovedSmem_;
  std::unordered_set<uint64_t> taintedSmem_;
  std::array<bool, isa::kNumScalarRegs> sTaint_{};
  std::array<int, 4> taintedWrites_{};  // scalar registers this bundle writes with taint
  int numTaintedWrites_ = 0;

  // Writes of the bundle being executed, applied together at its end.
  struct ScalarWrite {
    int reg;
    uint32_t value;
  };
  std::array<ScalarWrite, 4> sWrites_;
  int numSWrites_ = 0;
  std::array<VregData, 12> vStage_;
  std::array<int, 12> vStageReg_{};
  int numVWrites_ = 0;
  std::array<MaskData, 4> mStage_{};
  std::array<int, 4> mStageReg_{};
  int numMWrites_ = 0;
  VregData scratch_{};
  MaskData scratchMask_{};
  const DecodedBundle* bundle_ = nullptr;

  bool halted_ = false;
  std::optional<FaultInfo> fault_;
  sc_core::sc_event finishedEvent_;
  std::string waitingFor_;
  CoreStats stats_;

  // Trace tracks (-1 without a trace).
  int traceOps_ = -1, traceVpu_ = -1, traceXlu_ = -1, traceSync_ = -1, traceStall_ = -1;
  std::array<int, isa::kMaxMxus> traceMxu_{};
  int traceOpIndex_ = -2;
  int64_t traceOpBegin_ = 0;
};

}  // namespace tpusim::sim
