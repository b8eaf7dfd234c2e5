#include "sim/core/TensorCore.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace tpusim::sim {

using isa::Opcode;

TensorCore::TensorCore(sc_core::sc_module_name name, int coreId, const target::ChipConfig& chip,
                       const isa::Program& program, const DecodedProgram& decoded,
                       mem::ChipMemory& memory, DmaPort& dma,
                       std::vector<std::unique_ptr<MxuUnit>> mxus, TraceRecorder* trace,
                       CoreOptions options)
    : sc_core::sc_module(name),
      id_(coreId),
      chip_(chip),
      program_(program),
      decoded_(decoded),
      memory_(memory),
      dma_(dma),
      mxus_(std::move(mxus)),
      trace_(trace),
      options_(options),
      clock_(chip.core.clock_hz),
      vregs_(size_t(chip.core.vector_regs)),
      flags_(size_t(chip.core.sync_flags), 0),
      transpose_(options.functional),
      xluFreeAt_(size_t(chip.xlu.count), 0),
      rowReady_(size_t(chip.vmem.rows()), 0),
      flagOutstanding_(size_t(chip.core.sync_flags), 0) {
  if (options_.host) localRun_.assign(size_t(decoded.size()), UINT16_MAX);
  hostJob_.work = [this] { localStop_ = runLocal(); };
  for (VregData& v : vregs_) v.fill(0);
  stats_.ops.resize(program.debugMap.size() + 1);
  dma_.onComplete(id_, [this](const DmaCompletion& done) { deliverCompletion(done); });
  if (trace_) {
    std::string proc = fmt::format("chip{}/core{}", options.chipIndex, id_);
    traceOps_ = trace_->track(proc, "ops");
    traceStall_ = trace_->track(proc, "stalls");
    traceSync_ = trace_->track(proc, "sync waits");
    traceVpu_ = trace_->track(proc, "vpu");
    traceXlu_ = trace_->track(proc, "xlu");
    for (int i = 0; i < numMxus(); ++i) traceMxu_[i] = trace_->track(proc, fmt::format("mxu{}", i));
    for (int q = 0; q < chip.dma.queues; ++q)
      traceDma_[q] = trace_->track(proc, fmt::format("dma q{}", q));
  }
  SC_THREAD(thread);
}

void TensorCore::deliverCompletion(const DmaCompletion& done) {
  DmaCompletion c = done;
  // The cycle is taken from SystemC time here, so every DMA model reports alike.
  c.completeCycle = clock_.cycleAtOrAfter(sc_core::sc_time_stamp());
  completions_.push_back(c);
  completionEvent_.notify(sc_core::SC_ZERO_TIME);
}

void TensorCore::deliverSignal(int flag, uint32_t amount) {
  signals_.push_back({clock_.cycleAtOrAfter(sc_core::sc_time_stamp()), flag, amount});
  completionEvent_.notify(sc_core::SC_ZERO_TIME);
}

void TensorCore::thread() {
  try {
    runLoop();
  } catch (const SimFault& f) {
    fault_ = f.info();
    if (trace_) trace_->instant(traceOps_, "fault: " + f.info().kind, f.info().cycle);
    waitingFor_.clear();
    finishedEvent_.notify(sc_core::SC_ZERO_TIME);
  }
}

std::string TensorCore::opNameAt(int64_t pc) const {
  if (markOp_ >= 0 && size_t(markOp_) < program_.debugMap.size())
    return program_.debugMap[markOp_].opName;
  if (pc >= 0 && pc < int64_t(decoded_.debugEntry.size()) && decoded_.debugEntry[pc] >= 0)
    return program_.debugMap[decoded_.debugEntry[pc]].opName;
  return "";
}

