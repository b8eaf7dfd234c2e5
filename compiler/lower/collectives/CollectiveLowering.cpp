#include "compiler/lower/collectives/CollectiveLowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "compiler/lower/CannotLower.h"
#include "compiler/lower/buffers/ShapeBytes.h"
#include "compiler/lower/collectives/SpmdPlan.h"
#include "isa/Isa.h"

namespace tpusim::lower {

using hlo::HloInstruction;
using hlo::HloOpcode;
using isa::Instruction;
using isa::Opcode;

namespace {

// Registers (the module's own code keeps nothing in registers across ops).
constexpr int kId = 2, kPeer = 3, kTmp = 4, kCount = 5, kZero = 6, kAddr = 7, kVal = 8;
constexpr int kQueue = 0, kLocalFlag = 0;

// `copied`: the own slot's local copy of an async all-gather (the kernels
// between its start and done use the kernel flags). `ringReady`: the ring
// permute's handshake, apart from the grid collectives' `ready`: a chip that
// has finished the ring's last step (its ring neighbours' data is all it
// needs) may already signal a grid neighbour that is still in the ring.
struct Flags {
  int barrier, arrived, sent, ready, copied, ringReady, firstStream;
};

// The flags of the async slots after the first sit below the base flags,
// the grid's stream flags below them.
int slotFlagCount(const SpmdLowering& spmd) { return kAsyncSlotFlags * (spmd.asyncSlots - 1); }
int gridStreamFlags(const SpmdLowering& spmd) {
  return spmd.reservedFlags - kSpmdBaseFlags - slotFlagCount(spmd);
}

Flags flagsOf(const SpmdLowering& spmd) {
  return {spmd.syncFlags - 1,
          spmd.syncFlags - 2,
          spmd.syncFlags - 3,
          spmd.syncFlags - 4,
          spmd.syncFlags - 5,
          spmd.syncFlags - 6,
          spmd.syncFlags - 7 - slotFlagCount(spmd)};
}

// The flags an async pair on `slot` sends, receives, copies and hand-shakes
// on: slot 0 the base ones (which synchronous collectives use too: they wait
// for every pair first), the others their own.
struct SlotFlags {
  int sent, arrived, copied, ringReady;
};
SlotFlags slotFlags(const SpmdLowering& spmd, int slot) {
  const Flags f = flagsOf(spmd);
  if (slot == 0) return {f.sent, f.arrived, f.copied, f.ringReady};
  const int top = spmd.syncFlags - 7 - kAsyncSlotFlags * (slot - 1);
  return {top, top - 1, top - 2, top - 3};
}

// reg = table[chip.id] (kId holds chip.id).
void loadFromTable(ControlCode& code, int64_t tableWord, int reg) {
  code.emit({makeInstruction(Opcode::SLi, {kAddr, tableWord})});
  code.emit({makeInstruction(Opcode::SAdd, {kAddr, kAddr, kId})});
  code.emit({makeInstruction(Opcode::SLd, {reg, kAddr, 0})});
}

// Every chip signals every other chip's barrier flag, then waits for n - 1.
void barrier(ControlCode& code, const SpmdLowering& spmd) {
  const Flags f = flagsOf(spmd);
  code.emit({makeInstruction(Opcode::SLi, {kCount, spmd.devices}),
             makeInstruction(Opcode::SLi, {kZero, 0})});
  code.emit({makeInstruction(Opcode::SAddI, {kPeer, kId, 0})});
  for (int64_t k = 1; k < spmd.devices; ++k) {
    code.emit({makeInstruction(Opcode::SAddI, {kPeer, kPeer, 1})});
    code.emit({makeInstruction(Opcode::SCmpEq, {kTmp, kPeer, kCount})});
    code.emit({makeInstruction(Opcode::SSel, {kPeer, kTmp, kZero, kPeer})});
    code.emit({makeInstruction(Opcode::SyncRemote, {kPeer, f.barrier, 1})});
  }
  code.emit({makeInstruction(Opcode::SyncWait, {f.barrier, spmd.devices - 1})});
}

void lowerDeviceId(ControlCode& code, uint64_t result) {
  // chip.id -> an SMEM word -> HBM.
  int64_t word = code.smemWords({0}, "device id word");
  isa::DmaDescriptor d;
  d.src = isa::MemorySpace::Smem;
  d.dst = isa::MemorySpace::Hbm;
  d.srcAddr = uint64_t(word) * 4;
  d.dstAddr = result;
  d.innerBytes = 4;
  int64_t desc = code.descriptorWords({d}, "DMA descriptor of the device id");
  code.emit({makeInstruction(Opcode::ChipId, {kId}), makeInstruction(Opcode::SLi, {kAddr, word})});
  code.emit({makeInstruction(Opcode::SSt, {kId, kAddr, 0})});
  code.emit({makeInstruction(Opcode::SLi, {kAddr, desc})});
  code.emit({makeInstruction(Opcode::Dma, {kAddr, kLocalFlag, kQueue})});
  code.emit({makeInstruction(Opcode::SyncWait, {kLocalFlag, 1})});
}

// The permute's (source, target) pairs; a malformed list is the op's lowering error.
std::vector<std::pair<int64_t, int64_t>> sourceTargetPairs(const HloInstruction& inst,
                                                           const SpmdLowering& spmd) {
  try {
    return permutePairs(inst, spmd.devices);
  } catch (const std::invalid_argument& e) {
    throw CannotLower::of(inst, e.what());
  }
}

// The barrier, then the sends (no wait); zeros where no pair targets this
// device. Returns the pending waits.
SpmdLowering::Pending startPermute(ControlCode& code, const HloInstruction& inst, uint64_t operand,
                                   uint64_t result, const SpmdLowering& spmd, int slot) {
  std::vector<std::pair<int64_t, int64_t>> pairs = sourceTargetPairs(inst, spmd);
  const uint64_t bytes = uint64_t(shapeBytes(inst.shape()));
  const SlotFlags f = slotFlags(spmd, slot);
  std::vector<uint32_t> target(size_t(spmd.devices), 0xFFFFFFFFu);
  std::vector<uint32_t> hasSource(size_t(spmd.devices), 0);
  for (auto [s, t] : pairs) {
    target[size_t(s)] = uint32_t(t);
    hasSource[size_t(t)] = 1;
  }
  std::vector<isa::DmaDescriptor> descs = ControlCode::hbmCopyDescriptors(operand, result, bytes);
  int64_t descWord = code.descriptorWords(descs, "remote DMA descriptors of %" + inst.name());
  SpmdLowering::Pending p;
  p.slot = slot;
  p.targetWord = code.smemWords(target, "permute targets of %" + inst.name());
  p.sourceWord = code.smemWords(hasSource, "permute sources of %" + inst.name());
  p.sends = p.arrivals = int64_t(descs.size());
  code.emit({makeInstruction(Opcode::ChipId, {kId})});
  barrier(code, spmd);
  // Zeros, when no pair targets this device.
  loadFromTable(code, p.sourceWord, kVal);
  uint32_t hasData = code.branchIfNonZero(kVal);
  code.copyHbm(spmd.allocateZeros(bytes), result, bytes, "zeros of %" + inst.name());
  code.patch(hasData, code.label());
  // Send, unless this device is no source.
  loadFromTable(code, p.targetWord, kPeer);
  code.emit({makeInstruction(Opcode::SLi, {kTmp, int64_t(0xFFFFFFFFu)})});
  code.emit({makeInstruction(Opcode::SCmpEq, {kTmp, kPeer, kTmp})});
  uint32_t skipSend = code.branchIfNonZero(kTmp);
  for (size_t i = 0; i < descs.size(); ++i) {
    code.emit(
        {makeInstruction(Opcode::SLi, {kAddr, descWord + int64_t(i) * isa::kDmaDescriptorWords})});
    code.emit({makeInstruction(Opcode::DmaRemote, {kAddr, kPeer, f.sent, f.arrived, kQueue})});
  }
  code.patch(skipSend, code.label());
  return p;
}

// The sends have left and the data has arrived (on the devices the tables select).
void finishPending(ControlCode& code, const SpmdLowering::Pending& p, const SpmdLowering& spmd) {
  if (p.rest) p.rest(code);
  const SlotFlags f = slotFlags(spmd, p.slot);
  code.emit({makeInstruction(Opcode::ChipId, {kId})});
  auto waitWhere = [&](int64_t tableWord, bool skipOnNone, int flag, int64_t count) {
    if (count == 0) return;
    uint32_t skip = 0;
    if (tableWord >= 0) {
      if (skipOnNone) {
        loadFromTable(code, tableWord, kPeer);
        code.emit({makeInstruction(Opcode::SLi, {kTmp, int64_t(0xFFFFFFFFu)})});
        code.emit({makeInstruction(Opcode::SCmpEq, {kTmp, kPeer, kTmp})});
        skip = code.branchIfNonZero(kTmp);
      } else {
        loadFromTable(code, tableWord, kVal);
        skip = code.branchIfZero(kVal);
      }
    }
    code.emit({makeInstruction(Opcode::SyncWait, {flag, count})});
    if (tableWord >= 0) code.patch(skip, code.label());
  };
  waitWhere(p.targetWord, true, f.sent, p.sends);
  waitWhere(p.sourceWord, false, f.arrived, p.arrivals);
  waitWhere(-1, false, f.copied, p.copies);
}

void lowerPermute(ControlCode& code, const HloInstruction& inst, uint64_t operand, uint64_t result,
                  const SpmdLowering& spmd) {
  finishPending(code, startPermute(code, inst, operand, result, spmd, 0), spmd);
}

// The handshake, then the sends (no wait); returns the pending waits.
SpmdLowering::Pending startRingPermute(ControlCode& code, const HloInstruction& inst,
                                       uint64_t operand, uint64_t result, const SpmdLowering& spmd,
                                       int slot) {
  std::vector<std::pair<int64_t, int64_t>> pairs = sourceTargetPairs(inst, spmd);
  std::vector<uint32_t> target(size_t(spmd.devices), 0xFFFFFFFFu), source = target;
  for (auto [s, t] : pairs) {
    target[size_t(s)] = uint32_t(t);
    source[size_t(t)] = uint32_t(s);
  }
  for (int64_t d = 0; d < spmd.devices; ++d)
    if (target[size_t(d)] == 0xFFFFFFFFu || source[size_t(d)] == 0xFFFFFFFFu)
      throw CannotLower::of(inst, fmt::format("device {} has no source or no target: the pairs "
                                              "are not a ring",
                                              d));
  const uint64_t row = uint64_t(shapeBytes(inst.shape())) / 2;
  const SlotFlags f = slotFlags(spmd, slot);
  std::vector<isa::DmaDescriptor> descs = ControlCode::hbmCopyDescriptors(operand, result, row);
  std::vector<isa::DmaDescriptor> back =
      ControlCode::hbmCopyDescriptors(operand + row, result + row, row);
  descs.insert(descs.end(), back.begin(), back.end());
  const size_t perRow = back.size();
  int64_t descWord = code.descriptorWords(descs, "ring permute descriptors of %" + inst.name());
  int64_t targetWord = code.smemWords(target, "ring permute targets of %" + inst.name());
  int64_t sourceWord = code.smemWords(source, "ring permute sources of %" + inst.name());
  code.emit({makeInstruction(Opcode::ChipId, {kId})});
  // Ready: the two devices that send to this one (its source and its target).
  loadFromTable(code, sourceWord, kPeer);
  code.emit({makeInstruction(Opcode::SyncRemote, {kPeer, f.ringReady, 1})});
  loadFromTable(code, targetWord, kVal);
  code.emit({makeInstruction(Opcode::SyncRemote, {kVal, f.ringReady, 1})});
  code.emit({makeInstruction(Opcode::SyncWait, {f.ringReady, 2})});
  for (size_t i = 0; i < descs.size(); ++i) {
    code.emit(
        {makeInstruction(Opcode::SLi, {kAddr, descWord + int64_t(i) * isa::kDmaDescriptorWords})});
    code.emit({makeInstruction(Opcode::DmaRemote,
                               {kAddr, i < perRow ? kVal : kPeer, f.sent, f.arrived, kQueue})});
  }
  SpmdLowering::Pending p;
  p.slot = slot;
  p.sends = p.arrivals = int64_t(descs.size());
  return p;
}

// The collective's replica groups; a malformed list is the user's error, named by the op.
DeviceGroups groupsOrFail(const HloInstruction& inst, const SpmdLowering& spmd) {
  try {
    return collectiveGroups(inst, spmd.devices);
  } catch (const std::invalid_argument& e) {
    throw CannotLower::of(inst, e.what());
  }
}

// The first of a synchronous grid all-gather's link flags (below its stream
// flags; -1: not reserved). Where a grid reduce-scatter's flags are reserved,
// they are the ones its links use (left at zero; its credits may not be),
// else the ones spmdReservedFlags reserves for all-gathers over rings.
int gridGatherLinkFlags(const SpmdLowering& spmd, int dims) {
  const Flags f = flagsOf(spmd);
  const int streamFlags = 2 * dims * dims;
  if (streamFlags + gridReduceCreditFlags(size_t(dims)) <= gridStreamFlags(spmd))
    return f.firstStream - streamFlags - 2 * dims - 1;
  if (streamFlags + 2 * dims <= gridStreamFlags(spmd)) return f.firstStream - streamFlags;
  return -1;
}

// The all-gather: the grid rings (complete, as they forward every block from
// the scalar unit) or the one-shot exchange; with `async`, the exchange's
// barrier, sends and own copy only, returning the waits left (none after the
// rings).
SpmdLowering::Pending startAllGather(ControlCode& code, const HloInstruction& inst,
                                     uint64_t operand, uint64_t result, const SpmdLowering& spmd,
                                     bool async, int slot) {
  DeviceGroups groups = groupsOrFail(inst, spmd);
  const int64_t n = int64_t(groups[0].size());
  const uint64_t chunk = uint64_t(shapeBytes(inst.operand(0)->shape()));
  if (chunk * uint64_t(n) != uint64_t(shapeBytes(inst.shape())))
    throw CannotLower::of(inst, fmt::format("the result is not {} operands", n));
  const Flags f = flagsOf(spmd);
  // The pipelined rings when the groups are sub-grids of the slice, their
  // stream flags are reserved and the estimate says they are faster than the
  // exchange.
  if (spmd.chip && n > 2) {
    if (std::optional<std::vector<int>> dims = gridGatherDims(groups, spmd.slice)) {
      GridGather g{groups, spmd.slice, *dims, chunk, operand, result, {}};
      double oneShot = oneShotGatherCycles(chunk, groups, spmd.slice, *spmd.chip);
      const int streams = 2 * int(dims->size() * dims->size());
      if (streams <= gridStreamFlags(spmd) && gridAllGatherFits(g) &&
          gridAllGatherCycles(g, *spmd.chip) < oneShot) {
        if (!async) {
          GridGatherFlags gf{f.ready, f.sent, kLocalFlag, f.firstStream};
          gf.firstLink = gridGatherLinkFlags(spmd, int(dims->size()));
          emitGridAllGather(code, g, *spmd.chip, gf);
          return {};
        }
        const SlotFlags sf = slotFlags(spmd, slot);
        SpmdLowering::Pending p;
        p.slot = slot;
        p.rest =
            beginGridAllGather(code, g, *spmd.chip, {f.ready, sf.sent, sf.copied, f.firstStream});
        return p;
      }
    }
  }
  // Per position p: the descriptors copying the operand to slot p.
  std::vector<isa::DmaDescriptor> descs;
  size_t perSlot = 0;
  for (int64_t p = 0; p < n; ++p) {
    std::vector<isa::DmaDescriptor> d =
        ControlCode::hbmCopyDescriptors(operand, result + uint64_t(p) * chunk, chunk);
    perSlot = d.size();
    descs.insert(descs.end(), d.begin(), d.end());
  }
  int64_t descWord = code.descriptorWords(descs, "all-gather DMA descriptors of %" + inst.name());
  const SlotFlags sf = slotFlags(spmd, async ? slot : 0);
  // Per device: its slot's first descriptor word, then its k-th peer.
  std::vector<uint32_t> slotDesc(size_t(spmd.devices));
  std::vector<std::vector<uint32_t>> peer(size_t(n), std::vector<uint32_t>(size_t(spmd.devices)));
  for (const auto& g : groups)
    for (int64_t p = 0; p < n; ++p) {
      int64_t d = g[size_t(p)];
      slotDesc[size_t(d)] =
          uint32_t(descWord + p * int64_t(perSlot) * int64_t(isa::kDmaDescriptorWords));
      for (int64_t k = 1; k < n; ++k) peer[size_t(k)][size_t(d)] = uint32_t(g[size_t((p + k) % n)]);
    }
  int64_t slotWord = code.smemWords(slotDesc, "all-gather slots of %" + inst.name());
  std::vector<int64_t> peerWords(size_t(n), 0);
  for (int64_t k = 1; k < n; ++k)
    peerWords[size_t(k)] = code.smemWords(peer[size_t(k)], "all-gather peers of %" + inst.name());

  code.emit({makeInstruction(Opcode::ChipId, {kId})});
  barrier(code, spmd);
  loadFromTable(code, slotWord, kVal);
  for (int64_t k = 1; k < n; ++k) {
    loadFromTable(code, peerWords[size_t(k)], kPeer);
    for (size_t i = 0; i < perSlot; ++i) {
      code.emit(
          {makeInstruction(Opcode::SAddI, {kAddr, kVal, int64_t(i * isa::kDmaDescriptorWords)})});
      code.emit({makeInstruction(Opcode::DmaRemote, {kAddr, kPeer, sf.sent, sf.arrived, kQueue})});
    }
  }
  // The own slot is a local copy; async, on a flag of the collectives' own
  // (the kernels between the start and the done use the kernel flags).
  const int copyFlag = async ? sf.copied : kLocalFlag;
  for (size_t i = 0; i < perSlot; ++i) {
    code.emit(
        {makeInstruction(Opcode::SAddI, {kAddr, kVal, int64_t(i * isa::kDmaDescriptorWords)})});
    code.emit({makeInstruction(Opcode::Dma, {kAddr, copyFlag, kQueue})});
  }
  const int64_t remote = (n - 1) * int64_t(perSlot);
  SpmdLowering::Pending p;
  if (async) {
    p.slot = slot;
    p.sends = p.arrivals = remote;
    p.copies = int64_t(perSlot);
    return p;
  }
  if (remote > 0) {
    code.emit({makeInstruction(Opcode::SyncWait, {f.sent, remote})});
    code.emit({makeInstruction(Opcode::SyncWait, {f.arrived, remote})});
  }
  code.emit({makeInstruction(Opcode::SyncWait, {kLocalFlag, int64_t(perSlot)})});
  return p;
}

void lowerGridReduceScatter(ControlCode& code, const HloInstruction& inst, uint64_t operand,
                            uint64_t result, const SpmdLowering& spmd) {
  DeviceGroups groups = groupsOrFail(inst, spmd);
  const hlo::NamedAttr* reducer = inst.findGeneric(std::string(kGridReduceOpAttr));
  std::optional<HloOpcode> op = reducer ? hlo::parseOpcode(reducer->value.s) : std::nullopt;
  if (!op) throw CannotLower::of(inst, fmt::format("needs {}=<an HLO opcode>", kGridReduceOpAttr));
  if (!spmd.chip) throw CannotLower::of(inst, "needs the slice of a preset's torus");
  std::optional<std::vector<int>> dims = gridGatherDims(groups, spmd.slice);
  if (!dims) throw CannotLower::of(inst, "the groups are not sub-grids of the slice");
  const uint64_t share = uint64_t(shapeBytes(inst.shape()));
  GridReduce g{groups, spmd.slice, *dims, share, operand, result, inst.shape().type, *op, {}};
  if (uint64_t(shapeBytes(inst.operand(0)->shape())) != g.chunk * uint64_t(groups[0].size()))
    throw CannotLower::of(inst, fmt::format("the operand is not {} shares", groups[0].size()));
  if (!gridReduceScatterFits(g, *spmd.chip))
    throw CannotLower::of(inst, "the plan does not fit (type, op, sizes or addresses)");
  if (2 * int(dims->size() * dims->size()) > gridStreamFlags(spmd))
    throw CannotLower::of(inst, "internal: the grid's stream flags are not reserved");
  std::vector<uint64_t> scratch;
  for (int i = 0; i < gridReduceScratchBuffers(g); ++i)
    scratch.push_back(spmd.allocateScratch(g.chunk * uint64_t(groups[0].size())));
  const Flags f = flagsOf(spmd);
  GridReduceFlags flags;
  flags.ready = f.ready;
  flags.sent[0] = f.sent;
  flags.sent[1] = f.arrived;  // free: every other collective has finished
  flags.local = kLocalFlag;
  flags.firstStream = f.firstStream;
  // The landing slots' credits sit below the stream flags (spmdReservedFlags
  // reserves them with a grid reduce-scatter); without them pieces land in HBM.
  const int streamFlags = 2 * int(dims->size() * dims->size());
  if (streamFlags + gridReduceCreditFlags(dims->size()) <= gridStreamFlags(spmd))
    flags.firstCredit = f.firstStream - streamFlags;
  emitGridReduceScatter(code, g, *spmd.chip, scratch, flags);
}

}  // namespace

bool isSpmdPrimitive(const HloInstruction& inst) {
  switch (inst.opcode()) {
    case HloOpcode::PartitionId:
    case HloOpcode::ReplicaId:
      return true;
    case HloOpcode::CustomCall: {
      std::string target = inst.attrs().customCallTarget.value_or("");
      if (target == kPermuteStartTarget)
        return inst.operandCount() == 1 && inst.shape().isArray() &&
               inst.operand(0)->shape() == inst.shape();
      if (target == kPermuteDoneTarget || target == kAllGatherDoneTarget)
        return inst.operandCount() == 2 && inst.shape().isArray() &&
               inst.operand(0)->shape() == inst.shape();
      if (target == kAllGatherStartTarget)
        return inst.operandCount() == 1 && inst.shape().isArray() && inst.shape().rank() >= 1 &&
               inst.operand(0)->shape().isArray() &&
               inst.operand(0)->shape().rank() == inst.shape().rank();
      if (target == kGridReduceScatterTarget)
        return inst.operandCount() == 1 && inst.shape().isArray() && inst.shape().rank() == 2 &&
               inst.shape().dims[0] == 1 && inst.operand(0)->shape().isArray() &&
               inst.operand(0)->shape().rank() == 2;
      return target == "tpusim$device-id" ||
             ((target == kRingPermuteTarget || target == kRingPermuteStartTarget) &&
              inst.operandCount() == 1 && inst.shape().isArray() && inst.shape().rank() >= 1 &&
              inst.shape().dims[0] == 2);
    }
    case HloOpcode::CollectivePermute:
      return inst.operandCount() == 1 && inst.shape().isArray();
    case HloOpcode::AllGather:
      return inst.operandCount() == 1 && inst.shape().isArray() &&
             inst.dimensions() == std::vector<int64_t>{0};
    default:
      return false;
  }
}

void drainAsyncCollectives(ControlCode& code, SpmdLowering& spmd) {
  for (const SpmdLowering::Pending& p : spmd.pending) finishPending(code, p, spmd);
  spmd.pending.clear();
}

void finishAsyncCollective(ControlCode& code, SpmdLowering& spmd, const HloInstruction* start) {
  for (auto it = spmd.pending.begin(); it != spmd.pending.end(); ++it)
    if (it->start == start) {
      finishPending(code, *it, spmd);
      spmd.pending.erase(it);
      return;
    }
}

int spmdAsyncSlots(const hlo::HloModule& module) {
  int most = 1;
  for (const auto& comp : module.computations()) {
    int starts = 0;
    for (const auto& inst : comp->instructions()) {
      const std::string target = inst->attrs().customCallTarget.value_or("");
      const HloOpcode op = inst->opcode();
      starts += target == kPermuteStartTarget || target == kRingPermuteStartTarget ||
                target == kAllGatherStartTarget || op == HloOpcode::CollectivePermuteStart ||
                op == HloOpcode::AllGatherStart || op == HloOpcode::AllReduceStart;
    }
    most = std::max(most, std::min(starts, kMaxAsyncInFlight));
  }
  return most;
}

int spmdReservedFlags(const hlo::HloModule& module, const target::ChipConfig& chip) {
  int64_t devices = 1;
  try {
    devices = spmdDeviceCount(module);
  } catch (const std::invalid_argument&) {
    return 0;  // the lowering reports it
  }
  if (devices < 2) return 0;
  std::vector<int> slice;
  try {
    slice = spmdSlice(devices, chip.ici);
  } catch (const std::invalid_argument&) {
    // No slice: every all-gather is the one-shot exchange.
  }
  bool any = false;
  size_t gridDims = 0, reduceDims = 0, ringDims = 0;
  for (const auto& comp : module.computations())
    for (const auto& inst : comp->instructions()) {
      const std::string target = inst->attrs().customCallTarget.value_or("");
      if (!isSpmdPrimitive(*inst) || inst->opcode() == HloOpcode::PartitionId ||
          inst->opcode() == HloOpcode::ReplicaId || target == "tpusim$device-id")
        continue;
      any = true;
      const bool grid = inst->opcode() == HloOpcode::AllGather || target == kAllGatherStartTarget ||
                        target == kGridReduceScatterTarget;
      if (!grid || slice.empty()) continue;
      try {
        if (std::optional<std::vector<int>> dims =
                gridGatherDims(collectiveGroups(*inst, devices), slice)) {
          gridDims = std::max(gridDims, dims->size());
          // Every dimension a ring: a synchronous all-gather's paced links.
          if (std::all_of(dims->begin(), dims->end(),
                          [&](int d) { return sliceWraps(slice[size_t(d)], chip.ici); }))
            ringDims = std::max(ringDims, dims->size());
          if (target == kGridReduceScatterTarget) reduceDims = std::max(reduceDims, dims->size());
        }
      } catch (const std::invalid_argument&) {
        // A malformed group list: the op's lowering names it.
      }
    }
  return any ? kSpmdBaseFlags + kAsyncSlotFlags * (spmdAsyncSlots(module) - 1) +
                   2 * int(gridDims * gridDims) +
                   std::max(reduceDims > 0 ? gridReduceCreditFlags(reduceDims) : 0,
                            2 * int(ringDims))
             : 0;
}

void lowerSpmdPrimitive(ControlCode& code, const HloInstruction& inst,
                        const std::vector<uint64_t>& operands, uint64_t result,
                        SpmdLowering& spmd) {
  if (spmd.devices < 2 && inst.opcode() != HloOpcode::PartitionId &&
      inst.opcode() != HloOpcode::ReplicaId && inst.opcode() != HloOpcode::CustomCall)
    throw CannotLower::of(inst,
                          "a collective on a single device (the spmd-collectives pass "
                          "removes those; was it run?)");
  const std::string target = inst.attrs().customCallTarget.value_or("");
  size_t op = code.openOp(inst.name(), inst.name(), "", 0);
  if (target == kPermuteDoneTarget || target == kAllGatherDoneTarget) {
    // The waits, unless another op drained them.
    finishAsyncCollective(code, spmd, inst.operand(0));
    code.closeOp(op);
    return;
  }
  const bool start = target == kPermuteStartTarget || target == kRingPermuteStartTarget ||
                     target == kAllGatherStartTarget;
  if (start) {
    // A free slot, else the oldest pair's; an all-gather (it may take the
    // grid rings) after a grid pair's done.
    for (auto it = spmd.pending.begin(); it != spmd.pending.end();)
      if (int(spmd.pending.size()) >= spmd.asyncSlots ||
          (target == kAllGatherStartTarget && it->rest)) {
        finishPending(code, *it, spmd);
        it = spmd.pending.erase(it);
      } else {
        ++it;
      }
    int slot = 0;
    while (std::any_of(spmd.pending.begin(), spmd.pending.end(),
                       [&](const SpmdLowering::Pending& p) { return p.slot == slot; }))
      ++slot;
    SpmdLowering::Pending p =
        target == kPermuteStartTarget ? startPermute(code, inst, operands.at(0), result, spmd, slot)
        : target == kRingPermuteStartTarget
            ? startRingPermute(code, inst, operands.at(0), result, spmd, slot)
            : startAllGather(code, inst, operands.at(0), result, spmd, true, slot);
    p.start = &inst;
    if (p.sends > 0 || p.arrivals > 0 || p.copies > 0 || p.rest) spmd.pending.push_back(p);
    code.closeOp(op);
    return;
  }
  if (inst.opcode() != HloOpcode::PartitionId && inst.opcode() != HloOpcode::ReplicaId &&
      target != "tpusim$device-id")
    drainAsyncCollectives(code, spmd);
  switch (inst.opcode()) {
    case HloOpcode::CollectivePermute:
      lowerPermute(code, inst, operands.at(0), result, spmd);
      break;
    case HloOpcode::AllGather:
      startAllGather(code, inst, operands.at(0), result, spmd, false, 0);
      break;
    case HloOpcode::CustomCall:
      if (target == kRingPermuteTarget) {
        SpmdLowering::Pending p = startRingPermute(code, inst, operands.at(0), result, spmd, 0);
        const SlotFlags f = slotFlags(spmd, 0);
        code.emit({makeInstruction(Opcode::SyncWait, {f.sent, p.sends})});
        code.emit({makeInstruction(Opcode::SyncWait, {f.arrived, p.arrivals})});
        break;
      }
      if (target == kGridReduceScatterTarget) {
        lowerGridReduceScatter(code, inst, operands.at(0), result, spmd);
        break;
      }
      lowerDeviceId(code, result);
      break;
    default:
      lowerDeviceId(code, result);
      break;
  }
  code.closeOp(op);
}

}  // namespace tpusim::lower
