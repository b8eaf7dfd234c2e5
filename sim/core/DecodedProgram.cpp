#include "sim/core/DecodedProgram.h"

#include "isa/SharedCode.h"

#include <fmt/format.h>

#include <algorithm>

namespace tpusim::sim {
namespace {

using isa::OperandClass;
using isa::OperandKind;

int enabledSlots(const target::ChipConfig& chip, isa::SlotKind kind) {
  switch (kind) {
    case isa::SlotKind::Scalar:
      return int(chip.core.scalar_slots);
    case isa::SlotKind::VectorAlu:
      return int(chip.core.valu_slots);
    case isa::SlotKind::VectorLoad:
      return int(chip.core.vld_slots);
    case isa::SlotKind::VectorStore:
      return int(chip.core.vst_slots);
    default:
      return isa::slotInfo(kind).count;
  }
}

// Whether one operand value exists on the preset (a compare per operand: the
// message is built only for a bundle that has a problem).
bool fitsChip(OperandClass cls, int64_t value, const target::ChipConfig& chip) {
  switch (cls) {
    case OperandClass::VectorReg:
      // A 256-wide MXU reads/writes va+1 as well; that is checked at execution.
      return value < chip.core.vector_regs;
    case OperandClass::Flag:
      return value < chip.core.sync_flags;
    case OperandClass::Mxu:
      return value < chip.mxu.count;
    case OperandClass::Acc:
      return value < chip.mxu.acc_slots;
    case OperandClass::Queue:
      return value < chip.dma.queues;
    default:
      return true;
  }
}

// The problem of an operand fitsChip refused.
std::string chipProblem(OperandClass cls, int64_t value, const target::ChipConfig& chip) {
  switch (cls) {
    case OperandClass::VectorReg:
      return fmt::format("v{} does not exist on this chip ({} vector registers)", value,
                         chip.core.vector_regs);
    case OperandClass::Flag:
      return fmt::format("f{} does not exist on this chip ({} sync flags)", value,
                         chip.core.sync_flags);
    case OperandClass::Mxu:
      return fmt::format("mxu{} does not exist on this chip ({} MXUs)", value, chip.mxu.count);
    case OperandClass::Acc:
      return fmt::format("a{} does not exist on this chip ({} result slots)", value,
                         chip.mxu.acc_slots);
    case OperandClass::Queue:
      return fmt::format("q{} does not exist on this chip ({} DMA queues)", value, chip.dma.queues);
    default:
      return "";
  }
}

int scoreboardIndex(OperandClass cls, int64_t value) {
  switch (cls) {
    case OperandClass::ScalarReg:
      return kScoreboardScalarBase + int(value);
    case OperandClass::VectorReg:
      return kScoreboardVectorBase + int(value);
    case OperandClass::MaskReg:
      return kScoreboardMaskBase + int(value);
    default:
      return -1;
  }
}

}  // namespace

int rowOffsets(const DecodedOp& op, int64_t* offsets) {
  int n = 0;
  for (int s = 0; s < isa::kSublanes; ++s) {
    if (op.op == isa::Opcode::VStM)
      offsets[n++] = op.imm[0] + s;
    else if ((op.imm[2] >> s) & 1)
      offsets[n++] = op.imm[0] + s * op.imm[1];
  }
  return n;
}

int64_t bankConflictExtra(int64_t* rows, int n, int64_t banks) {
  // Insertion sort: each op's rows come in order, so this is near-linear on
  // the few rows (8 per load or store) of a bundle.
  for (int i = 1; i < n; ++i) {
    const int64_t v = rows[i];
    int j = i;
    for (; j > 0 && rows[j - 1] > v; --j) rows[j] = rows[j - 1];
    rows[j] = v;
  }
  int64_t worst = 0;
  if (banks <= 64) {
    // Each distinct row counts the distinct rows before it in its bank.
    uint8_t count[64] = {};
    for (int i = 0; i < n; ++i) {
      if (i > 0 && rows[i] == rows[i - 1]) continue;
      worst = std::max<int64_t>(worst, count[((rows[i] % banks) + banks) % banks]++);
    }
    return worst;
  }
  n = int(std::unique(rows, rows + n) - rows);
  std::vector<int64_t> bank(size_t(n), 0);
  for (int i = 0; i < n; ++i) bank[size_t(i)] = ((rows[i] % banks) + banks) % banks;
  std::sort(bank.begin(), bank.end());
  int64_t run = 0;
  for (int i = 0; i < n; ++i) {
    run = (i > 0 && bank[size_t(i)] == bank[size_t(i - 1)]) ? run + 1 : 0;
    worst = std::max(worst, run);
  }
  return worst;
}

std::string slotName(int slotInstance) {
  const isa::SlotInstance& s = isa::kSlotLayout[slotInstance];
  return fmt::format("{}{}", isa::slotInfo(s.kind).name, s.index);
}

namespace {

// Appends the decoded form of `bundle` to out.bundles (its ops to out.ops)
// and returns its index.
uint32_t decodeBundle(const isa::Bundle& bundle, const target::ChipConfig& chip,
                      DecodedProgram& out) {
  out.bundles.emplace_back();
  DecodedBundle& db = out.bundles.back();
  db.firstOp = uint32_t(out.ops.size());
  bool written[kScoreboardSize] = {};
  int transcendental = 0;
  for (int si = 0; si < isa::kNumSlotInstances; ++si) {
    const isa::Instruction& inst = bundle.slots[si];
    if (inst.empty()) continue;
    const isa::OpcodeInfo& info = inst.info();
    auto invalid = [&](std::string why) {
      if (db.invalid.empty()) {
        db.invalid = std::move(why);
        db.invalidSlot = slotName(si);
      }
    };
    // In place: no 184-byte copy per op (the reference is taken after the
    // op's own emplace, so growth of `ops` is safe).
    DecodedOp& op = out.ops.emplace_back();
    op.op = inst.op;
    op.slot = info.slot;
    op.slotInstance = uint8_t(si);
    op.slotIndex = uint8_t(isa::kSlotLayout[si].index);
    op.latency = int32_t(chip.latency.of(info.latency));
    if (info.slot != isa::kSlotLayout[si].kind)
      invalid(fmt::format("{} is not a {} op", info.mnemonic,
                          isa::slotInfo(isa::kSlotLayout[si].kind).name));
    if (op.slotIndex >= enabledSlots(chip, info.slot))
      invalid(fmt::format("slot {} is not enabled on this chip ({} {} slots)", slotName(si),
                          enabledSlots(chip, info.slot), isa::slotInfo(info.slot).name));
    int numImm = 0, numUnit = 0;
    for (int k = 0; k < info.numOperands; ++k) {
      OperandKind kind = info.operands[k];
      const isa::OperandInfo& oi = isa::operandInfo(kind);
      int64_t value = inst.operands[k];
      if (!fitsChip(oi.cls, value, chip)) invalid(chipProblem(oi.cls, value, chip));
      int sb = scoreboardIndex(oi.cls, value);
      bool reads = oi.access == isa::Access::Read || oi.access == isa::Access::ReadWrite;
      bool writes = oi.access == isa::Access::Write || oi.access == isa::Access::ReadWrite;
      switch (oi.cls) {
        case OperandClass::ScalarReg:
          if (reads) op.ssrc[op.numS++] = uint8_t(value);
          break;
        case OperandClass::VectorReg:
          if (reads) op.vsrc[op.numV++] = uint8_t(value);
          break;
        case OperandClass::MaskReg:
          if (reads) op.msrc[op.numM++] = uint8_t(value);
          break;
        case OperandClass::Flag:
        case OperandClass::Mxu:
        case OperandClass::Acc:
        case OperandClass::Queue:
          (numUnit == 0 ? op.unit : numUnit == 1 ? op.unit2 : op.unit3) = value;
          ++numUnit;
          break;
        default:
          if (numImm < 3) op.imm[numImm++] = value;
          break;
      }
      if (sb >= 0 && reads && op.numReads < 4) op.reads[op.numReads++] = uint8_t(sb);
      if (sb >= 0 && writes) {
        op.dst = int16_t(sb);
        if (written[sb])
          invalid(fmt::format(
              "two writes to one register ({}) in one bundle",
              sb >= kScoreboardMaskBase     ? fmt::format("m{}", sb - kScoreboardMaskBase)
              : sb >= kScoreboardVectorBase ? fmt::format("v{}", sb - kScoreboardVectorBase)
                                            : fmt::format("s{}", sb)));
        written[sb] = true;
      }
    }
    // mxu.pop on a 256-wide MXU writes vd and vd+1.
    if (inst.op == isa::Opcode::MxuPop && chip.mxu.size > 128 && op.dst >= 0 &&
        op.dst + 1 - kScoreboardVectorBase >= chip.core.vector_regs)
      invalid(fmt::format("mxu.pop on a {}-wide MXU writes v{} and v{}, which does not exist",
                          chip.mxu.size, op.dst - kScoreboardVectorBase,
                          op.dst + 1 - kScoreboardVectorBase));
    if (isa::opcodeInfo(inst.op).latency == isa::LatencyClass::Branch) {
      if (db.hasBranch) invalid("two branches in one bundle");
      db.hasBranch = true;
    }
    if (info.latency == isa::LatencyClass::VectorTrans && ++transcendental > 1)
      invalid("two transcendental ops in one bundle (the core has one transcendental unit)");
    if (chip.mxu.size > isa::kLanes) {
      if (inst.op == isa::Opcode::MxuPop && op.dst + 1 < kScoreboardMaskBase)
        op.wideRead = int16_t(op.dst + 1);
      if (op.slot == isa::SlotKind::MatrixPush && op.numV > 0 &&
          kScoreboardVectorBase + op.vsrc[0] + 1 < kScoreboardMaskBase)
        op.wideRead = int16_t(kScoreboardVectorBase + op.vsrc[0] + 1);
    }
    switch (op.slot) {
      case isa::SlotKind::Scalar:
      case isa::SlotKind::VectorStore:
        break;
      case isa::SlotKind::VectorAlu:
        op.unitCheck = info.latency == isa::LatencyClass::VectorTrans;
        break;
      default:
        op.unitCheck = true;
        break;
    }
    switch (inst.op) {
      case isa::Opcode::Dma:
      case isa::Opcode::DmaRemote:
      case isa::Opcode::SyncRemote:
      case isa::Opcode::SyncWait:
      case isa::Opcode::SyncRead:  // sees every DMA completion before its cycle
      case isa::Opcode::SyncSet:   // overwrites the flag after those completions, not before
      case isa::Opcode::Fence:
      case isa::Opcode::Halt:
        db.needsSync = true;
        break;
      default:
        break;
    }
  }
  db.numOps = uint8_t(out.ops.size() - db.firstOp);
  // The issue record (DecodedBundle): registers once each, unit checks, writes.
  static_assert(isa::kNumSlotInstances <= 32, "unitOps holds one bit per op");
  static_assert(kScoreboardSize <= 256, "scoreboard entries are bytes");
  bool listed[kScoreboardSize] = {};
  db.firstReg = uint32_t(out.regs.size());
  db.firstWrite = uint32_t(out.writes.size());
  auto listReg = [&](int sb) {
    if (sb < 0 || listed[sb]) return;
    listed[sb] = true;
    out.regs.push_back(uint8_t(sb));
  };
  const bool widePop = chip.mxu.size > isa::kLanes;
  for (uint32_t i = 0; i < db.numOps; ++i) {
    const DecodedOp& op = out.ops[db.firstOp + i];
    for (int r = 0; r < op.numReads; ++r) listReg(op.reads[r]);
    listReg(op.dst);
    listReg(op.wideRead);
    if (op.unitCheck) db.unitOps |= uint32_t(1) << i;
    if (op.dst < 0) continue;
    out.writes.push_back({uint8_t(op.dst), op.latency});
    if (widePop && op.op == isa::Opcode::MxuPop && op.dst + 1 < kScoreboardMaskBase)
      out.writes.push_back({uint8_t(op.dst + 1), op.latency});
  }
  db.numRegs = uint8_t(out.regs.size() - db.firstReg);
  db.numWrites = uint8_t(out.writes.size() - db.firstWrite);
  // Sized for every slot (an invalid bundle may hold a load in any slot).
  int64_t readRows[isa::kNumSlotInstances * isa::kSublanes];
  int64_t writeRows[isa::kNumSlotInstances * isa::kSublanes];
  int nr = 0, nw = 0, readBase = -1, writeBase = -1;
  for (uint32_t i = db.firstOp; i < out.ops.size(); ++i) {
    DecodedOp& op = out.ops[i];
    if (op.slot != isa::SlotKind::VectorLoad && op.slot != isa::SlotKind::VectorStore) continue;
    bool load = op.slot == isa::SlotKind::VectorLoad;
    (load ? db.numLoads : db.numStores) += 1;
    int n = rowOffsets(op, op.rowOff);
    op.numRows = uint8_t(n);
    for (int s = 0, k = 0; s < isa::kSublanes; ++s)
      if (op.op == isa::Opcode::VStM || ((op.imm[2] >> s) & 1)) op.rowSublane[k++] = uint8_t(s);
    if (n > 0) {
      op.rowLo = *std::min_element(op.rowOff, op.rowOff + n);
      op.rowHi = *std::max_element(op.rowOff, op.rowOff + n);
    }
    int& base = load ? readBase : writeBase;
    if (base >= 0 && base != op.ssrc[0]) db.conflictStatic = false;
    base = op.ssrc[0];
    int64_t* rows = load ? readRows + nr : writeRows + nw;
    std::copy(op.rowOff, op.rowOff + n, rows);
    (load ? nr : nw) += n;
  }
  if (db.conflictStatic && (nr > 1 || nw > 1))
    db.staticConflict = int32_t(std::max(bankConflictExtra(readRows, nr, chip.vmem.banks),
                                         bankConflictExtra(writeRows, nw, chip.vmem.banks)));
  return uint32_t(out.bundles.size() - 1);
}

}  // namespace

DecodedProgram decodeProgram(const isa::Program& program, const target::ChipConfig& chip) {
  DecodedProgram out;
  const uint64_t size = isa::codeSize(program);
  out.index.reserve(size);
  out.debugEntry.assign(size, -1);
  for (size_t e = 0; e < program.debugMap.size(); ++e)
    for (uint64_t b = program.debugMap[e].begin; b < program.debugMap[e].end && b < size; ++b)
      if (out.debugEntry[b] < 0) out.debugEntry[b] = int32_t(e);
  // A shared body is decoded once; an instance's unpatched bundles use the
  // body's decoded bundles, each patched one is decoded on its own. Either
  // way bundle pc decodes exactly as the flat program's bundle pc would.
  // At most one decoded bundle per own bundle, body bundle and patch: no
  // reallocation moving every bundle (and its strings) again.
  size_t bound = program.code.size();
  for (const isa::SharedBody& body : program.bodies) bound += body.code.size();
  for (const isa::BodyInstance& in : program.instances) bound += in.patches.size();
  out.bundles.reserve(bound);
  // Likewise the ops: their exact number over the same bundles (an op is
  // 184 bytes; growing by doubling copied them and touched fresh pages).
  auto opsOf = [](const isa::Bundle& b) {
    size_t n = 0;
    for (const isa::Instruction& inst : b.slots) n += inst.empty() ? 0 : 1;
    return n;
  };
  size_t opBound = 0;
  for (const isa::Bundle& b : program.code) opBound += opsOf(b);
  for (const isa::SharedBody& body : program.bodies)
    for (const isa::Bundle& b : body.code) opBound += opsOf(b);
  // A patch may fill an empty slot: count each patched bundle's slots in full.
  for (const isa::BodyInstance& in : program.instances)
    opBound += in.patches.size() * size_t(isa::kNumSlotInstances);
  out.ops.reserve(opBound);
  std::vector<uint32_t> bodyFirst;
  for (const isa::SharedBody& body : program.bodies) {
    bodyFirst.push_back(uint32_t(out.bundles.size()));
    for (const isa::Bundle& b : body.code) decodeBundle(b, chip, out);
  }
  size_t own = 0;
  auto ownUntil = [&](uint64_t end) {
    while (out.index.size() < end)
      out.index.push_back(decodeBundle(program.code[own++], chip, out));
  };
  isa::Bundle patched;
  std::string error;
  for (const isa::BodyInstance& in : program.instances) {
    ownUntil(in.at);
    const std::vector<isa::Bundle>& body = program.bodies[in.body].code;
    size_t k = 0;
    for (uint32_t b = 0; b < body.size(); ++b) {
      if (k == in.patches.size() || in.patches[k].bundle != b) {
        out.index.push_back(bodyFirst[in.body] + b);
        continue;
      }
      patched = body[b];
      for (; k < in.patches.size() && in.patches[k].bundle == b; ++k)
        isa::applyPatch(&patched, in.patches[k], &error);
      out.index.push_back(decodeBundle(patched, chip, out));
    }
  }
  ownUntil(size);
  return out;
}

}  // namespace tpusim::sim