void TensorCore::fault(const std::string& kind, const std::string& message, const DecodedOp* op,
                       const std::string& unit, int64_t address, const std::string& slot) {
  FaultInfo f;
  f.kind = kind;
  f.message = message;
  f.cycle = now_;
  f.core = id_;
  f.bundle = pc_;
  if (op) {
    f.slot = slotName(op->slotInstance);
    f.op = std::string(isa::opcodeInfo(op->op).mnemonic);
  }
  if (!slot.empty()) f.slot = slot;
  f.opName = opNameAt(pc_);
  f.unit = unit;
  f.address = address;
  throw SimFault(std::move(f));
}

void TensorCore::chargeStall(StallCause cause, int64_t from, int64_t to, const DecodedOp* op) {
  if (to <= from) return;
  if (options_.strict && isStrictHazard(cause)) {
    now_ = from;
    fault("strict-hazard",
          fmt::format("--strict: bundle {} stalls {} cycle(s) on {} ({} {}); the schedule should "
                      "have placed it later",
                      pc_, to - from, stallCauseName(cause),
                      op ? slotName(op->slotInstance) : "bundle",
                      op ? isa::opcodeInfo(op->op).mnemonic : "bank conflict"),
          op, op ? std::string(isa::slotInfo(op->slot).name) : "");
  }
  stats_.stalls[int(cause)] += to - from;
  stats_.ops[currentOp()].stalls[int(cause)] += to - from;
  if (trace_) {
    trace_->interval(cause == StallCause::SyncWait ? traceSync_ : traceStall_,
                     stallCauseName(cause), from, to);
  }
}

// ---- SystemC interaction -------------------------------------------------------

void TensorCore::syncTo(int64_t cycle) {
  if (local_) throw std::logic_error("TensorCore: a SystemC wait in a host-thread stretch");
  sc_core::sc_time target = clock_.timeOf(cycle);
  if (target > sc_core::sc_time_stamp()) wait(target - sc_core::sc_time_stamp());
  lastSync_ = cycle;
}

void TensorCore::drainCompletions(int64_t cycle) {
  size_t kept = 0;
  for (size_t i = 0; i < completions_.size(); ++i) {
    const DmaCompletion& d = completions_[i];
    if (d.completeCycle >= cycle) {
      completions_[kept++] = d;
      continue;
    }
    flags_[d.flag] += 1;
    --queueOutstanding_[d.queue];
    --flagOutstanding_[d.flag];
    --dmaOutstanding_;
    if (trace_) {
      trace_->interval(traceDma_[d.queue], "dma", d.issueCycle, d.completeCycle + 1);
      // From the issue to where the completion lands: the sync waits track,
      // where a wait on this flag ends.
      trace_->flow(traceDma_[d.queue], d.issueCycle, traceSync_, d.completeCycle,
                   fmt::format("dma -> f{}", d.flag));
    }
  }
  completions_.resize(kept);
  kept = 0;
  for (size_t i = 0; i < signals_.size(); ++i) {
    if (signals_[i].cycle >= cycle) {
      signals_[kept++] = signals_[i];
      continue;
    }
    flags_[size_t(signals_[i].flag)] += signals_[i].amount;
  }
  signals_.resize(kept);
}

int64_t TensorCore::waitForCompletion(int64_t c, const DecodedOp* op) {
  // Wait no later than the cycle past --max-cycles: a long transfer must not
  // be simulated to its end before the limit is reported.
  const int64_t limit = options_.maxCycles + 1;
  while (completions_.empty() && signals_.empty()) {
    if (op && op->op == Opcode::SyncWait)
      waitingFor_ = fmt::format(
          "core {} waits at bundle {} (stalled since cycle {}; checked at cycle {}) in sync.wait "
          "f{}, {}: f{} is {} with {} local DMA(s) outstanding that signal it",
          id_, pc_, now_, c, op->unit, op->imm[0], op->unit, flags_[size_t(op->unit)],
          flagOutstanding_[size_t(op->unit)]);
    else
      waitingFor_ = fmt::format(
          "core {} waits at bundle {} (stalled since cycle {}; checked at cycle {}) for a DMA "
          "completion",
          id_, pc_, now_, c);
    if (dmaOutstanding_ == 0) {
      wait(completionEvent_);  // nothing local in flight: SystemC runs dry if nothing else wakes it
      continue;
    }
    sc_core::sc_time deadline = clock_.timeOf(limit);
    if (deadline <= sc_core::sc_time_stamp()) {
      waitingFor_.clear();
      return std::max(c + 1, limit + 1);
    }
    wait(deadline - sc_core::sc_time_stamp(), completionEvent_);
  }
  waitingFor_.clear();
  int64_t first = INT64_MAX;
  for (const DmaCompletion& d : completions_) first = std::min(first, d.completeCycle);
  for (const RemoteSignal& s : signals_) first = std::min(first, s.cycle);
  return std::max(c + 1, first + 1);
}

