#include "isa/Disassembler.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "isa/AsmSyntax.h"
#include "isa/SharedCode.h"

namespace tpusim::isa {

using syntax::quoteIfNeeded;

std::string disassembleInstruction(const Instruction& inst, const TargetNamer& namer) {
  if (inst.empty()) return "nop";
  const OpcodeInfo& info = inst.info();
  std::string out(info.mnemonic);
  for (int i = 0; i < info.numOperands; ++i) {
    out += i == 0 ? " " : ", ";
    const OperandInfo& op = operandInfo(info.operands[i]);
    int64_t v = inst.operands[i];
    switch (op.cls) {
      case OperandClass::Simm:
      case OperandClass::Uimm:
        out += std::to_string(v);
        break;
      case OperandClass::Imm32:
        out += syntax::formatImm32(uint32_t(v));
        break;
      case OperandClass::Target: {
        std::string name = namer ? namer(uint32_t(v)) : "";
        out += name.empty() ? std::to_string(v) : name;
        break;
      }
      default:
        out += fmt::format("{}{}", op.prefix, v);
    }
  }
  return out;
}

std::string disassembleBundle(const Bundle& b, const TargetNamer& namer) {
  std::string out;
  for (int s = 0; s < kNumSlotInstances; ++s) {
    if (b.slots[s].empty()) continue;
    if (!out.empty()) out += " ;; ";
    // Auto-placement fills the lowest free slot of a kind, so an op needs an
    // explicit slot exactly when some lower slot of its kind is empty.
    const SlotInstance& slot = kSlotLayout[s];
    int first = firstSlotInstance(slot.kind);
    bool gapBelow = false;
    for (int j = first; j < s; ++j) gapBelow |= b.slots[j].empty();
    if (gapBelow) out += fmt::format("@{}{} ", slotInfo(slot.kind).name, slot.index);
    out += disassembleInstruction(b.slots[s], namer);
  }
  return out.empty() ? "nop" : out;
}

namespace {

std::string hex(uint64_t v) { return fmt::format("0x{:x}", v); }

uint32_t wordAt(const std::vector<uint8_t>& bytes, size_t i) {
  return uint32_t(bytes[i]) | uint32_t(bytes[i + 1]) << 8 | uint32_t(bytes[i + 2]) << 16 |
         uint32_t(bytes[i + 3]) << 24;
}

template <typename T>
std::string list(const T* values, int n) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

// A 64-byte SMEM segment that is exactly what .dma_descriptor would produce.
bool printAsDescriptor(const DataSegment& seg, std::string* out) {
  if (seg.space != MemorySpace::Smem || seg.bytes.size() != kDmaDescriptorWords * 4 ||
      seg.address % 4 != 0)
    return false;
  uint32_t words[kDmaDescriptorWords];
  for (int i = 0; i < kDmaDescriptorWords; ++i) words[i] = wordAt(seg.bytes, size_t(i) * 4);
  DmaDescriptor d;
  std::string error;
  if (!DmaDescriptor::unpack(words, &d, &error)) return false;
  DmaDescriptor canonical = d;
  for (int i = d.numDims - 1; i < 3; ++i) {
    canonical.counts[i] = 1;
    canonical.srcStrides[i] = canonical.dstStrides[i] = 0;
  }
  auto packed = canonical.pack();
  for (int i = 0; i < kDmaDescriptorWords; ++i)
    if (packed[i] != words[i]) return false;
  int n = d.numDims - 1;
  *out += fmt::format(
      ".dma_descriptor {}, src={}:{}, dst={}:{}, inner={}, counts={}, src_strides={}, "
      "dst_strides={}",
      seg.address / 4, memorySpaceName(d.src), hex(d.srcAddr), memorySpaceName(d.dst),
      hex(d.dstAddr), d.innerBytes, list(d.counts.data(), n), list(d.srcStrides.data(), n),
      list(d.dstStrides.data(), n));
  if (d.dstChip != kDmaLocalChip) *out += fmt::format(", chip={}", d.dstChip);
  if (d.widening()) *out += fmt::format(", elem={}", d.elemBytes);
  if (d.paired()) *out += fmt::format(", pair={}", d.pairOffset);
  *out += "\n";
  return true;
}

void printData(const DataSegment& seg, std::string* out) {
  if (printAsDescriptor(seg, out)) return;
  bool words = seg.bytes.size() % 4 == 0 && !seg.bytes.empty();
  size_t perLine = words ? 8 : 16, step = words ? 4 : 1;
  size_t count = seg.bytes.size() / step;
  *out += fmt::format(".data {}, {}, {}", memorySpaceName(seg.space), hex(seg.address),
                      words ? "words" : "bytes");
  for (size_t i = 0; i < count; ++i) {
    if (i > 0 && i % perLine == 0) *out += words ? "\n.words" : "\n.bytes";
    *out += (i % perLine == 0) ? " " : ", ";
    *out += words ? hex(wordAt(seg.bytes, i * 4)) : hex(seg.bytes[i]);
  }
  *out += "\n";
}

void printBuffer(const BufferDesc& b, std::string* out) {
  std::string shape = "[";
  for (size_t i = 0; i < b.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(b.shape[i]);
  shape += "]";
  *out += fmt::format(".buffer {}, shape={}, dtype={}, space={}, addr={}, role={}",
                      quoteIfNeeded(b.name), shape, dtypeName(b.dtype), memorySpaceName(b.space),
                      hex(b.address), bufferRoleName(b.role));
  uint64_t bytes = uint64_t(dtypeBytes(b.dtype));
  for (int64_t d : b.shape) bytes *= uint64_t(d);
  if (bytes != b.sizeBytes) *out += fmt::format(", size={}", b.sizeBytes);
  if (b.pairRows) *out += fmt::format(", pair_rows={}", b.pairRows);
  *out += "\n";
}

// A name as is, or quoted when it holds control or non-ASCII bytes: a
// newline in a name must not end the comment it is printed in.
std::string forComment(const std::string& name) {
  for (char c : name)
    if (uint8_t(c) < 0x20 || uint8_t(c) >= 0x7f) return syntax::quote(name);
  return name;
}

std::string opComment(size_t index, const DebugEntry& e) {
  std::string s = fmt::format("// op {}: {}", index, forComment(e.opName));
  if (!e.hloInstruction.empty()) s += fmt::format(" (hlo {})", forComment(e.hloInstruction));
  if (!e.sourceFile.empty()) s += " at " + forComment(e.sourceFile);
  if (e.sourceLine) s += fmt::format(":{}", e.sourceLine);
  s += fmt::format(", bundles [{}, {})", e.begin, e.end);
  return s;
}

std::string indexText(const std::vector<int64_t>& index) {
  std::string s = "{";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? "," : "") + std::to_string(index[i]);
  return s + "}";
}

std::string leafText(const SignatureLeaf& leaf, const char* role) {
  std::string dims;
  for (size_t i = 0; i < leaf.shape.size(); ++i)
    dims += (i ? "," : "") + std::to_string(leaf.shape[i]);
  return fmt::format("//   {} {} {}: {}[{}]\n", indexText(leaf.index), role,
                     forComment(leaf.buffer), dtypeName(leaf.dtype), dims);
}

// As comments: a signature comes from the compiler, tpu-as does not read it.
void printSignature(const ProgramSignature& s, std::string* out) {
  for (size_t n = 0; n < s.parameters.size(); ++n) {
    const SignatureParameter& p = s.parameters[n];
    *out += fmt::format("// param {} %{}: {}\n", n, forComment(p.name), forComment(p.type));
    for (const SignatureLeaf& leaf : p.leaves) *out += leafText(leaf, "input");
  }
  *out += fmt::format("// result: {}\n", forComment(s.resultType));
  for (const SignatureLeaf& leaf : s.results) *out += leafText(leaf, "output");
  for (const SignatureAlias& a : s.aliases)
    *out += fmt::format("// alias: output {} may live in param {} {} (donated)\n",
                        indexText(a.outputIndex), a.parameter, indexText(a.parameterIndex));
}

void printCode(const Program& p, const DisassemblyOptions& options, std::string* out) {
  // Labels: symbols that are identifiers, then a generated name for any other
  // bundle a branch targets.
  const uint64_t size = codeSize(p);
  std::map<uint32_t, std::vector<std::string>> labels;
  std::set<std::string> used;
  for (const Symbol& s : p.symbols)
    if (syntax::isIdentifier(s.name) && s.bundle < size && used.insert(s.name).second)
      labels[s.bundle].push_back(s.name);
  forEachBundle(p, [&](uint32_t, const Bundle& b) {
    for (const Instruction& inst : b.slots) {
      if (inst.empty()) continue;
      const OpcodeInfo& info = inst.info();
      for (int i = 0; i < info.numOperands; ++i) {
        if (operandInfo(info.operands[i]).cls != OperandClass::Target) continue;
        uint32_t t = uint32_t(inst.operands[i]);
        if (t >= size || labels.count(t)) continue;
        std::string name = fmt::format(".L{}", t);
        while (used.count(name)) name += "_";
        used.insert(name);
        labels[t].push_back(name);
      }
    }
  });
  TargetNamer namer = [&](uint32_t t) -> std::string {
    auto it = labels.find(t);
    return it == labels.end() ? "" : it->second.front();
  };
  std::multimap<uint32_t, size_t> opStarts;
  for (size_t i = 0; i < p.debugMap.size(); ++i) opStarts.insert({p.debugMap[i].begin, i});
  // Where shared code is, a comment line where each run of bundles starts:
  // the instance's body and patches (comments, so tpu-as reads the listing
  // back as the same bundles, flat).
  std::map<uint32_t, std::string> runStarts;
  if (options.annotate && hasSharedCode(p))
    forEachRun(p, [&](int64_t i, uint32_t pc) {
      if (i < 0) {
        runStarts[pc] = "// (code outside the shared bodies)";
        return;
      }
      const BodyInstance& in = p.instances[size_t(i)];
      runStarts[pc] = fmt::format(
          "// instance {} of shared body {} ({} bundles, {} patched operand{})", i, in.body,
          p.bodies[in.body].code.size(), in.patches.size(), in.patches.size() == 1 ? "" : "s");
    });
  forEachBundle(p, [&](uint32_t i, const Bundle& b) {
    if (auto run = runStarts.find(i); run != runStarts.end()) *out += run->second + "\n";
    if (options.annotate) {
      auto range = opStarts.equal_range(i);
      for (auto it = range.first; it != range.second; ++it)
        *out += opComment(it->second, p.debugMap[it->second]) + "\n";
    }
    auto it = labels.find(i);
    if (it != labels.end())
      for (const std::string& l : it->second) *out += l + ":\n";
    std::string line = "    " + disassembleBundle(b, namer);
    if (options.annotate) {
      if (line.size() < 60) line.append(60 - line.size(), ' ');
      line += fmt::format("  // {}", i);
    }
    *out += line + "\n";
  });
}

}  // namespace

std::string disassembleProgram(const Program& p, const DisassemblyOptions& options) {
  std::string out;
  auto section = [&](bool on, bool nonEmpty, const std::string& title) {
    if (!on || !nonEmpty) return false;
    if (!out.empty()) out += "\n";
    out += "// ---- " + title + "\n";
    return true;
  };
  if (options.chip && !p.chip.empty()) out += ".chip " + quoteIfNeeded(p.chip) + "\n";
  if (section(options.buffers, !p.buffers.empty(), fmt::format("buffers ({})", p.buffers.size())))
    for (const BufferDesc& b : p.buffers) printBuffer(b, &out);
  if (section(options.signature, p.hasSignature,
              fmt::format("signature of module {} ({} parameters, {} outputs; comments: tpu-as "
                          "does not read it back)",
                          forComment(p.signature.module), p.signature.parameters.size(),
                          p.signature.results.size())))
    printSignature(p.signature, &out);
  if (section(options.data, !p.data.empty(), fmt::format("data segments ({})", p.data.size())))
    for (const DataSegment& d : p.data) printData(d, &out);
  if (section(options.symbols, !p.symbols.empty(), fmt::format("symbols ({})", p.symbols.size())))
    for (const Symbol& s : p.symbols)
      out += fmt::format(".symbol {}, {}\n", quoteIfNeeded(s.name), s.bundle);
  if (section(
          options.debugMap, !p.debugMap.empty(),
          fmt::format("debug map ({} op{})", p.debugMap.size(), p.debugMap.size() == 1 ? "" : "s")))
    for (const DebugEntry& e : p.debugMap) {
      out += fmt::format(".op {}, begin={}, end={}", quoteIfNeeded(e.opName), e.begin, e.end);
      if (!e.hloInstruction.empty()) out += ", hlo=" + quoteIfNeeded(e.hloInstruction);
      if (!e.sourceFile.empty()) out += ", file=" + quoteIfNeeded(e.sourceFile);
      if (e.sourceLine) out += fmt::format(", line={}", e.sourceLine);
      out += "\n";
    }
  if (section(options.costs, !p.costs.empty(), fmt::format("costs ({})", p.costs.size())))
    for (const CostEntry& c : p.costs)
      out += fmt::format(
          ".cost {}, flops={}, hbm_read={}, hbm_write={}, vmem_read={}, "
          "vmem_write={}\n",
          quoteIfNeeded(c.opName), syntax::formatDouble(c.flops), c.hbmBytesRead, c.hbmBytesWritten,
          c.vmemBytesRead, c.vmemBytesWritten);
  std::string codeTitle = fmt::format("code ({} bundles)", codeSize(p));
  if (hasSharedCode(p))
    codeTitle = fmt::format(
        "code ({} bundles: {} instances of {} shared bodies, {} bundles outside them; listed "
        "flat, tpu-as reads them back unshared)",
        codeSize(p), p.instances.size(), p.bodies.size(), p.code.size());
  if (section(options.code, true, codeTitle)) printCode(p, options, &out);
  return out;
}

}  // namespace tpusim::isa
