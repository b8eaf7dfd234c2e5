#include "compiler/lower/module/ModuleLowering.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/CannotLower.h"
#include "compiler/lower/buffers/InputOutputAlias.h"
#include "compiler/lower/buffers/LoweringOrder.h"
#include "compiler/lower/collectives/CollectiveLowering.h"
#include "compiler/lower/collectives/SpmdPlan.h"
#include "compiler/lower/dma/DataMovement.h"
#include "compiler/lower/fusion/FusionLowering.h"
#include "compiler/lower/module/Constants.h"
#include "compiler/lower/module/ControlFlow.h"
#include "compiler/lower/module/Costs.h"
#include "compiler/lower/module/ModuleLowerer.h"
#include "compiler/lower/module/Names.h"
#include "kernels/codegen/Compile.h"
#include "kernels/codegen/RegAlloc.h"

namespace tpusim::lower {

namespace codegen = kernels::codegen;
using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

namespace {

constexpr int kMaxCallDepth = 64;

uint64_t alignUp(uint64_t x) {
  return (x + uint64_t(kHbmAlignment) - 1) / uint64_t(kHbmAlignment) * uint64_t(kHbmAlignment);
}

void collectLeaves(const Shape& s, std::vector<int64_t>& index,
                   std::vector<std::pair<std::vector<int64_t>, Shape>>& out) {
  if (s.isTuple()) {
    for (size_t i = 0; i < s.tupleShapes.size(); ++i) {
      index.push_back(int64_t(i));
      collectLeaves(s.tupleShapes[i], index, out);
      index.pop_back();
    }
    return;
  }
  out.emplace_back(index, s);
}

// The position of the leaf at `path` among shapeLeaves(shape), or -1.
int64_t leafPosition(const Shape& shape, const std::vector<int64_t>& path) {
  auto leaves = shapeLeaves(shape);
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].first == path) return int64_t(i);
  return -1;
}

// The op_name a debug-map entry shows for `inst`: its own, or for a fusion
// without one, that of its fused root.
std::string opNameOf(const HloInstruction& inst) {
  std::string name = unescapeMetadata(inst.attrs().metadata.opName);
  if (name.empty() && inst.opcode() == HloOpcode::Fusion)
    for (const HloComputation* c : inst.calledComputations())
      if (c && c->root()) return unescapeMetadata(c->root()->attrs().metadata.opName);
  return name;
}

}  // namespace

std::vector<std::pair<std::vector<int64_t>, Shape>> shapeLeaves(const Shape& shape) {
  std::vector<std::pair<std::vector<int64_t>, Shape>> out;
  std::vector<int64_t> index;
  collectLeaves(shape, index, out);
  return out;
}

ModuleLowerer::ModuleLowerer(const hlo::HloModule& module, const TargetDescription& target,
                             const codegen::TargetInfo& codegenTarget, LoweredModule& out,
                             const LowerOptions& options)
    : module_(module),
      target_(target),
      cg_(codegenTarget),
      out_(out),
      control_(m_, cg_),
      useKernelCache_(options.kernelCache),
      kernelCache_(options.verifyKernelCache),
      prefetch_(options.crossKernelPrefetch),
      packedWeights_(options.packedWeights),
      deferWriteBack_(options.deferWriteBack) {
  m_.program.chip = cg_.name;
  m_.shareCode = options.shareCode;
  m_.smemCapacityWords = cg_.smemBytes / 4;
  try {
    spmd_.devices = spmdDeviceCount(module);
  } catch (const std::invalid_argument& e) {
    throw ModuleLoweringError(e.what());
  }
  // The collectives' flags sit above the kernels' (compileModule gives the
  // kernels core.sync_flags - spmdReservedFlags).
  spmd_.syncFlags = int(target.chip.core.sync_flags);
  spmd_.reservedFlags = spmdReservedFlags(module, target.chip);
  spmd_.asyncSlots = spmdAsyncSlots(module);
  if (spmd_.devices > 1) {
    try {
      spmd_.slice = spmdSlice(spmd_.devices, target.chip.ici);
      spmd_.chip = &target.chip;
    } catch (const std::invalid_argument&) {
      // No slice holds the devices: the one-shot exchange needs none.
    }
  }
  spmd_.allocateZeros = [this](uint64_t bytes) {
    uint64_t at = allocateExtra(bytes);
    m_.program.data.push_back({isa::MemorySpace::Hbm, at, std::vector<uint8_t>(bytes, 0)});
    return at;
  };
  spmd_.allocateScratch = [this](uint64_t bytes) { return allocateExtra(bytes); };
}

std::vector<uint64_t> ModuleLowerer::leafBytes(const Shape& shape) {
  std::vector<uint64_t> bytes;
  for (auto& [path, leaf] : shapeLeaves(shape)) bytes.push_back(denseBytes(leaf));
  return bytes;
}