// ---- Hazards ---------------------------------------------------------------------

// The cycle from which a vld sees the last store to each of its VMEM rows.
inline int64_t TensorCore::loadRowsReady(const DecodedOp& op) const {
  const int64_t base = int64_t(sregs_[op.ssrc[0]]), numRows = int64_t(rowReady_.size());
  int64_t rows = 0;
  if (base + op.rowLo >= 0 && base + op.rowHi < numRows) {
    // Every row in range (the decoded bounds): no check per row; two chains
    // (a vld has 8 rows at most, often all 8).
    const int64_t* ready = rowReady_.data() + base;
    int64_t other = 0;
    int k = 0;
    for (; k + 2 <= op.numRows; k += 2) {
      rows = std::max(rows, ready[op.rowOff[k]]);
      other = std::max(other, ready[op.rowOff[k + 1]]);
    }
    if (k < op.numRows) rows = std::max(rows, ready[op.rowOff[k]]);
    return std::max(rows, other);
  }
  for (int k = 0; k < op.numRows; ++k) {
    int64_t row = base + op.rowOff[k];
    if (row >= 0 && row < numRows) rows = std::max(rows, rowReady_[size_t(row)]);
  }
  return rows;
}

bool TensorCore::unitBlock(const DecodedOp& op, int64_t c, Block* block) {
  switch (op.slot) {
    case isa::SlotKind::VectorAlu:
      if (isa::opcodeInfo(op.op).latency == isa::LatencyClass::VectorTrans && eupFreeAt_ > c) {
        *block = {eupFreeAt_, StallCause::VpuBusy};
        return true;
      }
      return false;
    case isa::SlotKind::VectorLoad: {
      const int64_t rows = loadRowsReady(op);
      if (rows > c) {
        *block = {rows, StallCause::OperandNotReady};
        return true;
      }
      return false;
    }
    case isa::SlotKind::MatrixPush: {
      MxuUnit& m = *mxus_[op.unit];
      uint64_t at;
      switch (op.op) {
        case Opcode::MxuWPushBf16:
        case Opcode::MxuWPushS8:
        case Opcode::MxuWPushS8x2:
          at = m.weightPushReadyAt(false);
          break;
        case Opcode::MxuWPushTBf16:
        case Opcode::MxuWPushTS8:
        case Opcode::MxuWPushTS8x2:
          at = m.weightPushReadyAt(true);
          break;
        case Opcode::MxuLatch:
          at = m.latchReadyAt();
          break;
        default:
          at = m.matmulReadyAt();
          break;
      }
      if (int64_t(at) > c) {
        *block = {int64_t(at), StallCause::MxuBusy};
        return true;
      }
      return false;
    }
    case isa::SlotKind::MatrixPop: {
      int64_t at = popReadyAt(int(op.unit), int(op.unit2), c);
      if (at > c) {
        *block = {at, StallCause::MxuResultNotReady};
        return true;
      }
      return false;
    }
    case isa::SlotKind::Xlu: {
      int64_t freeAt = transposeFreeAt_;
      if (op.op != Opcode::XluTrPush && op.op != Opcode::XluTrPop)
        freeAt = *std::min_element(xluFreeAt_.begin(), xluFreeAt_.end());
      if (freeAt > c) {
        *block = {freeAt, StallCause::XluBusy};
        return true;
      }
      return false;
    }
    case isa::SlotKind::Misc:
      switch (op.op) {
        case Opcode::DmaRemote:
          if (queueOutstanding_[op.unit3] >= chip_.dma.queue_depth) {
            *block = {kExternal, StallCause::DmaQueueFull};
            return true;
          }
          return false;
        case Opcode::Dma:
          if (queueOutstanding_[op.unit2] >= chip_.dma.queue_depth) {
            *block = {kExternal, StallCause::DmaQueueFull};
            return true;
          }
          return false;
        case Opcode::SyncWait: {
          uint32_t need = uint32_t(op.imm[0]);
          if (flags_[op.unit] >= need) return false;
          // In a multi-chip system another chip may still signal the flag: a
          // wait nothing will satisfy is found when every chip is stuck.
          bool remoteMaySignal = options_.remote && options_.remote->numDevices() > 1;
          if (!remoteMaySignal &&
              uint64_t(flags_[op.unit]) + uint64_t(flagOutstanding_[op.unit]) < need) {
            now_ = c;
            fault("deadlock",
                  fmt::format("sync.wait f{}, {} can never be satisfied: the flag is {} and {} "
                              "DMA(s) that signal it are outstanding",
                              op.unit, need, flags_[op.unit], flagOutstanding_[op.unit]),
                  &op, "sync", -1);
          }
          *block = {kExternal, StallCause::SyncWait};
          return true;
        }
        case Opcode::Fence:
          if (dmaOutstanding_ > 0) {
            *block = {kExternal, StallCause::SyncWait};
            return true;
          }
          return false;
        case Opcode::Halt: {
          int64_t until = 0;
          if (!haltReady(c, &until)) {
            *block = {until, StallCause::SyncWait};
            return true;
          }
          return false;
        }
        default:
          return false;
      }
    default:
      return false;
  }
}

