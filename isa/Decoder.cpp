#include "isa/Decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "isa/Rules.h"

namespace tpusim::isa {

namespace {
bool fail(std::string* error, std::string message) {
  *error = std::move(message);
  return false;
}

// The bundle as little-endian 64-bit words (a parse decodes every field of
// every bundle: one or two word reads per field instead of a byte loop), with
// a zero word after the last so a field's read of the next word stays inside.
constexpr int kBundleWords = kBundleBits / 64;
static_assert(kBundleBits % 64 == 0, "bundles are whole 64-bit words");

struct BundleWords {
  uint64_t w[kBundleWords + 1];

  explicit BundleWords(const uint8_t* bytes) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::memcpy(w, bytes, kBundleBytes);
#else
    for (int i = 0; i < kBundleWords; ++i) {
      uint64_t v = 0;
      for (int k = 0; k < 8; ++k) v |= uint64_t(bytes[8 * i + k]) << (8 * k);
      w[i] = v;
    }
#endif
    w[kBundleWords] = 0;
  }
  // Bits [pos, pos + width), as bits::get. width <= 64.
  uint64_t get(int pos, int width) const {
    if (width <= 0) return 0;
    const int i = pos >> 6, shift = pos & 63;
    uint64_t v = w[i] >> shift;
    if (shift + width > 64) v |= w[i + 1] << (64 - shift);  // shift > 0 here
    return width >= 64 ? v : v & ((uint64_t(1) << width) - 1);
  }
  // Whether bits [pos, pos + width) are all zero: masks of the first and
  // last word, whole words between.
  bool allZero(int pos, int width) const {
    if (width <= 0) return true;
    const int first = pos >> 6, last = (pos + width - 1) >> 6;
    const uint64_t low = ~uint64_t(0) << (pos & 63);
    const uint64_t high = ~uint64_t(0) >> (63 - ((pos + width - 1) & 63));
    if (first == last) return (w[first] & low & high) == 0;
    if (w[first] & low) return false;
    for (int i = first + 1; i < last; ++i)
      if (w[i]) return false;
    return (w[last] & high) == 0;
  }
};

// Each operand kind's valid range (operandRange), so the success path checks
// an op without building checkInstruction's string; checkInstruction words
// the message for an op that is out of range.
const OperandRange& rangeOf(OperandKind kind) {
  static const std::array<OperandRange, kNumOperandKinds> ranges = [] {
    std::array<OperandRange, kNumOperandKinds> r{};
    for (int k = 0; k < kNumOperandKinds; ++k) r[size_t(k)] = operandRange(OperandKind(k));
    return r;
  }();
  return ranges[size_t(kind)];
}

}  // namespace

bool tryDecode(const uint8_t* bytes, Bundle* out, std::string* error) {
  // Every slot of *out is written (in place: no bundle-sized copy).
  Bundle& b = *out;
  const BundleWords words(bytes);
  uint32_t imms[kNumSharedImms];
  for (int i = 0; i < kNumSharedImms; ++i)
    imms[i] = uint32_t(words.get(kImmFieldsBitStart + i * kImmFieldBits, kImmFieldBits));
  int usedImms = 0;

  for (int s = 0; s < kNumSlotInstances; ++s) {
    const SlotInstance& slot = kSlotLayout[s];
    Instruction& inst = b.slots[s];
    inst = Instruction{};
    int pos = slot.bitStart;
    int slotOpcode = int(words.get(pos, kOpcodeFieldBits));
    if (slotOpcode == 0) {
      if (!words.allZero(pos, slot.bits))
        return fail(error, fmt::format("slot {} is empty (opcode 0) but its operand bits are not "
                                       "zero",
                                       slotInstanceName(s)));
      continue;
    }
    std::optional<Opcode> op = opcodeFromSlotOpcode(slot.kind, slotOpcode);
    if (!op)
      return fail(error, fmt::format("slot {}: unknown opcode {} for a {} slot",
                                     slotInstanceName(s), slotOpcode, slotInfo(slot.kind).name));
    inst.op = *op;
    const OpcodeInfo& info = opcodeInfo(*op);
    pos += kOpcodeFieldBits;
    bool inRange = true;
    for (int i = 0; i < info.numOperands; ++i) {
      const OperandInfo& operand = operandInfo(info.operands[i]);
      uint64_t field = words.get(pos, operand.bits);
      pos += operand.bits;
      switch (operand.cls) {
        case OperandClass::Simm: {
          int64_t v = int64_t(field);
          if (v >> (operand.bits - 1)) v -= int64_t(1) << operand.bits;
          inst.operands[i] = v;
          break;
        }
        case OperandClass::Imm32:
        case OperandClass::Target: {
          int idx = int(field);
          if (idx >= kNumSharedImms || idx > usedImms)
            return fail(error,
                        fmt::format("slot {}: '{}' operand {} refers to shared immediate {}, but "
                                    "the next unused one is {} (immediates are allocated in "
                                    "slot order)",
                                    slotInstanceName(s), info.mnemonic, i + 1, idx, usedImms));
          if (idx == usedImms) {
            for (int j = 0; j < usedImms; ++j)
              if (imms[j] == imms[idx])
                return fail(error, fmt::format("slot {}: shared immediates {} and {} both hold "
                                               "0x{:x} (equal values must share one field)",
                                               slotInstanceName(s), j, idx, imms[idx]));
            ++usedImms;
          }
          inst.operands[i] = int64_t(imms[idx]);
          break;
        }
        default:
          inst.operands[i] = int64_t(field);
      }
      const OperandRange& r = rangeOf(info.operands[i]);
      inRange = inRange && inst.operands[i] >= r.min && inst.operands[i] <= r.max;
    }
    int end = slot.bitStart + slot.bits;
    if (!words.allZero(pos, end - pos))
      return fail(
          error,
          fmt::format("slot {}: '{}' leaves bits {}..{} of the slot unused, but they "
                      "are not zero",
                      slotInstanceName(s), info.mnemonic, pos - slot.bitStart, slot.bits - 1));
    // The op is in its own slot by construction; only a range can fail here.
    if (!inRange)
      if (std::string problem = checkInstruction(inst, s); !problem.empty())
        return fail(error, problem);
  }
  for (int i = usedImms; i < kNumSharedImms; ++i)
    if (imms[i] != 0)
      return fail(error, fmt::format("shared immediate {} is not used by any slot but holds 0x{:x}",
                                     i, imms[i]));
  int padStart = kImmFieldsBitStart + kNumSharedImms * kImmFieldBits;
  if (!words.allZero(padStart, kBundleBits - padStart))
    return fail(error, fmt::format("padding bits {}..{} of the bundle are not zero", padStart,
                                   kBundleBits - 1));
  return true;
}

Bundle decode(const EncodedBundle& bytes) {
  Bundle b;
  std::string error;
  if (!tryDecode(bytes.data(), &b, &error)) throw IsaError(error);
  return b;
}

}  // namespace tpusim::isa