uint64_t ModuleLowerer::allocateExtra(uint64_t bytes) {
  uint64_t at = extraTop_;
  extraTop_ = alignUp(extraTop_ + std::max<uint64_t>(bytes, 1));
  if (extraTop_ > uint64_t(target_.hbmBytes))
    throw ModuleLoweringError(fmt::format(
        "module '{}' needs more than the {} bytes of HBM of chip '{}' (heap {} bytes, plus "
        "constants of called computations and output copies)",
        module_.name(), target_.hbmBytes, target_.name, entry_.peakBytes));
  return at;
}

void ModuleLowerer::recordOp(const std::string& instruction, const std::string& kind,
                             uint32_t first, const std::string& tiling) {
  out_.ops.push_back({instruction, kind, first, m_.nextBundle(), tiling, lastPrefetchNote_,
                      lastDrainNote_, std::move(lastKernelNotes_)});
  lastPrefetchNote_.clear();
  lastDrainNote_.clear();
  lastKernelNotes_.clear();
}

Leaves ModuleLowerer::resultLeaves(const HloInstruction& inst, const Region& region) const {
  auto leaves = shapeLeaves(inst.shape());
  Leaves out(leaves.size(), -1);
  for (const HbmBuffer& b : region.assignment->buffers) {
    if (b.instruction != &inst || b.kind == HbmBuffer::Kind::Scratch) continue;
    for (size_t i = 0; i < leaves.size(); ++i)
      if (leaves[i].first == b.tupleIndex) out[i] = int64_t(region.base + uint64_t(b.offset));
  }
  return out;
}

uint64_t ModuleLowerer::scratchOf(const HloInstruction& inst, const Region& region) const {
  for (const HbmBuffer& b : region.assignment->buffers)
    if (b.instruction == &inst && b.kind == HbmBuffer::Kind::Scratch)
      return region.base + uint64_t(b.offset);
  return region.base;  // the called computations have no temporaries
}

Leaves ModuleLowerer::lowerConstant(const HloInstruction& inst, const Region& region, bool entry) {
  auto leaves = shapeLeaves(inst.shape());
  Leaves at = entry ? resultLeaves(inst, region) : Leaves(leaves.size(), -1);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].second.isArray()) continue;
    std::vector<uint8_t> bytes = constantBytes(inst, leaves[i].first);
    // Constants of called computations must outlive their region (it is
    // reused), so they live past the entry heap.
    if (at[i] < 0) at[i] = int64_t(allocateExtra(bytes.size()));
    if (!bytes.empty()) m_.program.data.push_back({isa::MemorySpace::Hbm, uint64_t(at[i]), bytes});
  }
  return at;
}

void ModuleLowerer::renameAppended(const HloInstruction& inst, size_t debugBefore,
                                   size_t costBefore) {
  const hlo::OpMetadata& md = inst.attrs().metadata;
  std::string opName = opNameOf(inst);
  for (size_t i = debugBefore; i < m_.program.debugMap.size(); ++i) {
    isa::DebugEntry& e = m_.program.debugMap[i];
    e.opName = inst.name();
    e.hloInstruction = opName.empty() ? inst.name() : opName;
    if (e.sourceFile.empty() && !md.sourceFile.empty()) {
      e.sourceFile = unescapeMetadata(md.sourceFile);
      e.sourceLine = uint32_t(md.sourceLine.value_or(0));
    }
  }
  isa::CostEntry hlo = hloCost(inst, inst.name());
  if (m_.program.costs.size() == costBefore) {
    m_.program.costs.push_back(hlo);
    return;
  }
  // The kernel's own entries count the bytes its DMAs really move; the FLOPs
  // are the HLO's (the kernel counts only its matmuls). A fusion of sibling
  // dots takes the HLO's alone: its pipelined step variants each count the
  // matmuls again (3x the HLO's on the tiny prefill).
  int64_t dots = 0;
  if (inst.opcode() == hlo::HloOpcode::Fusion)
    for (const hlo::HloComputation* comp : inst.calledComputations())
      if (comp)
        for (const auto& member : comp->instructions())
          dots += member->opcode() == hlo::HloOpcode::Dot;
  for (size_t i = costBefore; i < m_.program.costs.size(); ++i) {
    isa::CostEntry& c = m_.program.costs[i];
    c.opName = inst.name();
    c.flops = i == costBefore ? (dots > 1 ? hlo.flops : std::max(c.flops, hlo.flops)) : 0;
  }
}