int64_t TensorCore::popReadyAt(int m, int slot, int64_t c) {
  return int64_t(mxus_[m]->popReadyAt(slot));
}

bool TensorCore::haltReady(int64_t c, int64_t* until) {
  if (dmaOutstanding_ > 0) {
    *until = kExternal;
    return false;
  }
  int64_t results = 0;
  for (int m = 0; m < numMxus(); ++m)
    for (int s = 0; s < mxus_[m]->slots(); ++s) results = std::max(results, popReadyAt(m, s, c));
  if (results > c) {
    *until = results;
    return false;
  }
  return true;
}

bool TensorCore::firstBlock(const DecodedBundle& b, int64_t c, Block* block,
                            const DecodedOp** blockingOp) {
  if (branchUntil_ > c) {
    *block = {branchUntil_, StallCause::Branch};
    *blockingOp = nullptr;
    return true;
  }
  const DecodedOp* ops = decoded_.ops.data() + b.firstOp;
  // Every register of the bundle at once: when all are ready, the first
  // blocking op (slot order) is the first whose unit blocks.
  int64_t regs = 0;
  // data() + offset: a program may have no registers at all (an empty list).
  const uint8_t* reg = decoded_.regs.data() + b.firstReg;
  for (int r = 0; r < b.numRegs; ++r) regs = std::max(regs, ready_[reg[r]]);
  if (regs <= c) {
    for (uint32_t m = b.unitOps; m != 0; m &= m - 1) {
      const DecodedOp& op = ops[__builtin_ctz(m)];
      if (op.slot == isa::SlotKind::VectorLoad) {  // the common unit check, inline
        const int64_t rows = loadRowsReady(op);
        if (rows <= c) continue;
        *block = {rows, StallCause::OperandNotReady};
        *blockingOp = &op;
        return true;
      }
      if (unitBlock(op, c, block)) {
        *blockingOp = &op;
        return true;
      }
    }
    return false;
  }
  for (uint32_t i = 0; i < b.numOps; ++i) {
    const DecodedOp& op = ops[i];
    // Registers: sources (RAW) and the destination (WAW); then the unit.
    int64_t regs = 0;
    for (int r = 0; r < op.numReads; ++r) regs = std::max(regs, ready_[op.reads[r]]);
    if (op.dst >= 0) regs = std::max(regs, ready_[op.dst]);
    if (op.wideRead >= 0) regs = std::max(regs, ready_[op.wideRead]);
    if (regs > c) {
      *block = {regs, StallCause::OperandNotReady};
      *blockingOp = &op;
      return true;
    }
    if (op.unitCheck && unitBlock(op, c, block)) {
      *blockingOp = &op;
      return true;
    }
  }
  return false;
}

