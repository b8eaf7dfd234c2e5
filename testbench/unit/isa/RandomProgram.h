// Random valid programs for the whole-program round trips: every section
// filled, names that need quoting, branch targets inside the code.
#pragma once

#include <random>
#include <string>

#include <cmath>

#include "isa/Encoder.h"
#include "isa/Program.h"
#include "testbench/unit/isa/RandomBundle.h"

namespace tpusim::isa::testing {

inline std::string randomName(std::mt19937_64& rng, bool allowEmpty = false) {
  static const char* plain[] = {"main", "kernel", "fusion.3", ".Lfoo", "_x$1", "inf", "s1", "a"};
  switch (rng() % 4) {
    case 0:
      return plain[rng() % 8] + std::to_string(rng() % 1000);
    case 1: {
      // Bytes that need quoting: spaces, quotes, backslashes, control and high bytes.
      std::string s;
      int n = int(rng() % 12) + (allowEmpty ? 0 : 1);
      for (int i = 0; i < n; ++i) {
        static const char tricky[] = " \"\\\t\n#/;,=:[]@%x";
        s += rng() % 3 ? tricky[rng() % (sizeof tricky - 1)] : char(rng() % 256);
      }
      if (s.empty() && !allowEmpty) s = "q";
      return s;
    }
    default:
      return plain[rng() % 8];
  }
}

inline Program randomProgram(std::mt19937_64& rng) {
  Program p;
  if (rng() % 2) p.chip = randomName(rng);
  int n = 1 + int(rng() % 40);
  for (int i = 0; i < n; ++i) {
    Bundle b = randomBundle(rng, 0.3);
    // Branch targets inside the program, so they print as labels.
    for (Instruction& inst : b.slots) {
      if (inst.empty()) continue;
      const OpcodeInfo& info = inst.info();
      for (int k = 0; k < info.numOperands; ++k)
        if (operandInfo(info.operands[k]).cls == OperandClass::Target)
          inst.operands[k] = int64_t(rng() % uint64_t(n));
    }
    // Re-deriving targets can merge or split immediates; keep only encodable bundles.
    std::array<uint32_t, kNumSharedImms> imms;
    std::string error;
    if (allocateSharedImmediates(b, &imms, &error) < 0) b = Bundle{};
    p.code.push_back(b);
  }
  uint64_t next = 0;
  for (int i = int(rng() % 4); i > 0; --i) {
    BufferDesc buf;
    buf.name = randomName(rng) + "#" + std::to_string(i);
    for (int d = int(rng() % 4); d > 0; --d) buf.shape.push_back(int64_t(rng() % 300));
    buf.dtype = DType(rng() % kNumDTypes);
    buf.space = MemorySpace(rng() % kNumMemorySpaces);
    buf.role = BufferRole(rng() % kNumBufferRoles);
    uint64_t bytes = uint64_t(dtypeBytes(buf.dtype));
    for (int64_t d : buf.shape) bytes *= uint64_t(d);
    buf.sizeBytes = bytes + (rng() % 2 ? rng() % 64 : 0);
    buf.address = next;
    next += buf.sizeBytes + rng() % 4096;
    p.buffers.push_back(buf);
  }
  for (int i = int(rng() % 4); i > 0; --i) {
    DataSegment seg;
    seg.space = MemorySpace(rng() % kNumMemorySpaces);
    seg.address = rng() % 100000;
    int len = int(rng() % 70);
    if (rng() % 3 == 0) len = kDmaDescriptorWords * 4;
    for (int k = 0; k < len; ++k) seg.bytes.push_back(uint8_t(rng()));
    if (rng() % 2 && seg.bytes.size() == kDmaDescriptorWords * 4) {
      DmaDescriptor d;
      d.numDims = 1 + int(rng() % 4);
      d.innerBytes = 1 + uint32_t(rng() % 5000);
      d.srcAddr = rng() % (uint64_t(1) << 40);
      for (int k = 0; k + 1 < d.numDims; ++k) {
        d.counts[k] = 1 + uint32_t(rng() % 100);
        d.srcStrides[k] = uint32_t(rng());
        d.dstStrides[k] = uint32_t(rng());
      }
      auto words = d.pack();
      for (int k = 0; k < kDmaDescriptorWords; ++k)
        for (int b = 0; b < 4; ++b) seg.bytes[size_t(k * 4 + b)] = uint8_t(words[k] >> (8 * b));
      seg.space = MemorySpace::Smem;
      seg.address = (rng() % 1000) * 4;
    }
    p.data.push_back(seg);
  }
  for (int i = int(rng() % 4); i > 0; --i)
    p.symbols.push_back({randomName(rng) + "_" + std::to_string(i), uint32_t(rng() % n)});
  for (int i = int(rng() % 4); i > 0; --i) {
    DebugEntry e;
    e.begin = uint32_t(rng() % uint64_t(n + 1));
    e.end = e.begin + uint32_t(rng() % uint64_t(n + 1 - e.begin));
    e.opName = randomName(rng, true);
    e.hloInstruction = rng() % 2 ? randomName(rng, true) : "";
    e.sourceFile = rng() % 2 ? randomName(rng, true) : "";
    e.sourceLine = uint32_t(rng() % 3 ? rng() % 5000 : 0);
    p.debugMap.push_back(e);
  }
  for (int i = int(rng() % 3); i > 0; --i) {
    CostEntry c;
    c.opName = randomName(rng, true);
    c.flops = rng() % 2 ? double(rng() % 1000000)
                        : std::ldexp(double(rng() % 1000), int(rng() % 200) - 100);
    c.hbmBytesRead = rng() % (uint64_t(1) << 40);
    c.hbmBytesWritten = rng();
    c.hbmBytesWritten >>= 1;
    c.vmemBytesRead = rng() % 1000;
    c.vmemBytesWritten = 0;
    p.costs.push_back(c);
  }
  return p;
}

}  // namespace tpusim::isa::testing
