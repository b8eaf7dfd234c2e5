// Encoder and decoder: the layout Isa.h derives, every opcode in every slot
// instance, shared-immediate allocation, and one test per decoder error.
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "isa/BitField.h"
#include "isa/Decoder.h"
#include "isa/Encoder.h"
#include "isa/Rules.h"
#include "testbench/unit/isa/RandomBundle.h"

using namespace tpusim::isa;

namespace {
std::string decodeError(const EncodedBundle& bytes) {
  Bundle b;
  std::string error;
  if (tryDecode(bytes.data(), &b, &error)) return "";
  return error;
}

Instruction make(Opcode op, std::initializer_list<int64_t> operands) {
  Instruction inst;
  inst.op = op;
  int i = 0;
  for (int64_t v : operands) inst.operands[i++] = v;
  return inst;
}

Bundle withSlot(SlotKind kind, int index, Instruction inst) {
  Bundle b;
  b.slot(kind, index) = inst;
  return b;
}
}  // namespace

TEST_CASE("bundle layout is contiguous, non-overlapping and 64-bit aligned", "[isa][layout]") {
  int pos = 0;
  for (int s = 0; s < kNumSlotInstances; ++s) {
    CHECK(kSlotLayout[s].bitStart == pos);
    CHECK(kSlotLayout[s].bits == slotFieldBits(kSlotLayout[s].kind));
    pos += kSlotLayout[s].bits;
  }
  CHECK(kImmFieldsBitStart == pos);
  CHECK(kBundleBits % 64 == 0);
  CHECK(kBundleBits >= pos + kNumSharedImms * kImmFieldBits);
  CHECK(kBundleBits - 64 < pos + kNumSharedImms * kImmFieldBits);
  CHECK(kBundleBytes * 8 == kBundleBits);
  // The README states the current size; this catches a table change that moves it.
  CHECK(kBundleBits == 640);

  int instances = 0;
  for (int k = 0; k < kNumSlotKinds; ++k) {
    const SlotInfo& info = slotInfo(SlotKind(k));
    CHECK(firstSlotInstance(info.kind) == instances);
    for (int i = 0; i < info.count; ++i) CHECK(kSlotLayout[instances + i].index == i);
    instances += info.count;
  }
  CHECK(instances == kNumSlotInstances);
}

TEST_CASE("opcode table: unique mnemonics, dense slot-local numbers that fit the field",
          "[isa][layout]") {
  std::set<std::string_view> mnemonics;
  std::set<std::pair<int, int>> slotNumbers;
  for (int i = 1; i < kNumOpcodes; ++i) {
    const OpcodeInfo& info = kOpcodeTable[i];
    CHECK(int(info.op) == i);
    CHECK(mnemonics.insert(info.mnemonic).second);
    CHECK(slotNumbers.insert({int(info.slot), info.slotOpcode}).second);
    CHECK(info.slotOpcode >= 1);
    CHECK(info.slotOpcode < (1 << kOpcodeFieldBits));
    int bitsUsed = kOpcodeFieldBits;
    for (int j = 0; j < info.numOperands; ++j) bitsUsed += operandBits(info.operands[j]);
    CHECK(bitsUsed <= slotFieldBits(info.slot));
    CHECK(opcodeFromMnemonic(info.mnemonic) == info.op);
    CHECK(opcodeFromSlotOpcode(info.slot, info.slotOpcode) == info.op);
  }
  CHECK(!opcodeFromMnemonic("nop"));
}

TEST_CASE("every opcode encodes and decodes to itself in every slot instance", "[isa][encode]") {
  std::mt19937_64 rng(1);
  for (int i = 1; i < kNumOpcodes; ++i) {
    const OpcodeInfo& info = kOpcodeTable[i];
    for (int idx = 0; idx < slotInfo(info.slot).count; ++idx) {
      for (int variant = 0; variant < 3; ++variant) {
        Instruction inst;
        inst.op = info.op;
        for (int j = 0; j < info.numOperands; ++j) {
          OperandRange r = operandRange(info.operands[j]);
          inst.operands[j] = variant == 0 ? r.min
                             : variant == 1
                                 ? r.max
                                 : tpusim::isa::testing::randomOperand(info.operands[j], rng);
        }
        Bundle b = withSlot(info.slot, idx, inst);
        INFO(info.mnemonic << " in " << slotInstanceName(firstSlotInstance(info.slot) + idx));
        EncodedBundle bytes = encode(b);
        // The opcode field sits where the layout says.
        const SlotInstance& slot = kSlotLayout[firstSlotInstance(info.slot) + idx];
        CHECK(bits::get(bytes.data(), slot.bitStart, kOpcodeFieldBits) ==
              uint64_t(info.slotOpcode));
        Bundle back = decode(bytes);
        CHECK(back == b);
        CHECK(encode(back) == bytes);
      }
    }
  }
}

