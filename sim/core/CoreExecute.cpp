// Executing one bundle at its issue cycle: every op reads its operands now;
// register writes are staged and applied together at the end, so ops of one
// bundle never see each other's results. The scoreboard then marks each
// destination readable at issue + latency.
#include <fmt/format.h>

#include <algorithm>

#include "isa/support/Numerics.h"
#include "sim/core/TensorCore.h"
#include "sim/vpu/VpuSemantics.h"

// An opcode without a case here reaches an "internal" fault, which the
// every-opcode test (testbench/unit/core/CoreOpcodeCoverageTest.cpp) catches.

namespace tpusim::sim {

using isa::Opcode;

namespace {

MxuDtype dtypeOf(Opcode op) {
  switch (op) {
    case Opcode::MxuWPushS8:
    case Opcode::MxuWPushTS8:
    case Opcode::MxuMmS8:
    case Opcode::MxuMmaS8:
      return MxuDtype::S8;
    case Opcode::MxuWPushS8x2:
    case Opcode::MxuWPushTS8x2:
    case Opcode::MxuMmS8x2:
    case Opcode::MxuMmaS8x2:
      return MxuDtype::S8x2;
    default:
      return MxuDtype::Bf16;
  }
}

// FLOPs a vector ALU op contributes to the op profile (f32 arithmetic only).
bool isFlop(Opcode op) {
  switch (op) {
    case Opcode::VAddF32:
    case Opcode::VSubF32:
    case Opcode::VMulF32:
    case Opcode::VMaxF32:
    case Opcode::VMinF32:
    case Opcode::VExpF32:
    case Opcode::VLogF32:
    case Opcode::VRsqrtF32:
    case Opcode::VRcpF32:
    case Opcode::VTanhF32:
    case Opcode::VSqrtF32:
      return true;
    default:
      return false;
  }
}

}  // namespace

int64_t TensorCore::execute(const DecodedBundle& b, int64_t t) {
  numSWrites_ = numVWrites_ = numMWrites_ = numTaintedWrites_ = 0;
  int64_t nextPc = pc_ + 1;
  const DecodedOp* ops = decoded_.ops.data() + b.firstOp;
  for (uint32_t i = 0; i < b.numOps; ++i) {
    const DecodedOp& op = ops[i];
    switch (op.slot) {
      case isa::SlotKind::Scalar:
        executeScalar(op, t, &nextPc);
        break;
      case isa::SlotKind::VectorAlu:
        executeVectorAlu(op, t);
        break;
      case isa::SlotKind::VectorLoad:
        executeLoad(op, t);
        break;
      case isa::SlotKind::VectorStore:
        executeStore(op, t);
        break;
      case isa::SlotKind::MatrixPush:
      case isa::SlotKind::MatrixPop:
        executeMxu(op, t);
        break;
      case isa::SlotKind::Xlu:
        executeXlu(op, t);
        break;
      case isa::SlotKind::Misc:
        executeMisc(op, t);
        if (halted_) return nextPc;
        break;
    }
  }
  commit();
  // The scoreboard writes, decoded in slot order (a 256-wide pop's second register included).
  const ScoreboardWrite* w = decoded_.writes.data() + b.firstWrite;
  for (int i = 0; i < b.numWrites; ++i) ready_[w[i].reg] = t + w[i].latency;
  return nextPc;
}

void TensorCore::commit() {
  for (int i = 0; i < numSWrites_; ++i) sregs_[sWrites_[i].reg] = sWrites_[i].value;
  if (!options_.functional) {
    for (int i = 0; i < numSWrites_; ++i) sTaint_[size_t(sWrites_[i].reg)] = false;
    for (int i = 0; i < numTaintedWrites_; ++i) sTaint_[size_t(taintedWrites_[i])] = true;
  }
  for (int i = 0; i < numVWrites_; ++i) vregs_[vStageReg_[i]] = vStage_[i];
  for (int i = 0; i < numMWrites_; ++i) masks_[mStageReg_[i]] = mStage_[i];
}

// ---- Scalar unit -------------------------------------------------------------------

void TensorCore::executeScalar(const DecodedOp& op, int64_t t, int64_t* nextPc) {
  ++stats_.scalarOps;
  auto s = [&](int i) { return sregs_[op.ssrc[i]]; };
  auto si = [&](int i) { return int32_t(sregs_[op.ssrc[i]]); };
  // Timing mode: does this op read a value that depends on data no DMA moved?
  bool tainted = false;
  if (!options_.functional)
    for (int i = 0; i < op.numS; ++i) tainted |= sTaint_[op.ssrc[i]];
  auto write = [&](uint32_t v) {
    if (tainted) taintedWrites_[numTaintedWrites_++] = op.dst - kScoreboardScalarBase;
    sWrites_[numSWrites_++] = {op.dst - kScoreboardScalarBase, v};
  };
  auto branchOn = [&](int source) {
    if (options_.functional || !sTaint_[op.ssrc[source]]) return;
    stats_.opsOnUnmovedData.insert(opNameAt(pc_));
    if (stats_.unmovedSmemBranches++ == 0)
      stats_.firstUnmovedSmemBranch =
          fmt::format("core {} bundle {} ({}) at cycle {}: {} on a value loaded from SMEM", id_,
                      pc_, opNameAt(pc_), t, isa::opcodeInfo(op.op).mnemonic);
  };
  auto smemWord = [&](int64_t word, bool isWrite) {
    if (word < 0 || uint64_t(word) >= memory_.smem(id_).words())
      fault("smem-out-of-bounds",
            fmt::format("SMEM {} of word {} is out of bounds (SMEM holds {} words)",
                        isWrite ? "write" : "read", word, memory_.smem(id_).words()),
            &op, "smem", word * 4);
    ++stats_.smemAccesses;
    return uint64_t(word);
  };
  auto branchTo = [&](int64_t target) {
    *nextPc = target;
    branchUntil_ = t + 1 + chip_.core.branch_penalty;
  };
  switch (op.op) {
    case Opcode::SAdd:
      write(s(0) + s(1));
      return;
    case Opcode::SSub:
      write(s(0) - s(1));
      return;
    case Opcode::SMul:
      write(s(0) * s(1));
      return;
    case Opcode::SAnd:
      write(s(0) & s(1));
      return;
    case Opcode::SOr:
      write(s(0) | s(1));
      return;
    case Opcode::SXor:
      write(s(0) ^ s(1));
      return;
    case Opcode::SShl:
      write(s(0) << (s(1) & 31));
      return;
    case Opcode::SShr:
      write(s(0) >> (s(1) & 31));
      return;
    case Opcode::SSra:
      write(uint32_t(si(0) >> (s(1) & 31)));
      return;
    case Opcode::SMin:
      write(uint32_t(std::min(si(0), si(1))));
      return;
    case Opcode::SMax:
      write(uint32_t(std::max(si(0), si(1))));
      return;
    case Opcode::SAddI:
      write(s(0) + uint32_t(op.imm[0]));
      return;
    case Opcode::SMulI:
      write(s(0) * uint32_t(op.imm[0]));
      return;
    case Opcode::SShlI:
      write(s(0) << (op.imm[0] & 31));
      return;
    case Opcode::SShrI:
      write(s(0) >> (op.imm[0] & 31));
      return;
    case Opcode::SLi:
      write(uint32_t(op.imm[0]));
      return;
    case Opcode::SCmpEq:
      write(s(0) == s(1));
      return;
    case Opcode::SCmpNe:
      write(s(0) != s(1));
      return;
    case Opcode::SCmpLt:
      write(si(0) < si(1));
      return;
    case Opcode::SCmpLe:
      write(si(0) <= si(1));
      return;
    case Opcode::SCmpLtu:
      write(s(0) < s(1));
      return;
    case Opcode::SSel:
      write(s(0) != 0 ? s(1) : s(2));
      return;
    case Opcode::SLd: {
      uint64_t w = smemWord(int64_t(s(0)) + op.imm[0], false);
      if (!options_.functional) {
        tainted = taintedSmem_.count(w) > 0;
        for (const auto& [begin, end] : unmovedSmem_) tainted |= w >= begin && w < end;
      }
      uint32_t value = 0;
      memory_.smem(id_).readWord(w, &value);
      write(value);
      return;
    }
    case Opcode::SSt: {
      uint64_t w = smemWord(int64_t(s(1)) + op.imm[0], true);
      if (!options_.functional) {
        if (sTaint_[op.ssrc[0]])
          taintedSmem_.insert(w);
        else
          taintedSmem_.erase(w);
      }
      memory_.smem(id_).writeWord(w, s(0));
      return;
    }
    case Opcode::Jmp:
      branchTo(op.imm[0]);
      return;
    case Opcode::BrNz:
      branchOn(0);
      if (s(0) != 0) branchTo(op.imm[0]);
      return;
    case Opcode::BrZ:
      branchOn(0);
      if (s(0) == 0) branchTo(op.imm[0]);
      return;
    case Opcode::Loop: {
      branchOn(0);
      uint32_t left = s(0) - 1;
      write(left);
      if (left != 0) branchTo(op.imm[0]);
      return;
    }
    default:
      fault("internal", "scalar slot holds a non-scalar op", &op, "scalar");
  }
}

// ---- Vector ALU --------------------------------------------------------------------

void TensorCore::executeVectorAlu(const DecodedOp& op, int64_t t) {
  ++stats_.valuOps;
  OpStats& os = stats_.ops[curOp_];
  ++os.valuOps;
  const isa::OpcodeInfo& info = isa::opcodeInfo(op.op);
  if (info.latency == isa::LatencyClass::VectorTrans) {
    eupFreeAt_ = t + chip_.vpu.transcendental_interval;
    ++stats_.transcendentalOps;
    stats_.transcendentalBusy += chip_.vpu.transcendental_interval;
    os.transcendentalBusy += chip_.vpu.transcendental_interval;
  }
  if (isFlop(op.op)) os.flops += isa::kSublanes * isa::kLanes;
  if (trace_) trace_->interval(traceVpu_, info.mnemonic, t, t + 1);
  if (!options_.functional) return;
  VpuInputs in;
  if (op.numV > 0) in.a = &vregs_[op.vsrc[0]];
  if (op.numV > 1) in.b = &vregs_[op.vsrc[1]];
  if (op.numM > 0) in.ma = &masks_[op.msrc[0]];
  if (op.numM > 1) in.mb = &masks_[op.msrc[1]];
  if (op.numS > 0) in.scalar = sregs_[op.ssrc[0]];
  in.imm = uint32_t(op.imm[0]);
  bool toMask = op.dst >= kScoreboardMaskBase;
  VregData& vd = toMask ? scratch_ : vStage_[numVWrites_];
  MaskData& md = toMask ? mStage_[numMWrites_] : scratchMask_;
  if (!sim::executeVectorAlu(op.op, in, vd, md))
    fault("internal", "vector ALU op without semantics", &op, "vpu");
  if (toMask) {
    mStageReg_[numMWrites_++] = op.dst - kScoreboardMaskBase;
  } else {
    vStageReg_[numVWrites_++] = op.dst - kScoreboardVectorBase;
  }
}

// ---- VMEM loads and stores -----------------------------------------------------------

void TensorCore::vmemRowFault(const DecodedOp& op, int k, int64_t row, bool store) {
  if (store)
    fault("vmem-out-of-bounds",
          fmt::format("vector store to VMEM row {} (sublane {}) is out of bounds (VMEM has {} "
                      "rows)",
                      row, op.rowSublane[k], chip_.vmem.rows()),
          &op, "vmem", row * isa::kVmemRowBytes);
  fault("vmem-out-of-bounds",
        fmt::format("vector load of VMEM row {} (sublane {}) is out of bounds (VMEM has {} rows)",
                    row, op.rowSublane[k], chip_.vmem.rows()),
        &op, "vmem", row * isa::kVmemRowBytes);
}

void TensorCore::executeLoad(const DecodedOp& op, int64_t t) {
  ++stats_.vldOps;
  OpStats& os = stats_.ops[curOp_];
  ++os.vldOps;
  const int64_t base = int64_t(sregs_[op.ssrc[0]]);
  const int64_t vmemRows = chip_.vmem.rows();
  if (op.numRows > 0 && (base + op.rowLo < 0 || base + op.rowHi >= vmemRows))
    for (int k = 0; k < op.numRows; ++k)
      if (base + op.rowOff[k] < 0 || base + op.rowOff[k] >= vmemRows)
        vmemRowFault(op, k, base + op.rowOff[k], false);
  if (options_.functional) {
    VregData& dst = vStage_[numVWrites_];
    dst.fill(0);
    mem::SparseMemory& vmem = memory_.vmem(id_);
    for (int k = 0; k < op.numRows; ++k)
      vmem.read(uint64_t(base + op.rowOff[k]) * isa::kVmemRowBytes, &at(dst, op.rowSublane[k], 0),
                isa::kVmemRowBytes);
    vStageReg_[numVWrites_++] = op.dst - kScoreboardVectorBase;
  }
  stats_.vmemBytesRead += op.numRows * isa::kVmemRowBytes;
  os.vmemBytes += op.numRows * isa::kVmemRowBytes;
}

void TensorCore::executeStore(const DecodedOp& op, int64_t t) {
  ++stats_.vstOps;
  OpStats& os = stats_.ops[curOp_];
  ++os.vstOps;
  const int64_t base = int64_t(sregs_[op.ssrc[0]]);
  // A row out of range faults after the rows before it (sublane order) are
  // stored, as the per-sublane loop always did.
  const int64_t vmemRows = chip_.vmem.rows();
  const bool check = op.numRows > 0 && (base + op.rowLo < 0 || base + op.rowHi >= vmemRows);
  const int64_t visible = t + chip_.latency.of(isa::LatencyClass::VectorStore);
  mem::SparseMemory& vmem = memory_.vmem(id_);
  const VregData& src = vregs_[op.vsrc[0]];
  for (int k = 0; k < op.numRows; ++k) {
    const int64_t row = base + op.rowOff[k];
    if (check && (row < 0 || row >= vmemRows)) vmemRowFault(op, k, row, true);
    int64_t& ready = rowReady_[size_t(row)];
    ready = std::max(ready, visible);
    if (!options_.functional) continue;
    const int s = op.rowSublane[k];
    uint64_t addr = uint64_t(row) * isa::kVmemRowBytes;
    if (op.op == Opcode::VStM) {
      const MaskData& m = masks_[op.msrc[0]];
      for (int l = 0; l < isa::kLanes; ++l)
        if (maskBit(m, s * isa::kLanes + l))
          vmem.write(addr + 4 * l, src.data() + s * isa::kLanes + l, 4);
    } else {
      vmem.write(addr, src.data() + s * isa::kLanes, isa::kVmemRowBytes);
    }
  }
  stats_.vmemBytesWritten += op.numRows * isa::kVmemRowBytes;
  os.vmemBytes += op.numRows * isa::kVmemRowBytes;
}

// ---- MXU -------------------------------------------------------------------------------

void TensorCore::executeMxu(const DecodedOp& op, int64_t t) {
  int m = int(op.unit);
  MxuUnit& mxu = *mxus_[m];
  const int n = mxu.size();
  const bool wide = n > isa::kLanes;
  VregIn in;
  if (op.numV > 0) {
    in.lo = &vregs_[op.vsrc[0]];
    if (wide) {
      if (op.vsrc[0] + 1 >= int(vregs_.size()))
        fault("invalid-register",
              fmt::format("v{} is the last vector register: a {}-wide MXU row needs v{} too",
                          op.vsrc[0], n, op.vsrc[0] + 1),
              &op, fmt::format("mxu{}", m));
      in.hi = &vregs_[op.vsrc[0] + 1];
    }
  }
  MxuStatus st;
  const char* what = "";
  switch (op.op) {
    case Opcode::MxuWPushBf16:
    case Opcode::MxuWPushS8:
    case Opcode::MxuWPushTBf16:
    case Opcode::MxuWPushTS8:
    case Opcode::MxuWPushS8x2:
    case Opcode::MxuWPushTS8x2: {
      bool transposed = op.op == Opcode::MxuWPushTBf16 || op.op == Opcode::MxuWPushTS8 ||
                        op.op == Opcode::MxuWPushTS8x2;
      st = mxu.weightPush(uint64_t(t), in, transposed, dtypeOf(op.op));
      stats_.mxuWeightBusy[m] += isa::kSublanes;
      what = "wpush";
      break;
    }
    case Opcode::MxuLatch:
      st = mxu.latch(uint64_t(t));
      what = "latch";
      break;
    case Opcode::MxuMmBf16:
    case Opcode::MxuMmaBf16:
    case Opcode::MxuMmS8:
    case Opcode::MxuMmaS8:
    case Opcode::MxuMmS8x2:
    case Opcode::MxuMmaS8x2: {
      bool acc =
          op.op == Opcode::MxuMmaBf16 || op.op == Opcode::MxuMmaS8 || op.op == Opcode::MxuMmaS8x2;
      const MxuDtype dtype = dtypeOf(op.op);
      st = mxu.matmul(uint64_t(t), in, dtype, int(op.unit2), acc);
      // mxuMacs counts the array's MAC slots (mxu_utilization, at most 100%);
      // a packed int8 row is 2N deep, so the op's FLOPs count both MACs of
      // each slot (its ops against the preset's int8 peak, int8_rate x bf16).
      const int64_t macs = int64_t(isa::kSublanes) * n * n;
      const double ops = 2.0 * double(macs) * (dtype == MxuDtype::S8x2 ? 2.0 : 1.0);
      stats_.mxuLhsBusy[m] += isa::kSublanes;
      stats_.mxuMacs[m] += macs;
      OpStats& os = stats_.ops[curOp_];
      os.flops += ops;
      os.mxuFlops += ops;
      what = "mm";
      break;
    }
    case Opcode::MxuPop: {
      VregOut out;
      out.lo = &vStage_[numVWrites_];
      vStageReg_[numVWrites_++] = op.dst - kScoreboardVectorBase;
      if (wide) {
        out.hi = &vStage_[numVWrites_];
        vStageReg_[numVWrites_++] = op.dst - kScoreboardVectorBase + 1;
      }
      st = mxu.pop(uint64_t(t), int(op.unit2), out);
      if (!options_.functional) numVWrites_ -= wide ? 2 : 1;
      what = "pop";
      break;
    }
    default:
      fault("internal", "matrix slot holds a non-MXU op", &op, "mxu");
  }
  if (!st.ok()) fault("mxu-fault", st.fault(), &op, fmt::format("mxu{}", m));
  if (trace_ && op.op != Opcode::MxuPop)
    trace_->interval(traceMxu_[m], what, t, t + (op.op == Opcode::MxuLatch ? 1 : isa::kSublanes));
}

// ---- XLU -------------------------------------------------------------------------------

void TensorCore::executeXlu(const DecodedOp& op, int64_t t) {
  ++stats_.xluOps;
  std::string error;
  int64_t busy = 0;
  switch (op.op) {
    case Opcode::XluTrPush:
      busy = chip_.xlu.transpose_push_interval;
      transposeFreeAt_ = t + busy;
      if (!transpose_.push(vregs_[op.vsrc[0]], &error))
        fault("xlu-transpose", error, &op, "xlu.transpose");
      break;
    case Opcode::XluTrPop: {
      busy = chip_.xlu.transpose_pop_interval;
      transposeFreeAt_ = t + busy;
      VregData& out = vStage_[numVWrites_];
      if (!transpose_.pop(out, &error)) fault("xlu-transpose", error, &op, "xlu.transpose");
      if (options_.functional) vStageReg_[numVWrites_++] = op.dst - kScoreboardVectorBase;
      break;
    }
    case Opcode::XluRotLane:
    case Opcode::XluRotSub:
    case Opcode::XluPerm:
    case Opcode::XluSumF32:
    case Opcode::XluMaxF32:
    case Opcode::XluSumS32:
    case Opcode::XluMaxS32: {
      bool reduce = isa::opcodeInfo(op.op).latency == isa::LatencyClass::XluReduce;
      busy = reduce ? chip_.xlu.reduce_interval : chip_.xlu.permute_interval;
      auto unit = std::min_element(xluFreeAt_.begin(), xluFreeAt_.end());
      *unit = t + busy;
      if (!options_.functional) break;
      const VregData& a = vregs_[op.vsrc[0]];
      const VregData& b = op.numV > 1 ? vregs_[op.vsrc[1]] : a;
      uint32_t scalar = op.numS > 0 ? sregs_[op.ssrc[0]] : 0;
      if (!executeXluPermuteOrReduce(op.op, a, b, scalar, uint32_t(op.imm[0]),
                                     vStage_[numVWrites_]))
        fault("internal", "XLU op without semantics", &op, "xlu");
      vStageReg_[numVWrites_++] = op.dst - kScoreboardVectorBase;
      break;
    }
    default:
      fault("internal", "XLU slot holds a non-XLU op", &op, "xlu");
  }
  stats_.xluBusy += busy;
  if (trace_) trace_->interval(traceXlu_, isa::opcodeInfo(op.op).mnemonic, t, t + busy);
}

// ---- Misc: DMA, sync flags, marks, halt ------------------------------------------------

isa::DmaDescriptor TensorCore::readDmaDescriptor(const DecodedOp& op, uint64_t word) {
  mem::Smem& smem = memory_.smem(id_);
  if (word + isa::kDmaDescriptorWords > smem.words())
    fault("smem-out-of-bounds",
          fmt::format("DMA descriptor at SMEM word {} runs past the end of SMEM ({} words)", word,
                      smem.words()),
          &op, "smem", int64_t(word * 4));
  uint32_t words[isa::kDmaDescriptorWords];
  for (int i = 0; i < isa::kDmaDescriptorWords; ++i) smem.readWord(word + i, &words[i]);
  isa::DmaDescriptor desc;
  std::string error;
  if (!isa::DmaDescriptor::unpack(words, &desc, &error))
    fault("dma-descriptor",
          fmt::format("malformed DMA descriptor at SMEM word {}: {}", word, error), &op, "dma",
          int64_t(word * 4));
  return desc;
}

void TensorCore::executeMisc(const DecodedOp& op, int64_t t) {
  switch (op.op) {
    case Opcode::Dma: {
      uint64_t word = sregs_[op.ssrc[0]];
      isa::DmaDescriptor desc = readDmaDescriptor(op, word);
      if (desc.dstChip != isa::kDmaLocalChip)
        fault("dma-descriptor",
              fmt::format("DMA descriptor at SMEM word {} targets chip {}: a copy to another chip "
                          "is dma.remote (with the device in a register), not dma",
                          word, desc.dstChip),
              &op, "dma", int64_t(word * 4));
      if (!options_.functional) {
        // A descriptor built from data no DMA moved (gather indices): its addresses are not
        // the functional run's.
        bool dependent = false;
        for (int i = 0; i < op.numS; ++i) dependent |= sTaint_[op.ssrc[i]];
        for (uint64_t w = word; w < word + isa::kDmaDescriptorWords && !dependent; ++w) {
          dependent = taintedSmem_.count(w) > 0;
          for (const auto& [begin, end] : unmovedSmem_) dependent |= w >= begin && w < end;
        }
        if (dependent) {
          stats_.opsOnUnmovedData.insert(opNameAt(pc_));
          if (stats_.unmovedSmemDmas++ == 0)
            stats_.firstUnmovedSmemDma =
                fmt::format("core {} bundle {} ({}) at cycle {}", id_, pc_, opNameAt(pc_), t);
        }
      }
      int64_t where = -1;
      std::string problem = dma_.issue(id_, int(op.unit2), int(op.unit), desc, t, &where);
      if (!problem.empty())
        fault("dma-fault", problem, &op, fmt::format("dma q{}", op.unit2), where);
      if (!options_.functional && desc.dst == isa::MemorySpace::Smem) {
        uint64_t end = desc.dstAddr + desc.innerBytesOn(false);
        for (int d = 0; d + 1 < desc.numDims && d < 3; ++d)
          end += uint64_t(desc.counts[size_t(d)] - 1) * desc.dstStrides[size_t(d)];
        unmovedSmem_.emplace_back(desc.dstAddr / 4, (end + 3) / 4);
      }
      ++queueOutstanding_[op.unit2];
      ++flagOutstanding_[op.unit];
      ++dmaOutstanding_;
      ++stats_.dmaIssued;
      stats_.dmaBytes += int64_t(desc.totalBytes());
      OpStats& os = stats_.ops[curOp_];
      os.dmaBytes += int64_t(desc.totalBytes());
      if (desc.src == isa::MemorySpace::Hbm) os.hbmBytesRead += int64_t(desc.totalBytes());
      if (desc.dst == isa::MemorySpace::Hbm) os.hbmBytesWritten += int64_t(desc.totalBytes());
      return;
    }
    case Opcode::DmaRemote: {
      uint64_t word = sregs_[op.ssrc[0]];
      int64_t device = int64_t(sregs_[op.ssrc[1]]);
      isa::DmaDescriptor desc = readDmaDescriptor(op, word);
      if (!options_.remote || options_.remote->numDevices() < 2)
        fault("ici",
              "dma.remote needs a multi-chip system (tpusim --topology, e.g. 2x4); this run has "
              "one chip",
              &op, "ici");
      int64_t where = -1;
      std::string problem = options_.remote->sendRemote(
          id_, int(op.unit3), int(op.unit), int(op.unit2), int(device), desc, t, &where);
      if (!problem.empty()) fault("ici-fault", problem, &op, "ici", where);
      ++queueOutstanding_[op.unit3];
      ++flagOutstanding_[op.unit];
      ++dmaOutstanding_;
      ++stats_.dmaIssued;
      stats_.dmaBytes += int64_t(desc.totalBytes());
      stats_.ops[curOp_].dmaBytes += int64_t(desc.totalBytes());
      return;
    }
    case Opcode::SyncRemote: {
      int64_t device = int64_t(sregs_[op.ssrc[0]]);
      if (!options_.remote || options_.remote->numDevices() < 2)
        fault("ici",
              "sync.remote needs a multi-chip system (tpusim --topology, e.g. 2x4); this run has "
              "one chip",
              &op, "ici");
      std::string problem =
          options_.remote->signalRemote(id_, int(device), int(op.unit), uint32_t(op.imm[0]), t);
      if (!problem.empty()) fault("ici-fault", problem, &op, "ici");
      return;
    }
    case Opcode::ChipId:
      sWrites_[numSWrites_++] = {op.dst - kScoreboardScalarBase,
                                 uint32_t(options_.remote ? options_.remote->deviceId() : 0)};
      return;
    case Opcode::ChipCount:
      sWrites_[numSWrites_++] = {op.dst - kScoreboardScalarBase,
                                 uint32_t(options_.remote ? options_.remote->numDevices() : 1)};
      return;
    case Opcode::SyncWait:
      flags_[op.unit] -= uint32_t(op.imm[0]);
      return;
    case Opcode::SyncSignal:
      flags_[op.unit] += uint32_t(op.imm[0]);
      return;
    case Opcode::SyncSet:
      flags_[op.unit] = uint32_t(op.imm[0]);
      return;
    case Opcode::SyncRead:
      sWrites_[numSWrites_++] = {op.dst - kScoreboardScalarBase, flags_[op.unit]};
      return;
    case Opcode::CoreId:
      sWrites_[numSWrites_++] = {op.dst - kScoreboardScalarBase, uint32_t(id_)};
      return;
    case Opcode::Fence:
      return;
    case Opcode::Mark:
      markOp_ = int(op.imm[0]);
      curOp_ = currentOp();  // the bundle's later ops count to the marked op
      return;
    case Opcode::Halt:
      commit();
      finishRun(t);
      return;
    default:
      fault("internal", "misc slot holds a non-misc op", &op, "misc");
  }
}

}  // namespace tpusim::sim
