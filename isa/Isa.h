// The instruction set, generated from the tables in Slots.def, Operands.def,
// LatencyClasses.def and Opcodes.def. Everything about the machine language
// (encoder, decoder, assembler, disassembler, simulator decode, the reference
// document) reads these tables; nothing else lists opcodes.
//
// Bundle layout (all derived here at compile time): every slot instance is a
// field of `slotFieldBits(kind)` bits: an 8-bit slot-local opcode (0 = empty)
// followed by the operand fields in table order, each `operandBits(kind)`
// wide, least significant first. Slots follow one another in Slots.def order,
// then come kNumSharedImms 32-bit immediate fields; the total is rounded up
// to a multiple of 64 bits. See docs/isa-reference.md for the bit positions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tpusim::isa {

enum class SlotKind : uint8_t {
#define TPU_SLOT(e, name, count, doc) e,
#include "isa/Slots.def"
};
constexpr int kNumSlotKinds = 0
#define TPU_SLOT(e, name, count, doc) +1
#include "isa/Slots.def"
    ;

enum class OperandKind : uint8_t {
#define TPU_OPERAND(e, prefix, bits, cls, access, doc) e,
#include "isa/Operands.def"
};
constexpr int kNumOperandKinds = 0
#define TPU_OPERAND(e, prefix, bits, cls, access, doc) +1
#include "isa/Operands.def"
    ;

enum class OperandClass : uint8_t {
  ScalarReg,
  VectorReg,
  MaskReg,
  Flag,
  Mxu,
  Acc,
  Queue,
  Simm,
  Uimm,
  Imm32,
  Target
};
enum class Access : uint8_t { None, Read, Write, ReadWrite };

enum class LatencyClass : uint8_t {
#define TPU_LATENCY(e, key, doc) e,
#include "isa/LatencyClasses.def"
};
constexpr int kNumLatencyClasses = 0
#define TPU_LATENCY(e, key, doc) +1
#include "isa/LatencyClasses.def"
    ;

// Opcode::Nop is the empty slot (encoded as slot-local opcode 0 in every slot).
enum class Opcode : uint16_t {
  Nop,
#define TPU_OP(e, mn, slot, lat, ops, doc) e,
#include "isa/Opcodes.def"
};
constexpr int kNumOpcodes = 1
#define TPU_OP(e, mn, slot, lat, ops, doc) +1
#include "isa/Opcodes.def"
    ;

constexpr int kMaxOperands = 5;
constexpr int kOpcodeFieldBits = 8;
constexpr int kNumSharedImms = 4;
constexpr int kImmFieldBits = 32;

// Machine limits the encoding has room for; a chip preset may have fewer.
constexpr int kNumScalarRegs = 32;
constexpr int kMaxVectorRegs = 64;
constexpr int kNumMaskRegs = 8;
constexpr int kMaxSyncFlags = 64;
constexpr int kMaxMxus = 4;
constexpr int kMaxAccSlots = 64;
constexpr int kMaxDmaQueues = 4;
constexpr int kSublanes = 8;
constexpr int kLanes = 128;
constexpr int kVmemRowBytes = kLanes * 4;  // VMEM addresses count rows of 128 x 32 bit

struct SlotInfo {
  SlotKind kind;
  std::string_view name;
  int count;  // instances of this slot in every bundle
  std::string_view doc;
};

struct OperandInfo {
  OperandKind kind;
  std::string_view prefix;  // assembly prefix ("s", "v", "mxu", ...); empty for immediates
  int bits;                 // width of the field in the slot
  OperandClass cls;
  Access access;
  std::string_view doc;
};

struct LatencyInfo {
  LatencyClass cls;
  std::string_view presetKey;  // chip preset field "latency.<key>"
  std::string_view doc;
};

struct OpcodeInfo {
  Opcode op;
  std::string_view mnemonic;
  SlotKind slot;
  LatencyClass latency;
  int numOperands;
  std::array<OperandKind, kMaxOperands> operands;
  std::string_view doc;
  int slotOpcode;  // value of the 8-bit opcode field (1-based within its slot)
};

// Unscoped names for the operand kinds, so Opcodes.def can list them bare.
namespace operand_names {
#define TPU_OPERAND(e, prefix, bits, cls, access, doc) constexpr OperandKind e = OperandKind::e;
#include "isa/Operands.def"
}  // namespace operand_names