TEST_CASE("the empty bundle encodes to all zeros", "[isa][encode]") {
  EncodedBundle bytes = encode(Bundle{});
  for (uint8_t byte : bytes) CHECK(byte == 0);
  CHECK(decode(bytes) == Bundle{});
}

TEST_CASE("shared immediates: slot order, equal values share a field", "[isa][encode]") {
  Bundle b;
  b.slot(SlotKind::Scalar, 0) = make(Opcode::SLi, {1, 0x1234});
  b.slot(SlotKind::Scalar, 1) = make(Opcode::Jmp, {7});
  b.slot(SlotKind::VectorAlu, 0) = make(Opcode::VImm, {2, 0x1234});
  b.slot(SlotKind::VectorAlu, 3) = make(Opcode::VImm, {3, 0x3f800000});
  b.slot(SlotKind::Misc, 0) = make(Opcode::Mark, {0});
  std::array<uint32_t, kNumSharedImms> imms;
  std::string error;
  REQUIRE(allocateSharedImmediates(b, &imms, &error) == 4);
  CHECK(imms == std::array<uint32_t, 4>{0x1234, 7, 0x3f800000, 0});
  EncodedBundle bytes = encode(b);
  CHECK(bits::get(bytes.data(), kImmFieldsBitStart, 32) == 0x1234);
  CHECK(bits::get(bytes.data(), kImmFieldsBitStart + 32, 32) == 7);
  CHECK(bits::get(bytes.data(), kImmFieldsBitStart + 64, 32) == 0x3f800000);
  CHECK(bits::get(bytes.data(), kImmFieldsBitStart + 96, 32) == 0);
  CHECK(decode(bytes) == b);

  b.slot(SlotKind::VectorAlu, 1) = make(Opcode::VImm, {4, 99});
  CHECK(!tryEncode(b, &bytes, &error));
  CHECK(error.find("more than 4 distinct 32-bit immediates") != std::string::npos);
  CHECK(error.find("slot misc0 needs 0x0") != std::string::npos);
}

TEST_CASE("encoder rejects invalid instructions with the slot and operand", "[isa][encode]") {
  EncodedBundle bytes;
  std::string error;
  auto fails = [&](const Bundle& b, const char* what) {
    error.clear();
    CHECK(!tryEncode(b, &bytes, &error));
    CHECK_THAT(error, Catch::Contains(what));
  };
  fails(withSlot(SlotKind::Scalar, 0, make(Opcode::VAddF32, {1, 2, 3})),
        "slot scalar0: 'vadd.f32' belongs in a valu slot");
  fails(withSlot(SlotKind::Scalar, 1, make(Opcode::SAdd, {32, 0, 0})),
        "slot scalar1: 'sadd' operand 1 is 32, outside the range of a scalar register (s0..s31)");
  fails(withSlot(SlotKind::VectorAlu, 0, make(Opcode::VAddF32, {0, 64, 0})), "v0..v63");
  fails(withSlot(SlotKind::Scalar, 0, make(Opcode::SAddI, {0, 0, 32768})), "-32768..32767");
  fails(withSlot(SlotKind::Scalar, 0, make(Opcode::SAddI, {0, 0, -32769})), "-32768..32767");
  fails(withSlot(SlotKind::VectorLoad, 0, make(Opcode::VLd, {0, 0, 0, 256, 0})), "0..255");
  fails(withSlot(SlotKind::Misc, 0, make(Opcode::SyncWait, {64, 1})), "f0..f63");
  fails(withSlot(SlotKind::Misc, 0, make(Opcode::SyncWait, {0, 65536})), "0..65535");
  fails(withSlot(SlotKind::MatrixPop, 0, make(Opcode::MxuPop, {0, 4, 0})), "mxu0..mxu3");
  fails(withSlot(SlotKind::MatrixPop, 0, make(Opcode::MxuPop, {0, 0, 64})), "a0..a63");
  fails(withSlot(SlotKind::Misc, 0, make(Opcode::Dma, {0, 0, 4})), "q0..q3");
  fails(withSlot(SlotKind::VectorAlu, 0, make(Opcode::VImm, {0, -1})), "32-bit immediate");
  fails(withSlot(SlotKind::Scalar, 0, make(Opcode::Jmp, {int64_t(1) << 32})), "branch target");
}

