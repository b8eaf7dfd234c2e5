#include "isa/ProgramFile.h"

#include "isa/support/InputFile.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "isa/Encoder.h"
#include "isa/ProgramFileFormat.h"
#include "isa/SharedCode.h"

namespace tpusim::isa {

using namespace tpuprog;

namespace {

class Writer {
 public:
  std::vector<uint8_t> bytes;
  void u8(uint8_t v) { bytes.push_back(v); }
  void u16(uint16_t v) { raw(v, 2); }
  void u32(uint32_t v) { raw(v, 4); }
  void u64(uint64_t v) { raw(v, 8); }
  void f64(double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    u64(u);
  }
  void str(const std::string& s) {
    u32(uint32_t(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void blob(const uint8_t* p, size_t n) { bytes.insert(bytes.end(), p, p + n); }
  void patch64(size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes[at + i] = uint8_t(v >> (8 * i));
  }
  void align8() {
    while (bytes.size() % 8) bytes.push_back(0);
  }

 private:
  void raw(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(uint8_t(v >> (8 * i)));
  }
};

void writeLeaf(Writer& w, const SignatureLeaf& leaf) {
  w.u8(uint8_t(leaf.dtype));
  w.u8(uint8_t(leaf.shape.size()));
  w.u8(uint8_t(leaf.index.size()));
  w.u8(0);
  w.str(leaf.buffer);
  for (int64_t d : leaf.shape) w.u64(uint64_t(d));
  for (int64_t k : leaf.index) w.u32(uint32_t(k));
}

void writeSignature(Writer& w, const ProgramSignature& s) {
  w.u16(kSignatureVersion);
  w.u16(uint16_t(s.devices > 1 ? s.devices : 0));
  w.str(s.module);
  w.u32(uint32_t(s.parameters.size()));
  for (const SignatureParameter& p : s.parameters) {
    w.str(p.name);
    w.str(p.type);
    w.u32(uint32_t(p.leaves.size()));
    for (const SignatureLeaf& leaf : p.leaves) writeLeaf(w, leaf);
  }
  w.str(s.resultType);
  w.u32(uint32_t(s.results.size()));
  for (const SignatureLeaf& leaf : s.results) writeLeaf(w, leaf);
  w.u32(uint32_t(s.aliases.size()));
  for (const SignatureAlias& a : s.aliases) {
    w.u32(uint32_t(a.parameter));
    w.u8(uint8_t(a.outputIndex.size()));
    w.u8(uint8_t(a.parameterIndex.size()));
    w.u16(0);
    for (int64_t k : a.outputIndex) w.u32(uint32_t(k));
    for (int64_t k : a.parameterIndex) w.u32(uint32_t(k));
  }
}

// What the signature section cannot represent (the reader checks the rest).
bool signatureFits(const ProgramSignature& s, std::string* error) {
  if (s.devices > 0xFFFF) {
    *error = fmt::format("signature: {} devices, the limit is 65535", s.devices);
    return false;
  }
  auto index = [&](const std::vector<int64_t>& path, const std::string& what) {
    if (path.size() > kMaxTupleDepth) {
      *error = fmt::format("signature: {}: tuple index {} levels deep, the limit is {}", what,
                           path.size(), kMaxTupleDepth);
      return false;
    }
    for (int64_t k : path)
      if (k < 0 || k > int64_t(UINT32_MAX)) {
        *error = fmt::format("signature: {}: tuple index {} out of range", what, k);
        return false;
      }
    return true;
  };
  auto leaf = [&](const SignatureLeaf& l) {
    if (l.shape.size() > kMaxRank) {
      *error = fmt::format("signature: buffer '{}': rank {} exceeds the limit of {}", l.buffer,
                           l.shape.size(), kMaxRank);
      return false;
    }
    return index(l.index, fmt::format("buffer '{}'", l.buffer));
  };
  for (const SignatureParameter& p : s.parameters)
    for (const SignatureLeaf& l : p.leaves)
      if (!leaf(l)) return false;
  for (const SignatureLeaf& l : s.results)
    if (!leaf(l)) return false;
  for (const SignatureAlias& a : s.aliases) {
    if (a.parameter < 0 || a.parameter > int64_t(UINT32_MAX)) {
      *error = fmt::format("signature: alias of parameter {}: out of range", a.parameter);
      return false;
    }
    if (!index(a.outputIndex, "an alias's output") ||
        !index(a.parameterIndex, "an alias's parameter"))
      return false;
  }
  return true;
}

void writeSection(Writer& w, uint32_t type, const Program& p) {
  switch (type) {
    case kMeta:
      w.str(p.chip);
      break;
    case kCode: {
      auto bundles = [&](const std::vector<Bundle>& code) {
        w.u32(uint32_t(code.size()));
        for (const Bundle& b : code) {
          EncodedBundle bytes = encode(b);
          w.blob(bytes.data(), bytes.size());
        }
      };
      bundles(p.code);
      if (!hasSharedCode(p)) break;
      w.u32(uint32_t(p.bodies.size()));
      for (const SharedBody& body : p.bodies) bundles(body.code);
      w.u32(uint32_t(p.instances.size()));
      for (const BodyInstance& in : p.instances) {
        w.u32(in.at);
        w.u32(in.body);
        w.u32(uint32_t(in.patches.size()));
        w.u32(0);
        for (const CodePatch& patch : in.patches) {
          w.u32(patch.bundle);
          w.u8(patch.slot);
          w.u8(patch.operand);
          w.u16(0);
          w.u64(uint64_t(patch.value));
        }
      }
      break;
    }
    case kData:
      w.u32(uint32_t(p.data.size()));
      for (const DataSegment& d : p.data) {
        w.u8(uint8_t(d.space));
        for (int k = 0; k < 7; ++k) w.u8(0);
        w.u64(d.address);
        w.u64(d.bytes.size());
        w.blob(d.bytes.data(), d.bytes.size());
      }
      break;
    case kBuffers:
      w.u32(uint32_t(p.buffers.size()));
      for (const BufferDesc& b : p.buffers) {
        w.str(b.name);
        w.u8(uint8_t(b.dtype));
        w.u8(uint8_t(b.space));
        w.u8(uint8_t(b.role));
        w.u8(uint8_t(b.shape.size()));
        w.u32(b.pairRows);  // the memory layout (0: row-major)
        w.u64(b.address);
        w.u64(b.sizeBytes);
        for (int64_t d : b.shape) w.u64(uint64_t(d));
      }
      break;
    case kSymbols:
      w.u32(uint32_t(p.symbols.size()));
      for (const Symbol& s : p.symbols) {
        w.str(s.name);
        w.u32(s.bundle);
      }
      break;
    case kDebugMap:
      w.u32(uint32_t(p.debugMap.size()));
      for (const DebugEntry& e : p.debugMap) {
        w.u32(e.begin);
        w.u32(e.end);
        w.str(e.opName);
        w.str(e.hloInstruction);
        w.str(e.sourceFile);
        w.u32(e.sourceLine);
      }
      break;
    case kCosts:
      w.u32(uint32_t(p.costs.size()));
      for (const CostEntry& c : p.costs) {
        w.str(c.opName);
        w.f64(c.flops);
        w.u64(c.hbmBytesRead);
        w.u64(c.hbmBytesWritten);
        w.u64(c.vmemBytesRead);
        w.u64(c.vmemBytesWritten);
      }
      break;
    case kSignature:
      writeSignature(w, p.signature);
      break;
  }
}

}  // namespace

uint32_t isaFingerprint() {
  static const uint32_t fingerprint = [] {
    std::string text;
    for (int k = 0; k < kNumSlotKinds; ++k) {
      const SlotInfo& s = slotInfo(SlotKind(k));
      text += fmt::format("slot {} {};", s.name, s.count);
    }
    for (int k = 0; k < kNumOperandKinds; ++k) {
      const OperandInfo& o = operandInfo(OperandKind(k));
      text += fmt::format("operand {} {} {} {};", k, o.prefix, o.bits, int(o.cls));
    }
    for (int i = 1; i < kNumOpcodes; ++i) {
      const OpcodeInfo& op = kOpcodeTable[i];
      text += fmt::format("op {} {} {}", op.mnemonic, int(op.slot), op.slotOpcode);
      for (int j = 0; j < op.numOperands; ++j) text += fmt::format(" {}", int(op.operands[j]));
      text += ";";
    }
    text += fmt::format("imm {} {} bundle {}", kNumSharedImms, kImmFieldBits, kBundleBits);
    uint32_t h = 0x811c9dc5u;
    for (char ch : text) {
      h ^= uint8_t(ch);
      h *= 0x01000193u;
    }
    return h;
  }();
  return fingerprint;
}

bool serializeProgram(const Program& p, std::vector<uint8_t>* out, std::string* error,
                      bool readBack) {
  const bool shared = hasSharedCode(p);
  if (shared) {
    if (std::string problem = checkSharedCode(p); !problem.empty()) {
      *error = problem;
      return false;
    }
    for (size_t b = 0; b < p.bodies.size(); ++b)
      for (size_t i = 0; i < p.bodies[b].code.size(); ++i) {
        EncodedBundle bytes;
        std::string problem;
        if (!tryEncode(p.bodies[b].code[i], &bytes, &problem)) {
          *error = fmt::format("shared body {}, bundle {}: {}", b, i, problem);
          return false;
        }
      }
  }
  for (size_t i = 0; i < p.code.size(); ++i) {
    EncodedBundle bytes;
    std::string problem;
    if (!tryEncode(p.code[i], &bytes, &problem)) {
      *error = fmt::format("bundle {}: {}", i, problem);
      return false;
    }
  }
  for (const BufferDesc& b : p.buffers)
    if (b.shape.size() > kMaxRank) {
      *error = fmt::format("buffer '{}': rank {} exceeds the limit of {}", b.name, b.shape.size(),
                           kMaxRank);
      return false;
    }
  if (p.code.size() > UINT32_MAX || p.data.size() > UINT32_MAX || p.buffers.size() > UINT32_MAX) {
    *error = "too many records for one section";
    return false;
  }
  if (p.hasSignature && !signatureFits(p.signature, error)) return false;
  // The oldest format that holds the program: 1.0 (seven sections) without a
  // signature or shared code, exactly as before either existed; 1.1 with a
  // signature; 1.2 with shared code.
  const uint32_t numSections = p.hasSignature ? uint32_t(kSignature) : uint32_t(kNumSectionTypes);
  Writer w;
  w.blob(reinterpret_cast<const uint8_t*>(kProgramMagic), 8);
  w.u16(kProgramVersionMajor);
  w.u16(shared ? 2 : p.hasSignature ? 1 : 0);
  w.u32(kHeaderSize);
  w.u64(0);  // file size, patched below
  w.u64(0);  // checksum, patched below
  w.u32(isaFingerprint());
  w.u32(kBundleBytes);
  w.u32(numSections);
  w.u32(0);
  w.u64(kHeaderSize);  // section table offset
  w.u64(0);
  size_t table = w.bytes.size();
  w.bytes.resize(table + numSections * kSectionEntrySize);
  for (uint32_t type = 1; type <= numSections; ++type) {
    w.align8();
    uint64_t begin = w.bytes.size();
    writeSection(w, type, p);
    uint64_t size = w.bytes.size() - begin;
    size_t entry = table + (type - 1) * kSectionEntrySize;
    Writer e;
    e.u32(type);
    e.u32(0);
    e.u64(begin);
    e.u64(size);
    std::copy(e.bytes.begin(), e.bytes.end(), w.bytes.begin() + long(entry));
  }
  w.patch64(16, w.bytes.size());
  w.patch64(kChecksumOffset, imageChecksum(w.bytes.data(), w.bytes.size()));
  // Whatever the reader would reject must not be written.
  if (!readBack) {
    *out = std::move(w.bytes);
    return true;
  }
  Program check;
  std::string problem;
  ProgramReadOptions checkOnly;
  checkOnly.keepCode = false;
  if (!parseProgram(w.bytes.data(), w.bytes.size(), "program", &check, &problem, nullptr,
                    checkOnly)) {
    *error = problem;
    return false;
  }
  *out = std::move(w.bytes);
  return true;
}

bool readProgramFile(const std::string& path, Program* out, std::string* error,
                     ProgramFileInfo* info) {
  if (path != "-")
    if (auto problem = support::inputFileProblem(path)) {
      *error = fmt::format("{}: {}", path, *problem);
      return false;
    }
  FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) {
    *error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
    return false;
  }
  std::vector<uint8_t> bytes;
  uint8_t buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    bytes.insert(bytes.end(), buf, buf + n);
    if (bytes.size() > kMaxFileSize) {
      if (f != stdin) std::fclose(f);
      *error = fmt::format("{}: file is larger than {} bytes, not a plausible .tpuprog", path,
                           kMaxFileSize);
      return false;
    }
  }
  bool readError = std::ferror(f);
  if (f != stdin) std::fclose(f);
  if (readError) {
    *error = fmt::format("{}: read error", path);
    return false;
  }
  return parseProgram(bytes.data(), bytes.size(), path, out, error, info);
}

bool writeProgramFile(const Program& p, const std::string& path, std::string* error) {
  std::vector<uint8_t> bytes;
  if (!serializeProgram(p, &bytes, error)) {
    *error = path + ": cannot write the program: " + *error;
    return false;
  }
  FILE* f = path == "-" ? stdout : std::fopen(path.c_str(), "wb");
  if (!f) {
    *error = fmt::format("{}: cannot open for writing: {}", path, std::strerror(errno));
    return false;
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok &= f == stdout ? std::fflush(f) == 0 : std::fclose(f) == 0;
  if (!ok) {
    *error = fmt::format("{}: write failed: {}", path, std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace tpusim::isa