namespace {

// A symbol name not yet in the module (the same computation may be lowered at
// several call sites).
void uniquifySymbols(codegen::CompiledKernel& k, const isa::Program& module) {
  for (isa::Symbol& s : k.program.symbols) {
    auto taken = [&](const std::string& n) {
      for (const isa::Symbol& t : module.symbols)
        if (t.name == n) return true;
      return false;
    };
    if (!taken(s.name)) continue;
    for (int n = 2;; ++n) {
      std::string name = fmt::format("{}.{}", s.name, n);
      if (!taken(name)) {
        s.name = name;
        break;
      }
    }
  }
}

int64_t kernelArrayBytes(const kernels::llo::ArrayOperand& a) {
  return kernels::llo::refBytes(
      kernels::llo::Type::ref(kernels::llo::MemSpace::Hbm, a.dtype, a.shape));
}

uint64_t singleAddress(const HloInstruction& inst, const Leaves& leaves, const std::string& what) {
  if (leaves.size() != 1 || leaves[0] < 0)
    throw CannotLower::of(inst, fmt::format("{} is not a single array in HBM", what));
  return uint64_t(leaves[0]);
}

}  // namespace

std::string ModuleLowerer::lowerKernel(const HloInstruction& inst,
                                       const std::vector<Leaves>& operands, const Leaves& result,
                                       const KernelNeighbours& after) {
  LoweredKernel lk = takeLoweredKernel(inst);
  codegen::CompileOptions o;
  for (int64_t op : lk.inputOperand) {
    if (op < 0 || op >= int64_t(operands.size()))
      throw ModuleLoweringError(
          fmt::format("kernel of %{} reads operand {} of {}", inst.name(), op, operands.size()));
    o.inputAddresses.push_back(
        int64_t(singleAddress(inst, operands[size_t(op)], fmt::format("operand {}", op))));
  }
  for (const std::vector<int64_t>& path : lk.outputIndex) {
    int64_t at = leafPosition(inst.shape(), path);
    if (at < 0 || result[size_t(at)] < 0)
      throw CannotLower::of(inst, "a kernel output is not an array of the result");
    o.outputAddresses.push_back(result[size_t(at)]);
  }
  o.firstBundle = m_.nextBundle();
  o.smemBase = m_.nextSmemWord();
  o.standalone = false;
  o.printMachineCode = false;  // nothing reads it here (a tpuc run's time)
  o.hloInstruction = inst.name();
  // Cross-kernel prefetch: this kernel's first blocks the kernel before
  // started (or a later kernel's, in flight across this short one), and the
  // next kernel's that this one starts.
  std::string prefetchedNote;
  const bool between = !prefetchSkip_.empty() && prefetchSkip_.front() == &inst;
  if (prefetchFor_ == &inst) {
    o.prefetched = std::move(prefetchPlan_);
    for (const codegen::PrefetchedStream& s : o.prefetched.streams)
      prefetchedNote += fmt::format("{}'{}'", prefetchedNote.empty() ? "" : ", ",
                                    lk.kernel->inputs.at(size_t(s.input)).name);
    prefetchedNote = fmt::format("first blocks of {} ({} B) started by %{}", prefetchedNote,
                                 o.prefetched.hbmBytes, prefetchFrom_);
    ++out_.kernelsPrefetched;
    out_.prefetchedBytes += o.prefetched.hbmBytes;
    prefetchFor_ = nullptr;
    prefetchPlan_ = {};
  } else if (between) {
    o.inFlight = prefetchPlan_;
    prefetchSkip_.erase(prefetchSkip_.begin());
  } else if (prefetchFor_) {
    throw ModuleLoweringError(
        fmt::format("internal: %{} started the first blocks of %{} but %{} runs next",
                    prefetchFrom_, prefetchFor_->name(), inst.name()));
  }
  // Deferred write-back: the kernel before's last write-backs; this kernel
  // waits for them at its start when it reads or writes their bytes.
  std::vector<codegen::HbmRange> inFlightWrites;
  if (drainFor_ == &inst) {
    inFlightWrites = drainRanges_;
    o.drainBefore = std::move(drainPlan_);
    auto touches = [&](int64_t at, int64_t bytes) {
      for (const codegen::HbmRange& r : drainRanges_)
        if (at < r.end && r.begin < at + bytes) return true;
      return false;
    };
    for (size_t i = 0; i < lk.kernel->inputs.size(); ++i)
      if (touches(o.inputAddresses[i], kernelArrayBytes(lk.kernel->inputs[i])))
        o.drainBefore.atStart = true;
    for (size_t i = 0; i < lk.kernel->outputs.size(); ++i)
      if (touches(o.outputAddresses[i], kernelArrayBytes(lk.kernel->outputs[i])))
        o.drainBefore.atStart = true;
    drainFor_ = nullptr;
    drainPlan_ = {};
    drainRanges_.clear();
  } else if (drainFor_) {
    throw ModuleLoweringError(
        fmt::format("internal: %{} left write-backs in flight for %{} but %{} runs next",
                    drainFrom_, drainFor_->name(), inst.name()));
  }
  // Only a kernel followed directly by another defers (nextKernelAfter):
  // nothing else runs between them.
  o.deferWriteBack =
      deferWriteBack_ && !after.kernels.empty() && after.fragmentsBefore.at(0).empty();
  PrefetchChoice choice;
  if (prefetch_ && !between) {
    choice = choosePrefetch(inst, lk, o, result, after);
    o.prefetchNext = choice.plan;
    // A block the kernel before still writes back (deferred) is started
    // only after its write-back: the drain comes before the prefetch.
    for (const codegen::PrefetchCopy& c : o.prefetchNext.copies) {
      const isa::DmaDescriptor& d = c.desc;
      int64_t end = int64_t(d.srcAddr) + int64_t(d.innerBytes);
      for (size_t i = 0; i < d.counts.size(); ++i)
        end += int64_t(d.counts[i] - 1) * int64_t(d.srcStrides[i]);
      for (const codegen::HbmRange& r : inFlightWrites)
        if (int64_t(d.srcAddr) < r.end && r.begin < end) o.drainBefore.beforePrefetch = true;
    }
  }
  codegen::CompiledKernel k;
  auto compileWith = [&](const codegen::CompileOptions& opts) {
    auto compile = [&] { return codegen::compileKernel(*lk.kernel, cg_, opts); };
    if (useKernelCache_) return kernelCache_.get(*lk.kernel, opts, compile);
    ++out_.kernelsCompiled;
    return compile();
  };
  try {
    try {
      k = compileWith(o);
    } catch (const codegen::CodegenError&) {
      if (o.prefetchNext.empty()) throw;
      o.prefetchNext = {};  // no room (VMEM, or the registers of a lookahead hint:
                            // codegen::compileKernel) for the next kernel's first blocks
      k = compileWith(o);
    }
  } catch (const codegen::CodegenError& e) {
    throw CannotLower::of(inst, fmt::format("the kernel code generator failed: {}", e.what()));
  }
  if (k.stats.scheduleFallbacks > 0) {
    ++out_.kernelsWithScheduleFallbacks;
    out_.scheduleFallbacks += k.stats.scheduleFallbacks;
  }
  if (!o.drainBefore.empty()) {
    lastDrainNote_ = fmt::format("waits for %{}'s last write-back {}", drainFrom_,
                                 codegen::drainAtName(k.drainedAt));
    out_.drainedAtEnd += k.drainedAt == codegen::DrainAt::End;
  }
  if (!k.pendingWriteBacks.empty()) {
    ++out_.kernelsDeferred;
    drainFor_ = after.kernels.at(0);
    drainFrom_ = inst.name();
    drainPlan_.copies = k.pendingWriteBacks;
    for (const codegen::PendingWriteBack& c : k.pendingWriteBacks) {
      const int64_t at = o.outputAddresses.at(size_t(c.output));
      drainRanges_.push_back({at, at + kernelArrayBytes(lk.kernel->outputs.at(size_t(c.output)))});
    }
  }
  if (!o.prefetchNext.empty()) {
    prefetchFor_ = choice.target;
    prefetchSkip_ = choice.skipped;
    prefetchPlan_ = std::move(o.prefetchNext);
    prefetchFrom_ = inst.name();
  }
  uniquifySymbols(k, m_.program);
  size_t debugBefore = m_.program.debugMap.size(), costBefore = m_.program.costs.size();
  codegen::appendKernel(m_, k);
  renameAppended(inst, debugBefore, costBefore);
  lastPrefetchNote_ = prefetchedNote;
  lastKernelNotes_ = std::move(lk.notes);
  return lk.tiling;
}

