// A deliberately small functional model of the opcodes the isa/samples use,
// to check that the samples compute what they claim (data flow, DMA layouts,
// MXU row mapping) before the simulator exists to run them. No timing: a
// bundle reads all its operands, then writes all its results; DMAs complete
// at issue. The real model of the machine is sim/; this one throws on any
// opcode the samples do not use.
#pragma once

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/Program.h"
#include "isa/support/Numerics.h"

namespace tpusim::isa::testing {

class SampleModel {
 public:
  static constexpr int kN = 128;  // MXU size the samples assume
  using Vreg = std::array<uint32_t, kSublanes * kLanes>;

  std::vector<uint8_t> hbm, vmem, smem;

  SampleModel(const Program& p, size_t hbmBytes, size_t vmemRows)
      : hbm(hbmBytes), vmem(vmemRows * kVmemRowBytes), smem(4096), prog_(p) {
    for (const DataSegment& d : p.data) {
      std::vector<uint8_t>& mem = space(d.space);
      if (d.address + d.bytes.size() > mem.size()) throw std::runtime_error("data out of range");
      std::memcpy(mem.data() + d.address, d.bytes.data(), d.bytes.size());
    }
  }

  // Runs to halt; returns the number of bundles executed.
  int run(int maxBundles = 100000) {
    size_t pc = 0;
    for (int steps = 0; steps < maxBundles; ++steps) {
      if (pc >= prog_.code.size()) throw std::runtime_error("ran off the end of the code");
      const Bundle& b = prog_.code[pc];
      Pending w;
      size_t next = pc + 1;
      bool halt = false;
      for (const Instruction& inst : b.slots)
        if (!inst.empty()) execute(inst, &w, &next, &halt);
      for (auto& [r, v] : w.sregs) s_[r] = v;
      for (auto& [r, v] : w.vregs) v_[r] = v;
      if (halt) return steps + 1;
      pc = next;
    }
    throw std::runtime_error("no halt");
  }

 private:
  struct Pending {
    std::vector<std::pair<int, uint32_t>> sregs;
    std::vector<std::pair<int, Vreg>> vregs;
  };
  struct Mxu {
    std::vector<uint16_t> staging = std::vector<uint16_t>(kN * kN), active = staging;
    int pushes = 0;
    std::array<std::vector<float>, kMaxAccSlots> acc;
  };

  std::vector<uint8_t>& space(MemorySpace s) {
    return s == MemorySpace::Hbm ? hbm : s == MemorySpace::Vmem ? vmem : smem;
  }
  uint32_t vmemWord(int64_t row, int lane) {
    if (row < 0 || size_t(row + 1) * kVmemRowBytes > vmem.size())
      throw std::runtime_error("VMEM row out of range");
    uint32_t w;
    std::memcpy(&w, vmem.data() + row * kVmemRowBytes + lane * 4, 4);
    return w;
  }
  void dma(uint32_t word, int flag) {
    uint32_t words[kDmaDescriptorWords];
    std::memcpy(words, smem.data() + size_t(word) * 4, sizeof words);
    DmaDescriptor d;
    std::string error;
    if (!DmaDescriptor::unpack(words, &d, &error)) throw std::runtime_error(error);
    std::vector<uint8_t>&src = space(d.src), &dst = space(d.dst);
    for (uint32_t i3 = 0; i3 < d.counts[2]; ++i3)
      for (uint32_t i2 = 0; i2 < d.counts[1]; ++i2)
        for (uint32_t i1 = 0; i1 < d.counts[0]; ++i1) {
          uint64_t so = d.srcAddr + i1 * uint64_t(d.srcStrides[0]) +
                        i2 * uint64_t(d.srcStrides[1]) + i3 * uint64_t(d.srcStrides[2]);
          uint64_t dOff = d.dstAddr + i1 * uint64_t(d.dstStrides[0]) +
                          i2 * uint64_t(d.dstStrides[1]) + i3 * uint64_t(d.dstStrides[2]);
          if (so + d.innerBytes > src.size() || dOff + d.innerBytes > dst.size())
            throw std::runtime_error("DMA out of range");
          std::memcpy(dst.data() + dOff, src.data() + so, d.innerBytes);
        }
    ++flags_[flag];
  }
  static float f(uint32_t u) { return floatOf(u); }
  static uint32_t u(float x) { return bitsOf(x); }
  // xlu.sum / xlu.max over the lanes of one sublane: the README's pairwise tree.
  template <typename Op>
  static void laneTree(const Vreg& a, Vreg* d, Op op) {
    for (int s = 0; s < kSublanes; ++s) {
      float x[kLanes];
      for (int l = 0; l < kLanes; ++l) x[l] = f(a[s * kLanes + l]);
      for (int dd = kLanes / 2; dd >= 1; dd /= 2)
        for (int l = 0; l < dd; ++l) x[l] = op(x[l], x[l + dd]);
      for (int l = 0; l < kLanes; ++l) (*d)[s * kLanes + l] = u(x[0]);
    }
  }