namespace detail {
using K = OperandKind;
using namespace operand_names;
constexpr SlotInfo kSlots[] = {
#define TPU_SLOT(e, name, count, doc) {SlotKind::e, name, count, doc},
#include "isa/Slots.def"
};
constexpr OperandInfo kOperands[] = {
#define TPU_OPERAND(e, prefix, bits, cls, access, doc) \
  {K::e, prefix, bits, OperandClass::cls, Access::access, doc},
#include "isa/Operands.def"
};
constexpr LatencyInfo kLatencies[] = {
#define TPU_LATENCY(e, key, doc) {LatencyClass::e, key, doc},
#include "isa/LatencyClasses.def"
};
template <typename... Ks>
constexpr std::array<OperandKind, kMaxOperands> operandList(Ks... ks) {
  static_assert(sizeof...(Ks) <= kMaxOperands, "too many operands");
  return {ks...};
}
template <typename... Ks>
constexpr int operandCount(Ks...) {
  return sizeof...(Ks);
}
constexpr OpcodeInfo kOpcodesRaw[] = {
    {Opcode::Nop, "nop", SlotKind::Misc, LatencyClass::Sync, 0, {}, "empty slot", 0},
#define TPU_OP(e, mn, slot, lat, ops, doc) \
  {Opcode::e, mn, SlotKind::slot, LatencyClass::lat, operandCount(ops), operandList(ops), doc, 0},
#define OPS(...) __VA_ARGS__
#include "isa/Opcodes.def"
};

constexpr std::array<OpcodeInfo, kNumOpcodes> numberSlotOpcodes() {
  std::array<OpcodeInfo, kNumOpcodes> table{};
  int next[kNumSlotKinds] = {};
  for (int i = 0; i < kNumOpcodes; ++i) {
    table[i] = kOpcodesRaw[i];
    if (i > 0) table[i].slotOpcode = ++next[static_cast<int>(table[i].slot)];
  }
  return table;
}
}  // namespace detail

inline constexpr std::array<OpcodeInfo, kNumOpcodes> kOpcodeTable = detail::numberSlotOpcodes();

constexpr const SlotInfo& slotInfo(SlotKind k) { return detail::kSlots[static_cast<int>(k)]; }
constexpr const OperandInfo& operandInfo(OperandKind k) {
  return detail::kOperands[static_cast<int>(k)];
}
constexpr const LatencyInfo& latencyInfo(LatencyClass c) {
  return detail::kLatencies[static_cast<int>(c)];
}
constexpr const OpcodeInfo& opcodeInfo(Opcode op) { return kOpcodeTable[static_cast<int>(op)]; }

// The MXU command classes (isa/README.md, "MXU"), every dtype.
constexpr bool isMxuWeightPushT(Opcode op) {
  return op == Opcode::MxuWPushTBf16 || op == Opcode::MxuWPushTS8 || op == Opcode::MxuWPushTS8x2;
}
constexpr bool isMxuWeightPush(Opcode op) {
  return isMxuWeightPushT(op) || op == Opcode::MxuWPushBf16 || op == Opcode::MxuWPushS8 ||
         op == Opcode::MxuWPushS8x2;
}
constexpr bool isMxuMatmul(Opcode op) {
  return op == Opcode::MxuMmBf16 || op == Opcode::MxuMmaBf16 || op == Opcode::MxuMmS8 ||
         op == Opcode::MxuMmaS8 || op == Opcode::MxuMmS8x2 || op == Opcode::MxuMmaS8x2;
}

// Bits an operand occupies in a slot field.
constexpr int operandBits(OperandKind k) { return operandInfo(k).bits; }

// Width of one instance of a slot: the opcode field plus the widest operand list.
constexpr int slotFieldBits(SlotKind kind) {
  int widest = 0;
  for (int i = 1; i < kNumOpcodes; ++i) {
    const OpcodeInfo& info = kOpcodeTable[i];
    if (info.slot != kind) continue;
    int bits = 0;
    for (int j = 0; j < info.numOperands; ++j) bits += operandBits(info.operands[j]);
    widest = bits > widest ? bits : widest;
  }
  return kOpcodeFieldBits + widest;
}

// Total number of slot instances in a bundle, and each instance's position.
constexpr int kNumSlotInstances = [] {
  int n = 0;
  for (const SlotInfo& s : detail::kSlots) n += s.count;
  return n;
}();

struct SlotInstance {
  SlotKind kind;
  int index;     // 0-based index among the slots of this kind
  int bitStart;  // first bit of the field within the bundle
  int bits;
};

constexpr std::array<SlotInstance, kNumSlotInstances> kSlotLayout = [] {
  std::array<SlotInstance, kNumSlotInstances> layout{};
  int pos = 0, n = 0;
  for (const SlotInfo& s : detail::kSlots) {
    for (int i = 0; i < s.count; ++i) {
      layout[n++] = {s.kind, i, pos, slotFieldBits(s.kind)};
      pos += slotFieldBits(s.kind);
    }
  }
  return layout;
}();

constexpr int kImmFieldsBitStart =
    kSlotLayout[kNumSlotInstances - 1].bitStart + kSlotLayout[kNumSlotInstances - 1].bits;
constexpr int kBundleBits = (kImmFieldsBitStart + kNumSharedImms * kImmFieldBits + 63) / 64 * 64;
constexpr int kBundleBytes = kBundleBits / 8;

// First slot-instance number of a slot kind (instances of one kind are contiguous).
constexpr int firstSlotInstance(SlotKind kind) {
  for (int i = 0; i < kNumSlotInstances; ++i)
    if (kSlotLayout[i].kind == kind) return i;
  return -1;
}

// Looks an opcode up by its assembly mnemonic.
std::optional<Opcode> opcodeFromMnemonic(std::string_view mnemonic);
// Looks an opcode up by slot kind and slot-local opcode number (decoder).
std::optional<Opcode> opcodeFromSlotOpcode(SlotKind kind, int slotOpcode);

}  // namespace tpusim::isa