void ModuleLowerer::lowerDataMovementOp(const HloInstruction& inst,
                                        const std::vector<Leaves>& operands, const Leaves& result) {
  std::vector<uint64_t> addresses;
  for (size_t i = 0; i < operands.size(); ++i)
    addresses.push_back(singleAddress(inst, operands[i], fmt::format("operand {}", i)));
  uint64_t out = singleAddress(inst, result, "the result");
  FragmentPlacement p;
  p.firstBundle = m_.nextBundle();
  p.smemBase = m_.nextSmemWord();
  p.standalone = false;
  p.hloInstruction = inst.name();
  // A later kernel's first blocks in flight across this fragment: it keeps
  // their VMEM rows, flags and queues free (DmaFragment.h).
  if (!prefetchSkip_.empty() && prefetchSkip_.front() == &inst) {
    p.inFlight = prefetchPlan_;
    prefetchSkip_.erase(prefetchSkip_.begin());
  }
  codegen::CompiledKernel k;
  try {
    k = lowerDataMovement(inst, addresses, out, cg_, p);
  } catch (const codegen::CodegenError& e) {
    throw CannotLower::of(inst, fmt::format("the DMA code generator failed: {}", e.what()));
  }
  uniquifySymbols(k, m_.program);
  size_t debugBefore = m_.program.debugMap.size(), costBefore = m_.program.costs.size();
  codegen::appendKernel(m_, k);
  renameAppended(inst, debugBefore, costBefore);
}