  void execute(const Instruction& inst, Pending* w, size_t* next, bool* halt) {
    const auto& o = inst.operands;
    auto V = [&](int i) -> const Vreg& { return v_[o[i]]; };
    auto S = [&](int i) { return s_[o[i]]; };
    auto setV = [&](const Vreg& v) { w->vregs.push_back({int(o[0]), v}); };
    auto elementwise = [&](auto fn) {
      Vreg d;
      for (size_t i = 0; i < d.size(); ++i) d[i] = fn(i);
      setV(d);
    };
    switch (inst.op) {
      case Opcode::SLi:
        w->sregs.push_back({int(o[0]), uint32_t(o[1])});
        break;
      case Opcode::SAddI:
        w->sregs.push_back({int(o[0]), S(1) + uint32_t(int32_t(o[2]))});
        break;
      case Opcode::Loop:
        w->sregs.push_back({int(o[0]), S(0) - 1});
        if (S(0) - 1 != 0) *next = size_t(o[1]);
        break;
      case Opcode::Mark:
        break;
      case Opcode::Dma:
        dma(S(0), int(o[1]));
        break;
      case Opcode::SyncWait:
        if (flags_[o[0]] < uint32_t(o[1])) throw std::runtime_error("sync.wait would deadlock");
        flags_[o[0]] -= uint32_t(o[1]);
        break;
      case Opcode::Halt:
        *halt = true;
        break;
      case Opcode::VImm:
        elementwise([&](size_t) { return uint32_t(o[1]); });
        break;
      case Opcode::VLd: {
        Vreg d{};
        for (int s = 0; s < kSublanes; ++s)
          if ((o[4] >> s) & 1)
            for (int l = 0; l < kLanes; ++l)
              d[s * kLanes + l] = vmemWord(int32_t(S(1)) + o[2] + s * o[3], l);
        setV(d);
        break;
      }
      case Opcode::VSt:
        for (int s = 0; s < kSublanes; ++s)
          if ((o[4] >> s) & 1) {
            int64_t row = int32_t(S(1)) + o[2] + s * o[3];
            vmemWord(row, 0);  // range check
            std::memcpy(vmem.data() + row * kVmemRowBytes, V(0).data() + s * kLanes, kVmemRowBytes);
          }
        break;
      case Opcode::VAddF32:
        elementwise([&](size_t i) { return u(f(V(1)[i]) + f(V(2)[i])); });
        break;
      case Opcode::VSubF32:
        elementwise([&](size_t i) { return u(f(V(1)[i]) - f(V(2)[i])); });
        break;
      case Opcode::VMulF32:
        elementwise([&](size_t i) { return u(f(V(1)[i]) * f(V(2)[i])); });
        break;
      case Opcode::VMaxF32:
        elementwise([&](size_t i) {
          float a = f(V(1)[i]), b = f(V(2)[i]);
          return std::isnan(a) || std::isnan(b) ? kCanonicalNanBits : u(a > b ? a : b);
        });
        break;
      case Opcode::VExpF32:
        elementwise([&](size_t i) { return u(std::exp(f(V(1)[i]))); });
        break;
      case Opcode::VRcpF32:
        elementwise([&](size_t i) { return u(1.0f / f(V(1)[i])); });
        break;
      case Opcode::VCvtBf16F32:
        elementwise([&](size_t i) { return uint32_t(f32ToBf16Bits(f(V(1)[i]))); });
        break;
      case Opcode::XluMaxF32: {
        Vreg d;
        laneTree(V(1), &d, [](float a, float b) { return a > b ? a : b; });
        setV(d);
        break;
      }
      case Opcode::XluSumF32: {
        Vreg d;
        laneTree(V(1), &d, [](float a, float b) { return a + b; });
        setV(d);
        break;
      }
      case Opcode::MxuWPushBf16: {
        Mxu& m = mxu_[o[0]];
        if (m.pushes >= kN / 8) throw std::runtime_error("MXU staging overflow");
        for (int j = 0; j < kSublanes; ++j)
          for (int n = 0; n < kN; ++n)
            m.staging[size_t(8 * m.pushes + j) * kN + n] = uint16_t(V(1)[j * kLanes + n]);
        ++m.pushes;
        break;
      }
      case Opcode::MxuLatch: {
        Mxu& m = mxu_[o[0]];
        m.active = m.staging;
        std::fill(m.staging.begin(), m.staging.end(), 0);
        m.pushes = 0;
        break;
      }
      case Opcode::MxuMmBf16:
      case Opcode::MxuMmaBf16: {
        Mxu& m = mxu_[o[0]];
        std::vector<float>& slot = m.acc[o[2]];
        if (slot.empty()) slot.assign(kSublanes * kN, 0.0f);
        for (int j = 0; j < kSublanes; ++j)
          for (int n = 0; n < kN; ++n) {
            float r = 0.0f;
            for (int k = 0; k < kN; ++k) {
              float prod = bf16BitsToF32(uint16_t(V(1)[j * kLanes + k])) *
                           bf16BitsToF32(m.active[size_t(k) * kN + n]);
              r = r + prod;
            }
            float& out = slot[size_t(j) * kN + n];
            out = canonicalizeNan(inst.op == Opcode::MxuMmaBf16 ? out + r : r);
          }
        break;
      }
      case Opcode::MxuPop: {
        std::vector<float>& slot = mxu_[o[1]].acc[o[2]];
        Vreg d{};
        for (int j = 0; j < kSublanes; ++j)
          for (int n = 0; n < kN; ++n)
            d[j * kLanes + n] = slot.empty() ? 0 : u(slot[size_t(j) * kN + n]);
        setV(d);
        break;
      }
      default:
        throw std::runtime_error("SampleModel does not model '" +
                                 std::string(inst.info().mnemonic) + "'");
    }
  }

  const Program& prog_;
  uint32_t s_[kNumScalarRegs] = {};
  std::array<Vreg, kMaxVectorRegs> v_{};
  uint32_t flags_[kMaxSyncFlags] = {};
  Mxu mxu_[kMaxMxus];
};

}  // namespace tpusim::isa::testing