TEST_CASE("decoder errors name the slot and the field", "[isa][decode]") {
  const SlotInstance& valu1 = kSlotLayout[firstSlotInstance(SlotKind::VectorAlu) + 1];
  SECTION("unknown slot-local opcode") {
    EncodedBundle bytes{};
    int numValu = int(tpusim::isa::testing::opcodesOfSlot(SlotKind::VectorAlu).size());
    bits::set(bytes.data(), valu1.bitStart, kOpcodeFieldBits, uint64_t(numValu + 1));
    CHECK_THAT(decodeError(bytes), Catch::Contains("slot valu1: unknown opcode"));
  }
  SECTION("empty slot with operand bits set") {
    EncodedBundle bytes{};
    bits::set(bytes.data(), valu1.bitStart + kOpcodeFieldBits + 3, 1, 1);
    CHECK_THAT(decodeError(bytes), Catch::Contains("slot valu1 is empty"));
  }
  SECTION("bits beyond an opcode's operands") {
    EncodedBundle bytes = encode(withSlot(SlotKind::VectorAlu, 1, make(Opcode::VMov, {1, 2})));
    bits::set(bytes.data(), valu1.bitStart + valu1.bits - 1, 1, 1);
    CHECK_THAT(decodeError(bytes), Catch::Contains("slot valu1: 'vmov' leaves bits"));
  }
  SECTION("immediate index pointing past the next unused field") {
    EncodedBundle bytes = encode(withSlot(SlotKind::VectorAlu, 1, make(Opcode::VImm, {1, 5})));
    bits::set(bytes.data(), valu1.bitStart + kOpcodeFieldBits + 6, 2, 2);
    CHECK_THAT(decodeError(bytes), Catch::Contains("refers to shared immediate 2"));
  }
  SECTION("two immediate fields holding one value") {
    Bundle b;
    b.slot(SlotKind::VectorAlu, 0) = make(Opcode::VImm, {1, 5});
    b.slot(SlotKind::VectorAlu, 1) = make(Opcode::VImm, {2, 6});
    EncodedBundle bytes = encode(b);
    bits::set(bytes.data(), kImmFieldsBitStart + 32, 32, 5);
    CHECK_THAT(decodeError(bytes), Catch::Contains("shared immediates 0 and 1 both hold 0x5"));
  }
  SECTION("nonzero unused immediate field") {
    EncodedBundle bytes{};
    bits::set(bytes.data(), kImmFieldsBitStart + 96, 32, 0xdead);
    CHECK_THAT(decodeError(bytes),
               Catch::Contains("shared immediate 3 is not used by any slot but holds 0xdead"));
  }
  SECTION("nonzero padding") {
    EncodedBundle bytes{};
    bits::set(bytes.data(), kBundleBits - 1, 1, 1);
    CHECK_THAT(decodeError(bytes), Catch::Contains("padding bits"));
  }
  SECTION("decode() throws IsaError") {
    EncodedBundle bytes{};
    bits::set(bytes.data(), kBundleBits - 1, 1, 1);
    CHECK_THROWS_AS(decode(bytes), IsaError);
  }
}

TEST_CASE("decode(encode(b)) == b for random valid bundles", "[isa][property]") {
  std::mt19937_64 rng(42);
  for (int n = 0; n < 100000; ++n) {
    Bundle b = tpusim::isa::testing::randomBundle(rng);
    EncodedBundle bytes;
    std::string error;
    REQUIRE(tryEncode(b, &bytes, &error));
    Bundle back;
    REQUIRE(tryDecode(bytes.data(), &back, &error));
    REQUIRE(back == b);
  }
}

