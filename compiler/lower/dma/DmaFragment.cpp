#include "compiler/lower/dma/DmaFragment.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/codegen/HazardCheck.h"
#include "kernels/codegen/RegAlloc.h"
#include "kernels/codegen/Scheduler.h"

namespace tpusim::lower {

using isa::Opcode;
using kernels::codegen::CodegenError;
using kernels::codegen::MemAccess;
using kernels::codegen::MInstr;
using kernels::codegen::RegClass;

namespace {
MOperand I(int64_t v) { return MOperand::imm(v); }
constexpr int64_t kMaxWait = 65535;  // sync.wait takes a 16-bit count
// Memory regions for the scheduler's ordering: descriptor words written by
// sst, and index words read by sld (written only by DMAs, which are barriers).
constexpr int kDescriptorRegion = -2;
constexpr int kIndexRegion = -3;
}  // namespace

DmaFragment::DmaFragment(const kernels::codegen::TargetInfo& target,
                         const kernels::codegen::CompileOptions& placement)
    : target_(target), placement_(placement) {
  // A kernel's prefetch region in flight across this fragment
  // (CompileOptions::inFlight, docs/compiler.md "Cross-kernel prefetch"): its
  // VMEM rows and flags are kept free, and its DMA queues avoided while two
  // others remain (descriptors of one queue complete in order, so a transpose
  // behind a 2 MiB weight block would wait for all of it).
  const kernels::codegen::PrefetchPlan& region = placement.inFlight;
  std::vector<int> busy;
  for (const kernels::codegen::PrefetchCopy& c : region.copies) busy.push_back(c.queue);
  for (int q = 0; q < std::max(1, target.dmaQueues); ++q)
    if (std::find(busy.begin(), busy.end(), q) == busy.end()) queueMap_.push_back(q);
  if (queueMap_.size() < 2) {
    queueMap_.clear();
    for (int q = 0; q < std::max(1, target.dmaQueues); ++q) queueMap_.push_back(q);
  }
  int freeFlags = target.syncFlags;
  vmemEnd_ = target.vmemBytes;
  if (!region.empty()) {
    freeFlags -= region.flags;
    if (!region.fromTop) {
      flagBase_ = region.flags;
      vmemBase_ = region.rows * isa::kVmemRowBytes;
    } else {
      vmemEnd_ -= region.rows * isa::kVmemRowBytes;
    }
  }
  queues_ = std::max(1, std::min(int(queueMap_.size()), freeFlags));
  if (freeFlags < 1)
    throw CodegenError("internal: no sync flag left beside the prefetch region in flight");
  pending_.assign(size_t(queues_), 0);
  newBlock("entry");
  emit(Opcode::Mark, {I(0)});
}

void DmaFragment::shareBusyQueues(int64_t hbmBytes) {
  const kernels::codegen::PrefetchPlan& region = placement_.inFlight;
  if (region.empty() || hbmBytes < kBusyQueueShare * region.hbmBytes) return;
  for (int64_t p : pending_)
    if (p != 0) throw CodegenError("internal: shareBusyQueues after a copy");
  for (int q = 0; q < std::max(1, target_.dmaQueues); ++q)
    if (std::find(queueMap_.begin(), queueMap_.end(), q) == queueMap_.end()) queueMap_.push_back(q);
  int freeFlags = target_.syncFlags - region.flags;
  queues_ = std::max(1, std::min(int(queueMap_.size()), freeFlags));
  pending_.assign(size_t(queues_), 0);
}

int DmaFragment::newBlock(const std::string& label) {
  fn_.blocks.push_back(kernels::codegen::MBlock{fmt::format("{}{}", label, fn_.blocks.size()), {}});
  return int(fn_.blocks.size()) - 1;
}

void DmaFragment::emitInstr(MInstr mi) { block().instrs.push_back(std::move(mi)); }

void DmaFragment::emit(Opcode op, std::vector<MOperand> operands) {
  if (inManual_) throw CodegenError("internal: scheduled code inside a hand-scheduled block");
  emitInstr(kernels::codegen::makeInstr(op, std::move(operands)));
}

void DmaFragment::emitPaired(Opcode op, std::vector<MOperand> operands, int k, MOperand hi) {
  if (inManual_) throw CodegenError("internal: scheduled code inside a hand-scheduled block");
  MInstr mi = kernels::codegen::makeInstr(op, std::move(operands));
  if (hi.isReg()) {
    mi.pairHi = hi;
    fn_.unspillable.insert({int(RegClass::Vector), int(mi.ops[size_t(k)].value)});
    fn_.unspillable.insert({int(RegClass::Vector), int(hi.value)});
  }
  emitInstr(std::move(mi));
}

MOperand DmaFragment::newScalar() { return fn_.newReg(RegClass::Scalar); }
MOperand DmaFragment::newVector() { return fn_.newReg(RegClass::Vector); }

int DmaFragment::beginManualLoop() {
  int b = newBlock("manual");
  manual_.push_back({b, kernels::codegen::BlockSchedule{}});
  inManual_ = true;
  return b;
}

void DmaFragment::emitAt(int cycle, Opcode op, std::vector<MOperand> operands, MemAccess mem) {
  MInstr mi = kernels::codegen::makeInstr(op, std::move(operands));
  mi.mem = mem;
  emitInstr(mi);
  auto& s = manual_.back().second;
  s.cycle.push_back(cycle);
  s.length = std::max(s.length, cycle + 1);
}

void DmaFragment::endManualLoop(MOperand count, int cycle, int64_t trips) {
  int first = manual_.back().first;
  emitAt(cycle, Opcode::Loop, {count, MOperand::block(first)});
  loops_.push_back(kernels::codegen::LoopRange{first, first});
  inManual_ = false;
  // Bookkeeping of the DMAs issued inside is not supported in manual blocks.
  (void)trips;
  newBlock("after");
}

MOperand DmaFragment::constant(int64_t value) {
  MOperand r = fn_.newReg(RegClass::Scalar);
  emit(Opcode::SLi, {r, I(int64_t(uint32_t(value)))});
  return r;
}

MOperand DmaFragment::binary(Opcode op, MOperand a, MOperand b) {
  MOperand r = fn_.newReg(RegClass::Scalar);
  emit(op, {r, a, b});
  return r;
}

MOperand DmaFragment::addImm(MOperand a, int64_t imm) {
  MOperand r = fn_.newReg(RegClass::Scalar);
  if (imm >= -32768 && imm <= 32767) {
    emit(Opcode::SAddI, {r, a, I(imm)});
    return r;
  }
  emit(Opcode::SAdd, {r, a, constant(imm)});
  return r;
}

MOperand DmaFragment::mulImm(MOperand a, int64_t imm) {
  MOperand r = fn_.newReg(RegClass::Scalar);
  if (imm > 0 && (imm & (imm - 1)) == 0) {
    int shift = 0;
    while ((int64_t(1) << shift) < imm) ++shift;
    emit(Opcode::SShlI, {r, a, I(shift)});
  } else if (imm >= -32768 && imm <= 32767) {
    emit(Opcode::SMulI, {r, a, I(imm)});
  } else {
    emit(Opcode::SMul, {r, a, constant(imm)});
  }
  return r;
}

MOperand DmaFragment::select(MOperand cond, MOperand ifNonZero, MOperand ifZero) {
  MOperand r = fn_.newReg(RegClass::Scalar);
  emit(Opcode::SSel, {r, cond, ifNonZero, ifZero});
  return r;
}

int64_t DmaFragment::allocSmem(int64_t words) {
  int64_t first = placement_.smemBase + int64_t(smemImage_.size());
  if (first + words > target_.smemBytes / 4)
    throw CodegenError(
        fmt::format("data movement needs SMEM words [{}, {}) but the chip has {} words",
                    placement_.smemBase, first + words, target_.smemBytes / 4));
  smemImage_.resize(smemImage_.size() + size_t(words), 0);
  return first;
}

void DmaFragment::initSmem(int64_t word, uint32_t value) {
  smemImage_.at(size_t(word - placement_.smemBase)) = value;
}

int64_t DmaFragment::addDescriptor(const isa::DmaDescriptor& d) {
  std::string error;
  if (!d.validate(&error)) throw CodegenError("internal: malformed DMA descriptor: " + error);
  int64_t word = allocSmem(isa::kDmaDescriptorWords);
  auto packed = d.pack();
  std::copy(packed.begin(), packed.end(), smemImage_.begin() + (word - placement_.smemBase));
  return word;
}

MOperand DmaFragment::loadSmem(MOperand addr, int64_t imm) {
  MOperand r = fn_.newReg(RegClass::Scalar);
  MInstr mi = kernels::codegen::makeInstr(Opcode::SLd, {r, addr, I(imm)});
  mi.mem = MemAccess{MemAccess::Space::Smem, kIndexRegion, false, -1, 0};
  emitInstr(mi);
  return r;
}

int DmaFragment::takeQueue() {
  int q = nextQueue_;
  nextQueue_ = (nextQueue_ + 1) % queues_;
  return q;
}

void DmaFragment::dmaStatic(const isa::DmaDescriptor& d) {
  int64_t word = addDescriptor(d);
  int q = takeQueue();
  emit(Opcode::Dma, {constant(word), I(flagOf(q)), I(queueOf(q))});
  pending_[size_t(q)] += multiplier_;
}

void DmaFragment::dmaOn(const isa::DmaDescriptor& d, int queue) {
  int64_t word = addDescriptor(d);
  queue %= queues_;
  emit(Opcode::Dma, {constant(word), I(flagOf(queue)), I(queueOf(queue))});
  pending_[size_t(queue)] += multiplier_;
}

void DmaFragment::dmaStandIns(uint64_t hbmAddr, int count, int queue) {
  const int64_t scratch = allocSmem(1);
  for (int i = 0; i < count; ++i) {
    isa::DmaDescriptor d;
    d.src = isa::MemorySpace::Hbm;
    d.dst = isa::MemorySpace::Smem;
    d.srcAddr = hbmAddr;
    d.dstAddr = uint64_t(scratch) * 4;
    d.innerBytes = 4;
    dmaOn(d, queue);
  }
}

void DmaFragment::storeDescriptorWord(int64_t word, int index, MOperand value) {
  MInstr st = kernels::codegen::makeInstr(Opcode::SSt, {value, constant(word), I(index)});
  st.mem = MemAccess{MemAccess::Space::Smem, kDescriptorRegion, true, -1, 0};
  emitInstr(st);
}

void DmaFragment::waitOldest(int queue) {
  queue %= queues_;
  // In a loop, the DMA waited for may be issued later in the body (the
  // previous iteration's): the count only has to be positive here.
  if (pending_[size_t(queue)] < 1)
    throw CodegenError("internal: waiting for a DMA that was not issued");
  emit(Opcode::SyncWait, {I(flagOf(queue)), I(1)});
  pending_[size_t(queue)] -= multiplier_;  // once per iteration of the enclosing loops
}

// Word `wordIndex` (1: source, 3: destination) of the template gets the low
// address word; the high word only when a carry out of the low word can change it.
void DmaFragment::writeAddress(MOperand templ, int wordIndex, const RuntimeAddress& a) {
  if (!a.hasOffset) return;
  uint64_t lowBase = a.base & 0xFFFFFFFFu;
  MOperand base = constant(int64_t(lowBase));
  MOperand low = binary(Opcode::SAdd, base, a.offset);
  auto store = [&](MOperand value, int index) {
    MInstr st = kernels::codegen::makeInstr(Opcode::SSt, {value, templ, I(index)});
    st.mem = MemAccess{MemAccess::Space::Smem, kDescriptorRegion, true, -1, 0};
    emitInstr(st);
  };
  store(low, wordIndex);
  if (lowBase + uint64_t(a.maxOffset) >= (uint64_t(1) << 32)) {
    MOperand carry = binary(Opcode::SCmpLtu, low, base);
    MOperand high = binary(Opcode::SAdd, constant(int64_t(a.base >> 32)), carry);
    store(high, wordIndex + 1);
  }
}

void DmaFragment::dmaAt(int64_t word, const RuntimeAddress& src, const RuntimeAddress& dst,
                        int queue) {
  MOperand templ = constant(word);
  writeAddress(templ, 1, src);
  writeAddress(templ, 3, dst);
  queue %= queues_;
  if (deferring_) {
    deferred_.push_back({templ, queue});
    return;
  }
  emit(Opcode::Dma, {templ, I(flagOf(queue)), I(queueOf(queue))});
  pending_[size_t(queue)] += multiplier_;
}

void DmaFragment::issueDeferred() {
  deferring_ = false;
  for (const auto& [templ, queue] : deferred_) {
    emit(Opcode::Dma, {templ, I(flagOf(queue)), I(queueOf(queue))});
    pending_[size_t(queue)] += multiplier_;
  }
  deferred_.clear();
}

void DmaFragment::waitAll() {
  for (int q = 0; q < queues_; ++q) {
    if (pending_[size_t(q)] < 0) throw CodegenError("internal: more DMA waits than DMAs");
    for (int64_t left = pending_[size_t(q)]; left > 0; left -= kMaxWait)
      emit(Opcode::SyncWait, {I(flagOf(q)), I(std::min(left, kMaxWait))});
    pending_[size_t(q)] = 0;
  }
}

void DmaFragment::loopNest(const std::vector<LoopAxis>& axes, const std::vector<MOperand>& init,
                           int unroll,
                           const std::function<void(const std::vector<MOperand>&, int)>& body) {
  if (axes.empty()) {
    body(init, 0);
    return;
  }
  std::function<void(size_t, const std::vector<MOperand>&)> level =
      [&](size_t d, const std::vector<MOperand>& outer) {
        const LoopAxis& axis = axes[d];
        bool innermost = d + 1 == axes.size();
        int copies = innermost ? unroll : 1;
        if (copies < 1 || axis.count % copies != 0)
          throw CodegenError("internal: loop unroll does not divide the trip count");
        int64_t trips = axis.count / copies;
        std::vector<MOperand> cursors;
        for (const MOperand& c : outer) cursors.push_back(copy(c));
        int64_t saved = multiplier_;
        MOperand count;
        if (trips > 1) count = constant(trips);
        multiplier_ *= trips;
        int first = trips > 1 ? newBlock("loop") : -1;
        auto advance = [&]() {
          for (size_t i = 0; i < cursors.size(); ++i)
            if (axis.steps.at(i) != 0) {
              // Loop-carried: the cursor register is redefined in place.
              int64_t step = axis.steps[i];
              if (step >= -32768 && step <= 32767)
                emit(Opcode::SAddI, {cursors[i], cursors[i], I(step)});
              else
                emit(Opcode::SAdd, {cursors[i], cursors[i], constant(step)});
            }
        };
        if (innermost) {
          for (int c = 0; c < copies; ++c) {
            body(cursors, c);
            advance();
          }
        } else {
          level(d + 1, cursors);
          advance();
        }
        if (trips > 1) {
          emit(Opcode::Loop, {count, MOperand::block(first)});
          loops_.push_back(kernels::codegen::LoopRange{first, int(fn_.blocks.size()) - 1});
          newBlock("after");
        }
        multiplier_ = saved;
      };
  level(0, init);
}

kernels::codegen::CompiledKernel DmaFragment::finish(const FragmentInfo& info) {
  waitAll();
  const auto& t = target_;
  std::vector<kernels::codegen::BlockSchedule> schedules;
  for (size_t i = 0; i < fn_.blocks.size(); ++i) {
    auto m = std::find_if(manual_.begin(), manual_.end(),
                          [&](const auto& e) { return e.first == int(i); });
    schedules.push_back(m != manual_.end() ? m->second
                                           : kernels::codegen::scheduleBlock(fn_.blocks[i], t));
  }
  auto used = kernels::codegen::allocateRegisters(fn_, schedules, loops_, t);
  std::vector<uint32_t> starts;
  std::vector<isa::Bundle> bundles =
      kernels::codegen::assembleBundles(fn_, schedules, t, &starts, placement_.firstBundle);
  for (size_t b = 0; b < fn_.blocks.size(); ++b) {
    std::vector<isa::Bundle> blk(bundles.begin() + starts[b], bundles.begin() + starts[b + 1]);
    auto problems = kernels::codegen::checkBlockTiming(blk, t);
    if (!problems.empty())
      throw CodegenError(
          fmt::format("internal: block {} of data-movement fragment '{}' has a "
                      "hazard: {}",
                      fn_.blocks[b].label, info.name, problems[0]));
  }
  kernels::codegen::CompiledKernel out;
  isa::Program& prog = out.program;
  prog.chip = t.name;
  prog.code = bundles;
  if (!smemImage_.empty()) {
    isa::DataSegment seg;
    seg.space = isa::MemorySpace::Smem;
    seg.address = uint64_t(placement_.smemBase) * 4;
    for (uint32_t w : smemImage_)
      for (int i = 0; i < 4; ++i) seg.bytes.push_back(uint8_t(w >> (8 * i)));
    prog.data.push_back(std::move(seg));
  }
  const uint32_t first = placement_.firstBundle;
  prog.symbols.push_back({info.name, first});
  prog.debugMap.push_back({first, first + uint32_t(bundles.size()), info.name, info.hloInstruction,
                           info.sourceFile, info.sourceLine});
  isa::CostEntry cost;
  cost.opName = info.name;
  cost.hbmBytesRead = info.hbmRead;
  cost.hbmBytesWritten = info.hbmWritten;
  cost.vmemBytesRead = info.vmemRead;
  cost.vmemBytesWritten = info.vmemWritten;
  prog.costs.push_back(cost);
  out.stats.bundles = int64_t(bundles.size());
  for (const auto& b : fn_.blocks) out.stats.instructions += int64_t(b.instrs.size());
  out.stats.scalarRegs = used[0];
  out.stats.vectorRegs = used[1];
  out.stats.maskRegs = used[2];
  out.stats.smemWords = int64_t(smemImage_.size());
  out.stats.flags = queues_;
  out.firstBundle = first;
  out.smemBase = placement_.smemBase;
  out.smemWords = int64_t(smemImage_.size());
  out.standalone = false;
  out.machineText = kernels::codegen::printMachineCode(fn_, bundles, starts, first);
  return out;
}

}  // namespace tpusim::lower