void ModuleLowerer::copyLeaves(const Leaves& from, const Leaves& to, const Shape& shape,
                               const std::string& what) {
  std::vector<uint64_t> bytes = leafBytes(shape);
  Leaves src = from;
  // A source that is another leaf's destination would be overwritten before
  // it is read: stage it first.
  for (size_t j = 0; j < src.size(); ++j) {
    if (src[j] < 0) continue;
    for (size_t k = 0; k < to.size(); ++k)
      if (k != j && to[k] == src[j] && from[k] != to[k]) {
        uint64_t tmp = allocateExtra(bytes[j]);
        control_.copyHbm(uint64_t(src[j]), tmp, bytes[j], what);
        src[j] = int64_t(tmp);
        break;
      }
  }
  for (size_t j = 0; j < src.size() && j < to.size(); ++j)
    if (src[j] >= 0 && to[j] >= 0)
      control_.copyHbm(uint64_t(src[j]), uint64_t(to[j]), bytes[j], what);
}

Leaves ModuleLowerer::lowerComputation(const HloComputation& comp,
                                       const std::vector<Leaves>& params, uint64_t regionBase,
                                       int depth) {
  if (depth > kMaxCallDepth)
    throw ModuleLoweringError(fmt::format("computations call each other more than {} deep at %{}",
                                          kMaxCallDepth, comp.name()));
  const bool entry = depth == 0;
  const BufferAssignment* assignment = &entry_;
  if (!entry) {
    nested_.push_back(
        std::make_unique<BufferAssignment>(assignCalledComputationBuffers(comp, target_)));
    assignment = nested_.back().get();
  }
  Region region{assignment, regionBase};

  std::unordered_map<const HloInstruction*, Leaves> value;
  auto valueOf = [&](const HloInstruction* i) {
    auto it = value.find(i);
    return it == value.end() ? Leaves{} : it->second;
  };
  const std::vector<HloInstruction*> order = loweringOrder(comp, &target_.chip);
  for (size_t at = 0; at < order.size(); ++at) {
    const HloInstruction* inst = order[at];
    lowering_ = inst;
    const HloInstruction* prefetchPending = prefetchFor_;
    const HloInstruction* drainPending = drainFor_;
    const bool prefetchBetween =
        std::find(prefetchSkip_.begin(), prefetchSkip_.end(), inst) != prefetchSkip_.end();
    HloOpcode opc = inst->opcode();
    std::vector<Leaves> operands;
    for (const HloInstruction* op : inst->operands()) operands.push_back(value[op]);
    Leaves result;
    const uint32_t first = m_.nextBundle();
    if (opc == HloOpcode::Parameter) {
      int64_t n = inst->attrs().parameterNumber;
      if (n < 0 || n >= int64_t(params.size()))
        throw ModuleLoweringError(
            fmt::format("%{} is parameter {} of {} given", inst->name(), n, params.size()));
      result = params[size_t(n)];
    } else if (opc == HloOpcode::Constant) {
      result = lowerConstant(*inst, region, entry);
    } else if (opc == HloOpcode::Tuple) {
      for (const Leaves& l : operands) result.insert(result.end(), l.begin(), l.end());
    } else if (opc == HloOpcode::GetTupleElement) {
      const Shape& t = inst->operand(0)->shape();
      int64_t k = inst->tupleIndex().value_or(-1), start = 0;
      if (!t.isTuple() || k < 0 || k >= int64_t(t.tupleShapes.size()))
        throw CannotLower::of(*inst, "get-tuple-element of a non-tuple or out of range");
      for (int64_t e = 0; e < k; ++e)
        start += int64_t(shapeLeaves(t.tupleShapes[size_t(e)]).size());
      int64_t n = int64_t(shapeLeaves(inst->shape()).size());
      result.assign(operands[0].begin() + start, operands[0].begin() + start + n);
    } else if (aliasesOperandBuffer(*inst)) {
      result = operands[0];
      if (isSpmdPrimitive(*inst)) {  // an async pair's done: its waits
        size_t op = control_.openOp(inst->name(), inst->name(), "", 0);
        finishAsyncCollective(control_, spmd_, inst->operand(0));
        control_.closeOp(op);
        recordOp(inst->name(), "collective", first);
      }
    } else if (opc == HloOpcode::AfterAll || inst->shape().isToken()) {
      result = Leaves(shapeLeaves(inst->shape()).size(), -1);
    } else if (opc == HloOpcode::While) {
      drainAsyncCollectives(control_, spmd_);
      result = resultLeaves(*inst, region);
      lowerWhile(*this, *inst, operands.at(0), result, scratchOf(*inst, region), depth + 1);
      recordOp(inst->name(), "control", first);
    } else if (opc == HloOpcode::Conditional) {
      drainAsyncCollectives(control_, spmd_);
      result = resultLeaves(*inst, region);
      lowerConditional(*this, *inst, operands, result, scratchOf(*inst, region), depth + 1);
      recordOp(inst->name(), "control", first);
    } else if (opc == HloOpcode::Call) {
      // What the inliner left (it inlines every call it sees): the callee runs
      // in this instruction's scratch region, its result is copied out.
      drainAsyncCollectives(control_, spmd_);
      result = resultLeaves(*inst, region);
      const HloComputation* callee = inst->toApply();
      if (!callee) throw CannotLower::of(*inst, "call without to_apply");
      size_t entryOp = control_.openOp(inst->name(), opNameOf(*inst), "", 0);
      Leaves root = lowerComputation(*callee, operands, scratchOf(*inst, region), depth + 1);
      copyLeaves(root, result, inst->shape(), "%" + inst->name());
      control_.closeOp(entryOp);
      recordOp(inst->name(), "control", first);
    } else if (isSpmdPrimitive(*inst)) {
      result = resultLeaves(*inst, region);
      std::vector<uint64_t> addresses;
      for (size_t i = 0; i < operands.size(); ++i)
        addresses.push_back(singleAddress(*inst, operands[i], fmt::format("operand {}", i)));
      lowerSpmdPrimitive(control_, *inst, addresses, singleAddress(*inst, result, "the result"),
                         spmd_);
      recordOp(inst->name(), "collective", first);
    } else if (isComputeInstruction(*inst) &&
               !(isDataMovement(*inst) && opc != HloOpcode::Broadcast)) {
      // A broadcast is cheaper as a kernel (one read, vector stores) than as
      // DMAs; every other op both lowerings take (copy) moves bytes only.
      result = resultLeaves(*inst, region);
      KernelNeighbours after;
      after.valueOf = valueOf;
      after.resultOf = [&](const HloInstruction* i) { return resultLeaves(*i, region); };
      std::vector<const HloInstruction*> fragments;
      for (size_t n = nextKernelAfter(order, at, &fragments);
           n < order.size() && after.kernels.size() < KernelNeighbours::kMaxAhead;
           n = nextKernelAfter(order, n, &fragments)) {
        after.kernels.push_back(order[n]);
        after.fragmentsBefore.push_back(std::move(fragments));
        fragments.clear();
      }
      std::string tiling = lowerKernel(*inst, operands, result, after);
      recordOp(inst->name(), "kernel", first, tiling);
    } else if (isDataMovement(*inst)) {
      result = resultLeaves(*inst, region);
      lowerDataMovementOp(*inst, operands, result);
      recordOp(inst->name(), "dma", first);
    } else if (hlo::isCollective(opc)) {
      throw CannotLower::of(
          *inst, spmd_.devices < 2
                     ? std::string("collectives need several chips (the module names one device)")
                     : fmt::format("the spmd-collectives pass leaves no {} of this form",
                                   hlo::opcodeName(opc)));
    } else if (opc == HloOpcode::CustomCall) {
      throw CannotLower::of(*inst, fmt::format("custom-call target \"{}\" names no library kernel",
                                               inst->attrs().customCallTarget.value_or("")));
    } else if (opc == HloOpcode::Sort) {
      const int64_t n = inst->dimensions().size() == 1 && inst->operandCount() > 0
                            ? inst->operand(0)->shape().dims.at(size_t(inst->dimensions()[0]))
                            : -1;
      throw CannotLower::of(
          *inst, fmt::format("sort-expander sorts up to 1024 elements along the dimension "
                             "(this sort has {}) with a comparator compare(parameter 2k, "
                             "parameter 2k+1), direction LT or GT, on non-pred, non-f64 keys",
                             n));
    } else if (opc == HloOpcode::RngBitGenerator) {
      throw CannotLower::of(
          *inst,
          "rng-bit-generator-expander expands Philox (rng_default, rng_philox) into "
          "u32, s32, u64 or s64 values from a u64[2] or u64[3] state; ThreeFry and "
          "other value types are not lowered");
    } else {
      throw CannotLower::of(
          *inst, fmt::format("the back end has no lowering for {}", hlo::opcodeName(opc)));
    }
    value[inst] = std::move(result);
    // The kernel that waits for the write-backs in flight must run next.
    if (drainPending && drainFor_ == drainPending && m_.nextBundle() != first)
      throw ModuleLoweringError(fmt::format(
          "internal: %{} emitted code between %{} and %{}, which waits for its write-backs",
          inst->name(), drainFrom_, drainPending->name()));
    // The kernel whose first blocks are in flight must run right after the
    // one that started them (nextKernelAfter): nothing else may emit code.
    if (prefetchPending && prefetchFor_ == prefetchPending && !prefetchBetween &&
        m_.nextBundle() != first)
      throw ModuleLoweringError(fmt::format(
          "internal: %{} emitted code between %{} and %{}, whose first blocks are in flight",
          inst->name(), prefetchFrom_, prefetchPending->name()));
  }
  if (prefetchFor_)
    throw ModuleLoweringError(
        fmt::format("internal: %{} started the first blocks of %{}, which never ran", prefetchFrom_,
                    prefetchFor_->name()));
  if (drainFor_)
    throw ModuleLoweringError(
        fmt::format("internal: %{} left write-backs in flight for %{}, which never ran", drainFrom_,
                    drainFor_->name()));
  if (!comp.root()) throw ModuleLoweringError(fmt::format("%{} has no root", comp.name()));
  drainAsyncCollectives(control_, spmd_);  // a start whose done is gone
  return value[comp.root()];
}