TEST_CASE("random bytes either fail to decode or re-encode identically", "[isa][property]") {
  std::mt19937_64 rng(7);
  int decoded = 0;
  for (int n = 0; n < 20000; ++n) {
    // Start from a valid encoding and flip a few bits, so many inputs are near-valid.
    EncodedBundle bytes = encode(tpusim::isa::testing::randomBundle(rng));
    int flips = 1 + int(rng() % 3);
    for (int f = 0; f < flips; ++f) bytes[rng() % kBundleBytes] ^= uint8_t(1u << (rng() % 8));
    Bundle b;
    std::string error;
    if (!tryDecode(bytes.data(), &b, &error)) {
      CHECK(!error.empty());
      continue;
    }
    ++decoded;
    REQUIRE(encode(b) == bytes);
  }
  CHECK(decoded > 0);
}

TEST_CASE("bit fields read by whole bytes agree with a bit-by-bit reference", "[isa][bits]") {
  // bits::get and bits::allZero read 1-9 bytes at once; check them against
  // single-bit reads at every position and width (fields up to 64 bits,
  // ranges up to a whole bundle), on random bytes and on sparse ones.
  std::mt19937_64 rng(13);
  std::vector<uint8_t> bytes(kBundleBits / 8 + 16);
  auto bit = [&](int i) { return (bytes[size_t(i) >> 3] >> (i & 7)) & 1u; };
  for (int round = 0; round < 40; ++round) {
    for (uint8_t& b : bytes) b = uint8_t(rng());
    if (round % 2) {  // mostly zero: allZero's answers vary
      for (uint8_t& b : bytes) b = (rng() % 16 == 0) ? uint8_t(1u << (rng() % 8)) : 0;
    }
    const int bitsTotal = int(bytes.size()) * 8;
    for (int pos = 0; pos < 80; ++pos)
      for (int width = 0; width <= 64 && pos + width <= bitsTotal; ++width) {
        uint64_t want = 0;
        for (int i = 0; i < width; ++i) want |= uint64_t(bit(pos + i)) << i;
        REQUIRE(bits::get(bytes.data(), pos, width) == want);
      }
    for (int trial = 0; trial < 2000; ++trial) {
      const int pos = int(rng() % uint64_t(bitsTotal));
      const int width = int(rng() % uint64_t(bitsTotal - pos + 1));
      bool zero = true;
      for (int i = 0; i < width; ++i) zero = zero && bit(pos + i) == 0;
      REQUIRE(bits::allZero(bytes.data(), pos, width) == zero);
    }
  }
}

TEST_CASE("bit fields: set a byte at a time as bit by bit; get and decode's reads agree",
          "[isa][encode][decode]") {
  std::mt19937_64 rng(13);
  Bundle reused;  // decoded into again and again: every slot is rewritten
  for (int trial = 0; trial < 20000; ++trial) {
    EncodedBundle a, b;
    for (auto& byte : a) byte = uint8_t(rng());
    b = a;
    int width = 1 + int(rng() % 64);
    int pos = int(rng() % uint64_t(kBundleBits - width + 1));
    uint64_t value = rng();
    bits::set(a.data(), pos, width, value);
    for (int i = 0; i < width; ++i) {  // the definition: bit i of value to bit pos + i
      uint8_t mask = uint8_t(1u << ((pos + i) & 7));
      b[size_t((pos + i) >> 3)] = ((value >> i) & 1u) ? uint8_t(b[size_t((pos + i) >> 3)] | mask)
                                                      : uint8_t(b[size_t((pos + i) >> 3)] & ~mask);
    }
    REQUIRE(a == b);
    uint64_t expect = width == 64 ? value : value & ((uint64_t(1) << width) - 1);
    REQUIRE(bits::get(a.data(), pos, width) == expect);
    // A bundle that is zero except for this field is empty exactly when the
    // field is zero, or else decodes or fails as the field says.
    EncodedBundle one{};
    bits::set(one.data(), pos, width, value);
    Bundle back;
    std::string error;
    bool ok = tryDecode(one.data(), &back, &error);
    if (expect == 0) {
      REQUIRE(ok);
      REQUIRE(back == Bundle{});
    } else if (ok) {
      REQUIRE(encode(back) == one);
      REQUIRE(tryDecode(one.data(), &reused, &error));
      REQUIRE(reused == back);
    } else {
      REQUIRE(!error.empty());
    }
  }
}
