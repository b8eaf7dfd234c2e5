#include "compiler/lower/control/ControlCode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "isa/DmaDescriptor.h"
#include "isa/Isa.h"
#include "isa/Rules.h"

namespace tpusim::lower {

namespace codegen = kernels::codegen;
using isa::Instruction;
using isa::Opcode;

namespace {

// The module's own DMAs use queue 0 and flag 0: kernels and data-movement
// fragments end with every flag back at zero, so both are free between them.
constexpr int kFlag = 0;
constexpr int kQueue = 0;
// Registers of the module's own code (kernels keep nothing in registers across
// their boundaries).
constexpr int kAddrReg = 1;

// A descriptor's 16 words as a little-endian SMEM data segment at `word`.
isa::DataSegment descriptorSegment(const isa::DmaDescriptor& d, int64_t word) {
  std::array<uint32_t, isa::kDmaDescriptorWords> w = d.pack();
  isa::DataSegment seg;
  seg.space = isa::MemorySpace::Smem;
  seg.address = uint64_t(word) * 4;
  seg.bytes.resize(w.size() * 4);
  for (size_t i = 0; i < w.size(); ++i)
    for (int b = 0; b < 4; ++b) seg.bytes[i * 4 + size_t(b)] = uint8_t(w[i] >> (8 * b));
  return seg;
}

}  // namespace

ControlCode::ControlCode(codegen::Module& module, const codegen::TargetInfo& target)
    : m_(module), target_(target), ready_(isa::kNumScalarRegs, 0) {}

int64_t ControlCode::latencyOf(Opcode op) const {
  return std::max(1, target_.latencyOf(isa::opcodeInfo(op).latency));
}

void ControlCode::emit(const std::vector<Instruction>& ops) {
  // Earliest cycle at which every register read is ready and every register
  // written has no write in flight (WAW).
  int64_t at = cycle_;
  for (const Instruction& in : ops) {
    const isa::OpcodeInfo& info = in.info();
    for (int o = 0; o < info.numOperands; ++o) {
      const isa::OperandInfo& oi = isa::operandInfo(info.operands[size_t(o)]);
      if (oi.cls == isa::OperandClass::ScalarReg)
        at = std::max(at, ready_[size_t(in.operands[size_t(o)])]);
    }
  }
  for (; cycle_ < at; ++cycle_) m_.program.code.push_back(isa::Bundle{});
  isa::Bundle b;
  int used[isa::kNumSlotKinds] = {};
  for (const Instruction& in : ops) {
    isa::SlotKind kind = in.info().slot;
    b.slot(kind, used[int(kind)]++) = in;
    const isa::OpcodeInfo& info = in.info();
    for (int o = 0; o < info.numOperands; ++o) {
      const isa::OperandInfo& oi = isa::operandInfo(info.operands[size_t(o)]);
      if (oi.cls == isa::OperandClass::ScalarReg &&
          (oi.access == isa::Access::Write || oi.access == isa::Access::ReadWrite))
        ready_[size_t(in.operands[size_t(o)])] = cycle_ + latencyOf(in.op);
    }
  }
  m_.program.code.push_back(b);
  ++cycle_;
}

void ControlCode::drain() {
  int64_t at = cycle_;
  for (int64_t r : ready_) at = std::max(at, r);
  for (; cycle_ < at; ++cycle_) m_.program.code.push_back(isa::Bundle{});
}

uint32_t ControlCode::label() {
  drain();
  return m_.nextBundle();
}

size_t ControlCode::openOp(const std::string& opName, const std::string& hloInstruction,
                           const std::string& sourceFile, uint32_t sourceLine) {
  drain();
  isa::DebugEntry e;
  e.begin = e.end = m_.nextBundle();
  e.opName = opName;
  e.hloInstruction = hloInstruction;
  e.sourceFile = sourceFile;
  e.sourceLine = sourceLine;
  m_.program.debugMap.push_back(e);
  size_t index = m_.program.debugMap.size() - 1;
  emit({makeInstruction(Opcode::Mark, {int64_t(index)})});
  return index;
}

void ControlCode::closeOp(size_t entry) {
  drain();
  m_.program.debugMap[entry].end = m_.nextBundle();
}

std::vector<isa::DmaDescriptor> ControlCode::hbmCopyDescriptors(uint64_t src, uint64_t dst,
                                                                uint64_t bytes) {
  // One descriptor moves up to 2^31 bytes per row times 2^31 rows; split a
  // copy into whole 1 MiB rows and a remainder row when it is large.
  std::vector<isa::DmaDescriptor> parts;
  const uint64_t kRow = uint64_t(1) << 20;
  auto plain = [&](uint64_t s, uint64_t d, uint64_t inner, uint64_t rows) {
    isa::DmaDescriptor desc;
    desc.src = isa::MemorySpace::Hbm;
    desc.dst = isa::MemorySpace::Hbm;
    desc.srcAddr = s;
    desc.dstAddr = d;
    desc.innerBytes = uint32_t(inner);
    desc.numDims = rows > 1 ? 2 : 1;
    desc.counts = {uint32_t(rows), 1, 1};
    desc.srcStrides = {uint32_t(rows > 1 ? inner : 0), 0, 0};
    desc.dstStrides = {uint32_t(rows > 1 ? inner : 0), 0, 0};
    parts.push_back(desc);
  };
  if (bytes <= kRow) {
    plain(src, dst, bytes, 1);
  } else {
    uint64_t rows = bytes / kRow, rest = bytes % kRow;
    plain(src, dst, kRow, rows);
    if (rest) plain(src + rows * kRow, dst + rows * kRow, rest, 1);
  }
  return parts;
}

int64_t ControlCode::smemWords(const std::vector<uint32_t>& values, const std::string& what) {
  int64_t word = codegen::reserveSmem(m_, int64_t(std::max<size_t>(values.size(), 1)), what);
  isa::DataSegment seg;
  seg.space = isa::MemorySpace::Smem;
  seg.address = uint64_t(word) * 4;
  for (uint32_t v : values)
    for (int b = 0; b < 4; ++b) seg.bytes.push_back(uint8_t(v >> (8 * b)));
  if (!seg.bytes.empty()) m_.program.data.push_back(seg);
  return word;
}

int64_t ControlCode::descriptorWords(const std::vector<isa::DmaDescriptor>& descs,
                                     const std::string& what) {
  int64_t word = codegen::reserveSmem(m_, int64_t(descs.size()) * isa::kDmaDescriptorWords, what);
  for (size_t i = 0; i < descs.size(); ++i)
    m_.program.data.push_back(
        descriptorSegment(descs[i], word + int64_t(i) * isa::kDmaDescriptorWords));
  return word;
}

void ControlCode::copyHbm(uint64_t src, uint64_t dst, uint64_t bytes, const std::string& what) {
  if (src == dst || bytes == 0) return;
  std::vector<isa::DmaDescriptor> parts = hbmCopyDescriptors(src, dst, bytes);
  int64_t word = descriptorWords(parts, "DMA descriptors of " + what);
  for (size_t i = 0; i < parts.size(); ++i) {
    int64_t at = word + int64_t(i) * isa::kDmaDescriptorWords;
    emit({makeInstruction(Opcode::SLi, {kAddrReg, at})});
    emit({makeInstruction(Opcode::Dma, {kAddrReg, kFlag, kQueue})});
  }
  emit({makeInstruction(Opcode::SyncWait, {kFlag, int64_t(parts.size())})});
}

void ControlCode::loadScalar(uint64_t src, int bytes, int reg, const std::string& what) {
  if (scalarWord_ < 0) {
    // One zeroed word: a 1-byte pred copy writes only its low byte.
    scalarWord_ = codegen::reserveSmem(m_, 1, "scalar read-back word");
    isa::DataSegment zero;
    zero.space = isa::MemorySpace::Smem;
    zero.address = uint64_t(scalarWord_) * 4;
    zero.bytes.assign(4, 0);
    m_.program.data.push_back(zero);
  }
  isa::DmaDescriptor d;
  d.src = isa::MemorySpace::Hbm;
  d.dst = isa::MemorySpace::Smem;
  d.srcAddr = src;
  d.dstAddr = uint64_t(scalarWord_) * 4;
  d.innerBytes = uint32_t(bytes);
  int64_t word = codegen::reserveSmem(m_, isa::kDmaDescriptorWords, "DMA descriptor of " + what);
  m_.program.data.push_back(descriptorSegment(d, word));
  emit({makeInstruction(Opcode::SLi, {kAddrReg, word})});
  emit({makeInstruction(Opcode::Dma, {kAddrReg, kFlag, kQueue})});
  emit({makeInstruction(Opcode::SyncWait, {kFlag, 1}),
        makeInstruction(Opcode::SLi, {kAddrReg, scalarWord_})});
  emit({makeInstruction(Opcode::SLd, {reg, kAddrReg, 0})});
}

uint32_t ControlCode::emitBranch(Instruction branch) {
  drain();
  emit({branch});
  uint32_t at = m_.nextBundle() - 1;
  // The branch is the last bundle of its block: nothing of ours is in flight.
  drain();
  return at;
}

uint32_t ControlCode::branchIfZero(int reg) {
  return emitBranch(makeInstruction(Opcode::BrZ, {reg, 0}));
}
uint32_t ControlCode::branchIfNonZero(int reg) {
  return emitBranch(makeInstruction(Opcode::BrNz, {reg, 0}));
}
uint32_t ControlCode::jump() { return emitBranch(makeInstruction(Opcode::Jmp, {0})); }

int64_t ControlCode::reserveWord(const std::string& what) {
  int64_t word = codegen::reserveSmem(m_, 1, what);
  isa::DataSegment zero;
  zero.space = isa::MemorySpace::Smem;
  zero.address = uint64_t(word) * 4;
  zero.bytes.assign(4, 0);
  m_.program.data.push_back(zero);
  return word;
}

void ControlCode::setWord(int64_t word, int64_t value, int scratch) {
  emit({makeInstruction(Opcode::SLi, {kAddrReg, word}),
        makeInstruction(Opcode::SLi, {scratch, value})});
  emit({makeInstruction(Opcode::SSt, {scratch, kAddrReg, 0})});
}

uint32_t ControlCode::decrementAndBranchIfNonZero(int64_t word, int reg) {
  emit({makeInstruction(Opcode::SLi, {kAddrReg, word})});
  emit({makeInstruction(Opcode::SLd, {reg, kAddrReg, 0})});
  emit({makeInstruction(Opcode::SAddI, {reg, reg, -1})});
  emit({makeInstruction(Opcode::SSt, {reg, kAddrReg, 0})});
  return branchIfNonZero(reg);
}

void ControlCode::compareEqualImm(int dst, int src, int64_t imm, int scratch) {
  emit({makeInstruction(Opcode::SLi, {scratch, imm})});
  emit({makeInstruction(Opcode::SCmpEq, {dst, src, scratch})});
}

void ControlCode::patch(uint32_t branchBundle, uint32_t target) {
  for (Instruction& in : m_.ownBundle(branchBundle).slots)
    if (isa::isBranch(in.op)) {
      const isa::OpcodeInfo& info = in.info();
      for (int o = 0; o < info.numOperands; ++o)
        if (isa::operandInfo(info.operands[size_t(o)]).cls == isa::OperandClass::Target)
          in.operands[size_t(o)] = target;
      return;
    }
}

isa::Instruction makeInstruction(isa::Opcode op, std::initializer_list<int64_t> operands) {
  isa::Instruction in;
  in.op = op;
  size_t i = 0;
  for (int64_t v : operands) in.operands[i++] = v;
  return in;
}

}  // namespace tpusim::lower