void ModuleLowerer::finishEntry(const Leaves& root, const Shape& rootShape,
                                const std::vector<Leaves>& params) {
  std::vector<int64_t> taken;  // addresses already named in the table
  for (const isa::BufferDesc& b : table_) taken.push_back(int64_t(b.address));
  std::vector<InputOutputAlias> aliases;
  try {
    aliases = inputOutputAliases(module_);
  } catch (const std::invalid_argument& e) {
    throw ModuleLoweringError(fmt::format("module '{}': {}", module_.name(), e.what()));
  }
  // An output in the buffer of the parameter the caller donated to it (an
  // in-place update, BufferAssignment.h): input and output share the bytes.
  auto donated = [&](const std::vector<int64_t>& index, int64_t at) {
    std::optional<int64_t> p = donatedParameter(aliases, index);
    return p && *p >= 0 && *p < int64_t(params.size()) && params[size_t(*p)].size() == 1 &&
           params[size_t(*p)][0] == at;
  };
  auto leaves = shapeLeaves(rootShape);
  const HloInstruction* rootInst = module_.entry()->root();
  std::vector<std::pair<Leaves, Leaves>> copies;  // (from, to) single leaves
  size_t entryOp = SIZE_MAX;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Shape& s = leaves[i].second;
    if (!s.isArray() || root[i] < 0) continue;
    std::optional<isa::DType> dt = bufferDType(s.type);
    if (!dt)
      throw CannotLower::of(*rootInst,
                            fmt::format("an output of type {}: {}", hlo::primitiveTypeName(s.type),
                                        unsupportedBufferType(s.type)));
    uint64_t bytes = denseBytes(s);
    uint64_t at = uint64_t(root[i]);
    if (std::find(taken.begin(), taken.end(), root[i]) != taken.end() &&
        !donated(leaves[i].first, root[i])) {
      // A parameter, a constant or an earlier output: the output needs bytes of its own.
      at = allocateExtra(bytes);
      if (entryOp == SIZE_MAX) entryOp = control_.openOp("output-copies", "", "", 0);
      control_.copyHbm(uint64_t(root[i]), at, bytes, "output " + outputBufferName(leaves[i].first));
    }
    taken.push_back(int64_t(at));
    isa::BufferDesc b;
    b.name = outputBufferName(leaves[i].first);
    b.shape = s.dims;
    b.dtype = *dt;
    b.address = at;
    b.sizeBytes = bytes;
    b.role = isa::BufferRole::Output;
    table_.push_back(b);
  }
  if (entryOp != SIZE_MAX) control_.closeOp(entryOp);
  control_.drain();
}