int64_t TensorCore::bankConflictCycles(const DecodedBundle& b) {
  if (b.conflictStatic) return b.staticConflict;
  int64_t readRows[3 * isa::kSublanes], writeRows[3 * isa::kSublanes];
  int nr = 0, nw = 0;
  for (uint32_t i = 0; i < b.numOps; ++i) {
    const DecodedOp& op = decoded_.ops[b.firstOp + i];
    bool load = op.slot == isa::SlotKind::VectorLoad;
    if (!load && op.slot != isa::SlotKind::VectorStore) continue;
    int64_t base = int64_t(sregs_[op.ssrc[0]]);
    int64_t* rows = load ? readRows + nr : writeRows + nw;
    int n = rowOffsets(op, rows);
    for (int k = 0; k < n; ++k) rows[k] += base;
    (load ? nr : nw) += n;
  }
  return std::max(bankConflictExtra(readRows, nr, chip_.vmem.banks),
                  bankConflictExtra(writeRows, nw, chip_.vmem.banks));
}

// ---- The issue loop ----------------------------------------------------------------

void TensorCore::runLoop() {
  const int64_t numBundles = decoded_.size();
  const bool stepping = options_.referenceStepping;
  while (true) {
    if (options_.host && !stepping && pc_ >= 0 && pc_ < numBundles && !decoded_.at(pc_).needsSync) {
      // Bundles that need nothing of SystemC, up to the next that does or the
      // quantum: on a host thread when the last run from here was long enough
      // to pay for the hand-over (a choice made from this core's state alone).
      const int64_t from = pc_, bundles = stats_.bundlesIssued;
      if (localRun_[size_t(from)] >= kMinHostJobBundles) {
        options_.host->run(hostJob_);
      } else {
        localStop_ = runLocal();
      }
      localRun_[size_t(from)] =
          uint16_t(std::min<int64_t>(stats_.bundlesIssued - bundles, UINT16_MAX));
      if (localStop_ == LocalStop::Quantum) {
        syncTo(now_);
        continue;
      }
    }
    if (!stepBundle()) return;
    if (stepping || now_ - lastSync_ >= options_.quantum) syncTo(now_);
  }
}

TensorCore::LocalStop TensorCore::runLocal() {
  struct Local {
    bool& flag;
    explicit Local(bool& f) : flag(f) { flag = true; }
    ~Local() { flag = false; }
  } local(local_);
  const int64_t numBundles = decoded_.size();
  while (true) {
    if (pc_ < 0 || pc_ >= numBundles) return LocalStop::Serial;
    const DecodedBundle& b = decoded_.at(pc_);
    // These bundles sync or fault: the SystemC thread repeats the checks.
    if (b.needsSync || !b.invalid.empty() || now_ > options_.maxCycles) return LocalStop::Serial;
    stepBundle();
    if (now_ - lastSync_ >= options_.quantum) return LocalStop::Quantum;
  }
}

bool TensorCore::stepBundle() {
  const int64_t numBundles = decoded_.size();
  const bool stepping = options_.referenceStepping;
  if (pc_ < 0 || pc_ >= numBundles)
    fault("pc-out-of-range",
          fmt::format("execution reached bundle {}, outside the program (0..{})", pc_,
                      numBundles - 1),
          nullptr, "scalar");
  const DecodedBundle& b = decoded_.at(pc_);
  if (!b.invalid.empty()) fault("invalid-bundle", b.invalid, nullptr, "decode", -1, b.invalidSlot);
  if (now_ > options_.maxCycles)
    fault("max-cycles", fmt::format("the run exceeded --max-cycles={}", options_.maxCycles),
          nullptr, "core");

  // Find the issue cycle: jump from one blocking condition to the next.
  int64_t c = now_;
  int64_t syncedAt = -1;
  Block blk;
  const DecodedOp* bop = nullptr;
  while (firstBlock(b, c, &blk, &bop)) {
    if (c > options_.maxCycles) {
      now_ = c;
      fault("max-cycles",
            fmt::format("the run exceeded --max-cycles={} while bundle {} stalled on {}",
                        options_.maxCycles, pc_, stallCauseName(blk.cause)),
            bop, "core");
    }
    int64_t next;
    if (blk.until == kExternal || stepping) {
      // Shared state: bring SystemC to c and apply what completed before c.
      if (syncedAt != c) {
        syncTo(c);
        drainCompletions(c);
        syncedAt = c;
        continue;
      }
      next = stepping ? c + 1 : waitForCompletion(c, bop);
    } else {
      next = blk.until;
    }
    if (next > options_.maxCycles + 1) {
      chargeStall(blk.cause, c, options_.maxCycles + 1, bop);
      now_ = options_.maxCycles + 1;
      fault("max-cycles",
            fmt::format("the run exceeded --max-cycles={} while bundle {} stalled on {}",
                        options_.maxCycles, pc_, stallCauseName(blk.cause)),
            bop, "core");
    }
    chargeStall(blk.cause, c, next, bop);
    c = next;
  }
  int64_t conflict = bankConflictCycles(b);
  if (conflict > 0) {
    const DecodedOp* first = nullptr;  // the first load or store, for reports
    for (uint32_t i = 0; i < b.numOps && !first; ++i) {
      const DecodedOp& o = decoded_.ops[b.firstOp + i];
      if (o.slot == isa::SlotKind::VectorLoad || o.slot == isa::SlotKind::VectorStore) first = &o;
    }
    chargeStall(StallCause::VmemBankConflict, c, c + conflict, first);
    if (stepping)
      for (int64_t i = 0; i < conflict; ++i) syncTo(c + i + 1);
    c += conflict;
  }
  if (b.needsSync && syncedAt != c) {
    syncTo(c);
    drainCompletions(c);
  }
  // Issue.
  int op = currentOp();
  curOp_ = op;
  OpStats& os = stats_.ops[op];
  os.cycles += c + 1 - now_;
  os.bundles += 1;
  if (trace_ && op != traceOpIndex_) {
    if (traceOpIndex_ >= -1 && traceOpIndex_ < int(program_.debugMap.size()) && traceOpIndex_ >= 0)
      trace_->interval(traceOps_, program_.debugMap[traceOpIndex_].opName, traceOpBegin_, now_);
    traceOpIndex_ = op;
    traceOpBegin_ = now_;
  }
  now_ = c;
  ++stats_.bundlesIssued;
  bundle_ = &b;
  int64_t nextPc = execute(b, c);
  if (halted_) return false;
  pc_ = nextPc;
  now_ = c + 1;
  return true;
}

void TensorCore::finishRun(int64_t haltCycle) {
  halted_ = true;
  stats_.haltCycle = haltCycle;
  for (auto& m : mxus_) m->finish(uint64_t(haltCycle));
  if (trace_ && traceOpIndex_ >= 0 && traceOpIndex_ < int(program_.debugMap.size()))
    trace_->interval(traceOps_, program_.debugMap[traceOpIndex_].opName, traceOpBegin_, haltCycle);
  syncTo(haltCycle);
  finishedEvent_.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace tpusim::sim