void ModuleLowerer::lowerEntry() {
  const HloComputation* entry = module_.entry();
  if (!entry) throw ModuleLoweringError(fmt::format("module '{}' has no entry", module_.name()));
  entry_ = assignBuffers(module_, target_);
  if (!entry_.fits()) throw ModuleLoweringError(entry_.overflowMessage());
  extraTop_ = alignUp(uint64_t(entry_.peakBytes));
  Region region{&entry_, 0};

  // A megacore chip runs the program on core 0; the second core halts at
  // once. The compiler does not split kernels over the cores, so both cores
  // ran the whole program on the chip's shared HBM, and nothing orders one
  // core's accesses after the other's: HBM arbitration lets core 1 fall
  // behind (thousands of cycles over a module), and core 0 then wrote a later
  // temporary into a buffer whose region the buffer assignment reuses while
  // core 1 was still reading its old value; core 1 wrote the wrong result
  // last (v4: 9 of 17 outputs of the tiny prefill, lit check/megacore-reuse). A
  // collective's remote DMA signals the same core on the receiver, so each
  // collective run on both cores raced the same way. Until kernels are split
  // over core.id (design.md, "Megacore work split") one core runs the module,
  // each collective issued once per chip, as on a real chip.
  std::optional<uint32_t> otherCores;
  if (target_.cores > 1) {
    constexpr int kCoreReg = 2;
    control_.emit({makeInstruction(isa::Opcode::CoreId, {kCoreReg})});
    otherCores = control_.branchIfNonZero(kCoreReg);
  }

  if (packedWeights_) choosePackedLayouts();
  // Parameters: the program's inputs, named for `tpusim --input`.
  BufferNames names;
  std::vector<Leaves> params;
  for (int64_t n = 0; n < entry->parameterCount(); ++n) {
    const HloInstruction* p = entry->parameter(n);
    if (!p) throw ModuleLoweringError(fmt::format("the entry has no parameter({})", n));
    Leaves at = resultLeaves(*p, region);
    auto leaves = shapeLeaves(p->shape());
    std::string base = names.claim(parameterBufferName(*p), p->name());
    for (size_t i = 0; i < leaves.size(); ++i) {
      const Shape& s = leaves[i].second;
      if (!s.isArray()) continue;
      std::optional<isa::DType> dt = bufferDType(s.type);
      if (!dt)
        throw CannotLower::of(
            *p, fmt::format("a parameter of type {}: {}", hlo::primitiveTypeName(s.type),
                            unsupportedBufferType(s.type)));
      isa::BufferDesc b;
      b.name = base;
      for (int64_t k : leaves[i].first) b.name += fmt::format(".{}", k);
      b.shape = s.dims;
      b.dtype = *dt;
      b.address = uint64_t(at[i]);
      b.sizeBytes = denseBytes(s);
      b.role = isa::BufferRole::Input;
      if (auto it = packedParams_.find(p); it != packedParams_.end() && leaves.size() == 1)
        b.pairRows = uint32_t(it->second);
      table_.push_back(b);
    }
    params.push_back(at);
  }
  Leaves root;
  try {
    root = lowerComputation(*entry, params, 0, 0);
  } catch (const codegen::LinkError& e) {
    // Name the instruction: collective tables name only their collective.
    throw ModuleLoweringError(
        fmt::format("lowering %{} failed: {}", lowering_ ? lowering_->name() : "?", e.what()));
  }
  // Entry constants are named buffers too (role constant), for tpu-objdump.
  for (const HbmBuffer& b : entry_.buffers)
    if (b.kind == HbmBuffer::Kind::Constant && b.shape.isArray()) {
      std::optional<isa::DType> dt = bufferDType(b.shape.type);
      if (!dt) continue;
      isa::BufferDesc d;
      d.name = names.claim(b.instruction->name(), b.instruction->name());
      for (int64_t k : b.tupleIndex) d.name += fmt::format(".{}", k);
      d.shape = b.shape.dims;
      d.dtype = *dt;
      d.address = uint64_t(b.offset);
      d.sizeBytes = denseBytes(b.shape);
      d.role = isa::BufferRole::Constant;
      table_.push_back(d);
    }
  finishEntry(root, entry->root()->shape(), params);
  if (otherCores) {
    control_.drain();
    control_.patch(*otherCores, m_.nextBundle());  // the final halt
  }
  try {
    out_.program = codegen::finishModule(m_, table_);
  } catch (const codegen::LinkError& e) {
    throw ModuleLoweringError(fmt::format("linking the program failed: {}", e.what()));
  }
  out_.hbmBytes = extraTop_;
  out_.smemWords = m_.nextSmemWord();
  out_.buffers = entry_;
  out_.kernelsCompiled += kernelCache_.compiled();
  out_.kernelsDerived = kernelCache_.derived();
}

LoweredModule lowerModule(const hlo::HloModule& module, const TargetDescription& target,
                          const codegen::TargetInfo& codegenTarget, const LowerOptions& options) {
  LoweredModule out;
  ModuleLowerer lowerer(module, target, codegenTarget, out, options);
  try {
    lowerer.lowerEntry();
  } catch (const codegen::LinkError& e) {
    throw ModuleLoweringError(fmt::format("linking the program failed: {}", e.what()));
  }
  return out;
}

}  // namespace tpusim::lower
