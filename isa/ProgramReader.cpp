// Reading a .tpuprog: every offset, size, count, string, enum and cross
// reference is checked before it is used (see ProgramFile.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <tuple>

#include "isa/Decoder.h"
#include "isa/ProgramFile.h"
#include "isa/ProgramFileFormat.h"
#include "isa/SharedCode.h"

namespace tpusim::isa {

using namespace tpuprog;

namespace {

// Bounds-checked reads from one section; every failure names where it happened.
class Cursor {
 public:
  Cursor(const uint8_t* base, uint64_t begin, uint64_t end, std::string where)
      : base_(base), pos_(begin), end_(end), where_(std::move(where)) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return end_ - pos_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

  bool fail(const std::string& message) {
    if (error_.empty())
      error_ = fmt::format("{} (at byte offset 0x{:x}): {}", where_, pos_, message);
    return false;
  }
  bool need(uint64_t n, const char* what) {
    if (failed()) return false;
    if (n > left())
      return fail(
          fmt::format("{} needs {} bytes but only {} are left in the {}", what, n, left(), where_));
    return true;
  }
  uint64_t raw(int n, const char* what) {
    if (!need(uint64_t(n), what)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(base_[pos_ + i]) << (8 * i);
    pos_ += uint64_t(n);
    return v;
  }
  uint8_t u8(const char* what) { return uint8_t(raw(1, what)); }
  uint32_t u32(const char* what) { return uint32_t(raw(4, what)); }
  uint64_t u64(const char* what) { return raw(8, what); }
  double f64(const char* what) {
    uint64_t u = raw(8, what);
    double d;
    std::memcpy(&d, &u, 8);
    return d;
  }
  std::string str(const char* what) {
    uint32_t n = u32(what);
    if (!need(n, what)) return {};
    std::string s(reinterpret_cast<const char*>(base_ + pos_), n);
    pos_ += n;
    return s;
  }
  const uint8_t* bytes(uint64_t n, const char* what) {
    if (!need(n, what)) return nullptr;
    const uint8_t* p = base_ + pos_;
    pos_ += n;
    return p;
  }
  // A record count, checked against the bytes left so a corrupt count cannot
  // make the reader allocate or loop beyond the file.
  uint32_t count(uint64_t minRecordBytes, const char* what) {
    uint32_t n = u32(what);
    if (failed()) return 0;
    if (minRecordBytes && uint64_t(n) > left() / minRecordBytes) {
      fail(fmt::format("{} is {}, but {} bytes cannot hold that many (each takes at least {})",
                       what, n, left(), minRecordBytes));
      return 0;
    }
    return n;
  }
  bool done() {
    if (failed()) return false;
    if (left() != 0)
      return fail(fmt::format("{} unexpected bytes at the end of the {}", left(), where_));
    return true;
  }

 private:
  const uint8_t* base_;
  uint64_t pos_, end_;
  std::string where_;
  std::string error_;
};

// What the section readers share: whether the code is kept, and its size
// (kept or not) for the sections that point into it.
struct Loaded {
  bool keepCode = true;
  uint16_t versionMinor = 0;  // 2: the code section holds shared bodies
  uint64_t bundles = 0;
  ProgramFileInfo* info = nullptr;
};

bool readMeta(Cursor& c, Program* p, Loaded&) {
  p->chip = c.str("the chip name");
  return c.done();
}

// `n` encoded bundles into *out (or only checked when out is null); `what`
// names them in errors ("bundle", "shared body 3, bundle").
bool readBundles(Cursor& c, uint32_t n, std::vector<Bundle>* out, const std::string& what) {
  // Grown one bundle at a time (n is checked against the section's bytes):
  // resize(n) would construct every bundle once more before the decode.
  if (out) {
    out->clear();
    out->reserve(n);
  }
  Bundle scratch;
  std::string error;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t at = c.pos();
    const uint8_t* bytes = c.bytes(kBundleBytes, "a bundle");
    if (!bytes) return false;
    if (!tryDecode(bytes, out ? &out->emplace_back() : &scratch, &error))
      return c.fail(fmt::format("{} {} (file offset 0x{:x}): {}", what, i, at, error));
  }
  return true;
}

// Format 1.2: the shared bodies and their instances after the code's own
// bundles (isa/README.md, ".tpuprog format").
bool readSharedCode(Cursor& c, Program* p, uint64_t own, Loaded& loaded) {
  // A body holds at least one bundle; an instance takes 16 bytes, a patch 16.
  uint32_t bodies = c.count(4 + kBundleBytes, "the shared body count");
  if (c.failed()) return false;
  p->bodies.resize(bodies);
  uint64_t bodyBundles = 0;
  for (uint32_t b = 0; b < bodies; ++b) {
    uint64_t at = c.pos();
    uint32_t n = c.count(kBundleBytes, "a shared body's bundle count");
    if (c.failed()) return false;
    if (n == 0)
      return c.fail(fmt::format("shared body {} (file offset 0x{:x}) has no bundles", b, at));
    if (!readBundles(c, n, &p->bodies[b].code, fmt::format("shared body {}, bundle", b)))
      return false;
    bodyBundles += n;
  }
  uint32_t instances = c.count(16, "the instance count");
  if (c.failed()) return false;
  p->instances.resize(instances);
  CodeWalk walk;
  uint64_t patches = 0;
  for (uint32_t i = 0; i < instances; ++i) {
    uint64_t at = c.pos();
    BodyInstance& in = p->instances[i];
    in.at = c.u32("an instance's first bundle");
    in.body = c.u32("an instance's body");
    uint32_t n = c.count(16, "an instance's patch count");
    if (c.u32("reserved") != 0 && !c.failed())
      return c.fail(fmt::format("instance {}: reserved field is not zero", i));
    if (c.failed()) return false;
    in.patches.resize(n);
    for (CodePatch& patch : in.patches) {
      patch.bundle = c.u32("a patch's bundle");
      patch.slot = c.u8("a patch's slot");
      patch.operand = c.u8("a patch's operand");
      if (c.raw(2, "reserved") != 0 && !c.failed())
        return c.fail(fmt::format("instance {}: a patch's reserved field is not zero", i));
      patch.value = int64_t(c.u64("a patch's value"));
    }
    if (c.failed()) return false;
    if (std::string problem = checkInstance(*p, i, own, &walk); !problem.empty())
      return c.fail(fmt::format("{} (instance at file offset 0x{:x})", problem, at));
    patches += n;
  }
  loaded.bundles = walk.pc + (own - walk.own);
  if (loaded.bundles > UINT32_MAX) return c.fail("the code has more than 2^32 bundles");
  if (loaded.info) {
    loaded.info->bodies = bodies;
    loaded.info->bodyBundles = bodyBundles;
    loaded.info->instances = instances;
    loaded.info->patches = patches;
  }
  if (!loaded.keepCode) {
    p->bodies.clear();
    p->instances.clear();
  }
  return true;
}

bool readCode(Cursor& c, Program* p, Loaded& loaded) {
  uint32_t n = c.count(kBundleBytes, "the bundle count");
  loaded.bundles = n;
  if (!readBundles(c, n, loaded.keepCode ? &p->code : nullptr, "bundle")) return false;
  if (loaded.info) loaded.info->ownBundles = n;
  if (loaded.versionMinor >= 2 && !readSharedCode(c, p, n, loaded)) return false;
  if (loaded.info) loaded.info->bundles = loaded.bundles;
  return c.done();
}

bool readData(Cursor& c, Program* p, Loaded&) {
  uint32_t n = c.count(24, "the data segment count");
  p->data.resize(n);
  for (uint32_t i = 0; i < n && !c.failed(); ++i) {
    DataSegment& seg = p->data[i];
    uint8_t space = c.u8("a data segment's memory space");
    for (int k = 0; k < 7; ++k)
      if (c.u8("reserved bytes") != 0 && !c.failed())
        return c.fail(fmt::format("data segment {}: reserved byte is not zero", i));
    seg.address = c.u64("a data segment's address");
    uint64_t len = c.u64("a data segment's length");
    if (c.failed()) return false;
    if (space >= kNumMemorySpaces)
      return c.fail(fmt::format("data segment {}: invalid memory space {}", i, space));
    seg.space = MemorySpace(space);
    if (seg.address > UINT64_MAX - len)
      return c.fail(fmt::format("data segment {}: address 0x{:x} + length {} overflows", i,
                                seg.address, len));
    const uint8_t* bytes = c.bytes(len, "a data segment's contents");
    if (!bytes) return false;
    seg.bytes.assign(bytes, bytes + len);
  }
  return c.done();
}

// The first two buffers that overlap as tpu-as refuses them (buffersOverlap:
// the same space, except an input donated to an output of the same range), or
// "". A sweep over the buffers sorted by address: O(n log n) for any file.
std::string overlappingBuffers(const std::vector<BufferDesc>& buffers) {
  std::vector<size_t> order;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].sizeBytes > 0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const BufferDesc &x = buffers[a], &y = buffers[b];
    return std::tie(x.space, x.address, a) < std::tie(y.space, y.address, b);
  });
  std::vector<size_t> open;  // buffers of this space still covering the sweep's address
  for (size_t k = 0; k < order.size(); ++k) {
    const BufferDesc& b = buffers[order[k]];
    open.erase(std::remove_if(open.begin(), open.end(),
                              [&](size_t o) {
                                return buffers[o].space != b.space ||
                                       buffers[o].address + buffers[o].sizeBytes <= b.address;
                              }),
               open.end());
    for (size_t o : open)
      if (buffersOverlap(b, buffers[o]))
        return fmt::format(
            "buffer '{}' [0x{:x}, 0x{:x}) overlaps buffer '{}' [0x{:x}, 0x{:x}) in {}", b.name,
            b.address, b.address + b.sizeBytes, buffers[o].name, buffers[o].address,
            buffers[o].address + buffers[o].sizeBytes, memorySpaceName(b.space));
    open.push_back(order[k]);
  }
  return "";
}

bool readBuffers(Cursor& c, Program* p, Loaded&) {
  uint32_t n = c.count(24, "the buffer count");
  p->buffers.resize(n);
  std::set<std::string> names;
  for (uint32_t i = 0; i < n && !c.failed(); ++i) {
    BufferDesc& b = p->buffers[i];
    b.name = c.str("a buffer name");
    uint8_t dtype = c.u8("a buffer dtype"), space = c.u8("a buffer memory space");
    uint8_t role = c.u8("a buffer role"), rank = c.u8("a buffer rank");
    b.pairRows = c.u32("a buffer layout");
    b.address = c.u64("a buffer address");
    b.sizeBytes = c.u64("a buffer size");
    if (c.failed()) return false;
    std::string what = fmt::format("buffer {} ('{}')", i, b.name);
    if (b.name.empty()) return c.fail(fmt::format("buffer {} has an empty name", i));
    if (!names.insert(b.name).second) return c.fail(what + ": duplicate buffer name");
    if (dtype >= kNumDTypes) return c.fail(fmt::format("{}: invalid dtype {}", what, dtype));
    if (space >= kNumMemorySpaces)
      return c.fail(fmt::format("{}: invalid memory space {}", what, space));
    if (role >= kNumBufferRoles) return c.fail(fmt::format("{}: invalid role {}", what, role));
    if (rank > kMaxRank)
      return c.fail(fmt::format("{}: rank {} exceeds the limit of {}", what, rank, kMaxRank));
    b.dtype = DType(dtype);
    b.space = MemorySpace(space);
    b.role = BufferRole(role);
    uint64_t bytes = uint64_t(dtypeBytes(b.dtype));
    bool overflow = false;
    for (int d = 0; d < rank; ++d) {
      int64_t dim = int64_t(c.u64("a buffer dimension"));
      if (c.failed()) return false;
      if (dim < 0) return c.fail(fmt::format("{}: dimension {} is negative ({})", what, d, dim));
      if (dim != 0 && bytes > UINT64_MAX / uint64_t(dim)) overflow = true;
      bytes = overflow ? 0 : bytes * uint64_t(dim);
      b.shape.push_back(dim);
    }
    if (overflow) return c.fail(what + ": the shape's size overflows 64 bits");
    if (b.sizeBytes < bytes)
      return c.fail(fmt::format("{}: size {} is smaller than the {} bytes its shape needs", what,
                                b.sizeBytes, bytes));
    if (b.address > UINT64_MAX - b.sizeBytes)
      return c.fail(what + ": address + size overflows 64 bits");
    if (std::string why; !pairLayoutValid(b, &why)) return c.fail(what + ": " + why);
  }
  if (c.failed()) return false;
  if (std::string clash = overlappingBuffers(p->buffers); !clash.empty()) return c.fail(clash);
  return c.done();
}

bool readSymbols(Cursor& c, Program* p, Loaded& loaded) {
  uint32_t n = c.count(8, "the symbol count");
  p->symbols.resize(n);
  std::set<std::string> names;
  for (uint32_t i = 0; i < n && !c.failed(); ++i) {
    Symbol& s = p->symbols[i];
    s.name = c.str("a symbol name");
    s.bundle = c.u32("a symbol's bundle");
    if (c.failed()) return false;
    if (s.name.empty()) return c.fail(fmt::format("symbol {} has an empty name", i));
    if (!names.insert(s.name).second)
      return c.fail(fmt::format("symbol {} ('{}') is defined twice", i, s.name));
    if (s.bundle >= loaded.bundles)
      return c.fail(fmt::format("symbol '{}' names bundle {}, but the code has {} bundles", s.name,
                                s.bundle, loaded.bundles));
  }
  return c.done();
}

bool readDebugMap(Cursor& c, Program* p, Loaded& loaded) {
  uint32_t n = c.count(24, "the debug-map entry count");
  p->debugMap.resize(n);
  for (uint32_t i = 0; i < n && !c.failed(); ++i) {
    DebugEntry& e = p->debugMap[i];
    e.begin = c.u32("a debug-map begin");
    e.end = c.u32("a debug-map end");
    e.opName = c.str("an op name");
    e.hloInstruction = c.str("an HLO instruction name");
    e.sourceFile = c.str("a source file name");
    e.sourceLine = c.u32("a source line");
    if (c.failed()) return false;
    if (e.begin > e.end || e.end > loaded.bundles)
      return c.fail(
          fmt::format("debug-map entry {} ('{}') covers bundles [{}, {}), not within "
                      "the {} bundles of the code",
                      i, e.opName, e.begin, e.end, loaded.bundles));
  }
  return c.done();
}

bool readCosts(Cursor& c, Program* p, Loaded&) {
  uint32_t n = c.count(44, "the cost entry count");
  p->costs.resize(n);
  for (uint32_t i = 0; i < n && !c.failed(); ++i) {
    CostEntry& e = p->costs[i];
    e.opName = c.str("an op name");
    e.flops = c.f64("flops");
    e.hbmBytesRead = c.u64("HBM bytes read");
    e.hbmBytesWritten = c.u64("HBM bytes written");
    e.vmemBytesRead = c.u64("VMEM bytes read");
    e.vmemBytesWritten = c.u64("VMEM bytes written");
    if (c.failed()) return false;
    if (!std::isfinite(e.flops) || e.flops < 0)
      return c.fail(fmt::format("cost entry {} ('{}'): flops {} is not a finite number >= 0", i,
                                e.opName, e.flops));
  }
  return c.done();
}

// One array leaf of a parameter or of the result: its buffer must be in the
// buffer table with `role`, the same shape and dtype, named by no other leaf.
bool readLeaf(Cursor& c, const Program& p, BufferRole role, const std::string& what,
              std::set<std::string>& used, SignatureLeaf* leaf) {
  uint8_t dtype = c.u8("a leaf's dtype"), rank = c.u8("a leaf's rank");
  uint8_t depth = c.u8("a leaf's tuple depth");
  uint8_t reserved = c.u8("reserved");
  leaf->buffer = c.str("a leaf's buffer name");
  if (c.failed()) return false;
  if (reserved != 0) return c.fail(what + ": reserved byte is not zero");
  if (dtype >= kNumDTypes) return c.fail(fmt::format("{}: invalid dtype {}", what, dtype));
  if (rank > kMaxRank)
    return c.fail(fmt::format("{}: rank {} exceeds the limit of {}", what, rank, kMaxRank));
  if (depth > kMaxTupleDepth)
    return c.fail(fmt::format("{}: tuple index {} levels deep, the limit is {}", what, depth,
                              kMaxTupleDepth));
  leaf->dtype = DType(dtype);
  for (int d = 0; d < rank; ++d) {
    int64_t dim = int64_t(c.u64("a leaf's dimension"));
    if (c.failed()) return false;
    if (dim < 0) return c.fail(fmt::format("{}: dimension {} is negative ({})", what, d, dim));
    leaf->shape.push_back(dim);
  }
  for (int k = 0; k < depth; ++k) {
    uint32_t i = c.u32("a leaf's tuple index");
    if (c.failed()) return false;
    leaf->index.push_back(int64_t(i));
  }
  const BufferDesc* buffer = nullptr;
  for (const BufferDesc& b : p.buffers)
    if (b.name == leaf->buffer) buffer = &b;
  if (!buffer || buffer->role != role)
    return c.fail(fmt::format("{} names buffer '{}', but the buffer table has no {} of that name",
                              what, leaf->buffer, bufferRoleName(role)));
  if (buffer->shape != leaf->shape || buffer->dtype != leaf->dtype)
    return c.fail(fmt::format("{}: buffer '{}' has another shape or dtype than the signature says",
                              what, leaf->buffer));
  if (!used.insert(leaf->buffer).second)
    return c.fail(fmt::format("{}: buffer '{}' is named by two leaves", what, leaf->buffer));
  return true;
}

bool readIndexPath(Cursor& c, int depth, std::vector<int64_t>* out) {
  for (int k = 0; k < depth; ++k) {
    uint32_t i = c.u32("a tuple index");
    if (c.failed()) return false;
    out->push_back(int64_t(i));
  }
  return true;
}

bool readSignature(Cursor& c, Program* p, Loaded&) {
  ProgramSignature& s = p->signature;
  uint16_t version = uint16_t(c.raw(2, "the signature version"));
  uint16_t devices = uint16_t(c.raw(2, "the device count"));
  if (c.failed()) return false;
  if (version != kSignatureVersion)
    return c.fail(fmt::format("signature version {} is not supported (this build reads {})",
                              version, kSignatureVersion));
  s.devices = devices > 1 ? devices : 1;
  s.module = c.str("the module name");
  // Each parameter takes at least 12 bytes (two string lengths, a leaf count),
  // each leaf 8 (four bytes, a string length), each alias 8.
  uint32_t n = c.count(12, "the parameter count");
  s.parameters.resize(n);
  std::set<std::string> inputs, outputs;
  for (uint32_t i = 0; i < n && !c.failed(); ++i) {
    SignatureParameter& param = s.parameters[i];
    param.name = c.str("a parameter name");
    param.type = c.str("a parameter type");
    uint32_t leaves = c.count(8, "a parameter's leaf count");
    if (c.failed()) return false;
    param.leaves.resize(leaves);
    for (uint32_t k = 0; k < leaves; ++k)
      if (!readLeaf(c, *p, BufferRole::Input,
                    fmt::format("parameter {} ('{}') leaf {}", i, param.name, k), inputs,
                    &param.leaves[k]))
        return false;
  }
  s.resultType = c.str("the result type");
  uint32_t results = c.count(8, "the result leaf count");
  if (c.failed()) return false;
  s.results.resize(results);
  for (uint32_t k = 0; k < results; ++k)
    if (!readLeaf(c, *p, BufferRole::Output, fmt::format("result leaf {}", k), outputs,
                  &s.results[k]))
      return false;
  uint32_t aliases = c.count(8, "the alias count");
  s.aliases.resize(aliases);
  for (uint32_t i = 0; i < aliases && !c.failed(); ++i) {
    SignatureAlias& a = s.aliases[i];
    a.parameter = int64_t(c.u32("an alias's parameter"));
    uint8_t outputDepth = c.u8("an alias's output depth");
    uint8_t parameterDepth = c.u8("an alias's parameter depth");
    uint16_t res = uint16_t(c.raw(2, "reserved"));
    if (c.failed()) return false;
    if (res != 0) return c.fail(fmt::format("alias {}: reserved field is not zero", i));
    if (outputDepth > kMaxTupleDepth || parameterDepth > kMaxTupleDepth)
      return c.fail(
          fmt::format("alias {}: tuple index deeper than the limit of {}", i, kMaxTupleDepth));
    if (a.parameter >= int64_t(n))
      return c.fail(
          fmt::format("alias {} names parameter {}, but the signature has {}", i, a.parameter, n));
    if (!readIndexPath(c, outputDepth, &a.outputIndex) ||
        !readIndexPath(c, parameterDepth, &a.parameterIndex))
      return false;
  }
  if (!c.done()) return false;
  p->hasSignature = true;
  return true;
}

}  // namespace

bool parseProgram(const uint8_t* data, size_t size, const std::string& name, Program* out,
                  std::string* error, ProgramFileInfo* info, const ProgramReadOptions& options) {
  auto fail = [&](std::string message) {
    *error = name + ": " + message;
    return false;
  };
  if (size < kHeaderSize)
    return fail(
        fmt::format("file is {} bytes, shorter than the {}-byte header (truncated, or "
                    "not a .tpuprog file)",
                    size, kHeaderSize));
  if (std::memcmp(data, kProgramMagic, 8) != 0)
    return fail("bad magic: not a .tpuprog file (expected \"TPUPROG\\0\")");
  Cursor h(data, 8, kHeaderSize, "header");
  ProgramFileInfo fi;
  fi.versionMajor = uint16_t(h.raw(2, "version"));
  fi.versionMinor = uint16_t(h.raw(2, "version"));
  uint32_t headerSize = h.u32("header size");
  fi.fileSize = h.u64("file size");
  fi.checksum = h.u64("checksum");
  fi.isaFingerprint = h.u32("ISA fingerprint");
  fi.bundleBytes = h.u32("bundle size");
  uint32_t numSections = h.u32("section count");
  uint32_t reserved = h.u32("reserved");
  uint64_t tableOffset = h.u64("section table offset");
  uint64_t reserved2 = h.u64("reserved");
  if (fi.versionMajor != kProgramVersionMajor || fi.versionMinor > kProgramVersionMinor)
    return fail(
        fmt::format("format version {}.{} is not supported (this build reads {}.0 to "
                    "{}.{})",
                    fi.versionMajor, fi.versionMinor, kProgramVersionMajor, kProgramVersionMajor,
                    kProgramVersionMinor));
  if (headerSize != kHeaderSize)
    return fail(fmt::format("header size is {}, expected {}", headerSize, kHeaderSize));
  if (fi.fileSize != size)
    return fail(
        fmt::format("the header says the file is {} bytes but it is {} (truncated or "
                    "extended)",
                    fi.fileSize, size));
  if (options.verifyChecksum) {
    uint64_t actual = imageChecksum(data, size);
    if (actual != fi.checksum)
      return fail(
          fmt::format("checksum mismatch (header 0x{:016x}, contents 0x{:016x}): the "
                      "file is corrupt",
                      fi.checksum, actual));
  }
  if (fi.isaFingerprint != isaFingerprint())
    return fail(
        fmt::format("the file was encoded for a different instruction set (fingerprint "
                    "0x{:08x}, this build 0x{:08x}); reassemble or regenerate it",
                    fi.isaFingerprint, isaFingerprint()));
  if (fi.bundleBytes != uint32_t(kBundleBytes))
    return fail(fmt::format("bundles are {} bytes in the file but {} in this build", fi.bundleBytes,
                            kBundleBytes));
  if (reserved != 0 || reserved2 != 0) return fail("reserved header fields are not zero");
  // Format 1.0 has the seven sections; 1.1 and 1.2 may add the signature.
  uint32_t maxSections = fi.versionMinor >= 1 ? uint32_t(kMaxSectionType) : kNumSectionTypes;
  if (numSections < kNumSectionTypes || numSections > maxSections)
    return fail(fmt::format("the file has {} sections, expected {} (format {}.{})", numSections,
                            maxSections == kNumSectionTypes
                                ? std::to_string(kNumSectionTypes)
                                : fmt::format("{} or {}", uint32_t(kNumSectionTypes), maxSections),
                            fi.versionMajor, fi.versionMinor));
  if (tableOffset != kHeaderSize)
    return fail(
        fmt::format("section table at offset 0x{:x}, expected 0x{:x}", tableOffset, kHeaderSize));
  uint64_t tableEnd = kHeaderSize + uint64_t(numSections) * kSectionEntrySize;
  if (tableEnd > size) return fail("the section table runs past the end of the file");

  // Section table: each type once, in order, inside the file after the table,
  // not overlapping.
  uint64_t previousEnd = tableEnd;
  Cursor t(data, kHeaderSize, tableEnd, "section table");
  for (uint32_t i = 0; i < numSections; ++i) {
    ProgramFileInfo::Section s;
    s.type = t.u32("section type");
    uint32_t res = t.u32("reserved");
    s.offset = t.u64("section offset");
    s.size = t.u64("section size");
    if (t.failed()) return fail(t.error());
    if (s.type != i + 1)
      return fail(fmt::format("section table entry {} has type {}, expected {} ({})", i, s.type,
                              i + 1, sectionName(i + 1)));
    s.name = sectionName(s.type);
    if (res != 0) return fail(fmt::format("section '{}': reserved field is not zero", s.name));
    if (s.offset < previousEnd || s.offset > size || s.size > size - s.offset)
      return fail(
          fmt::format("section '{}' at offset 0x{:x}, size {} is not within the file "
                      "({} bytes) after the previous section (ends at 0x{:x})",
                      s.name, s.offset, s.size, size, previousEnd));
    if (s.offset - previousEnd >= 8)
      return fail(
          fmt::format("section '{}' at offset 0x{:x} leaves {} unused bytes after the "
                      "previous section (at most 7 of alignment)",
                      s.name, s.offset, s.offset - previousEnd));
    previousEnd = s.offset + s.size;
    fi.sections.push_back(s);
  }
  if (previousEnd != size)
    return fail(fmt::format("{} bytes after the last section (ends at 0x{:x}) belong to no section",
                            size - previousEnd, previousEnd));

  Program p;
  Loaded loaded;
  loaded.keepCode = options.keepCode;
  loaded.versionMinor = fi.versionMinor;
  loaded.info = &fi;
  using Reader = bool (*)(Cursor&, Program*, Loaded&);
  static const Reader readers[] = {readMeta,    readCode,     readData,  readBuffers,
                                   readSymbols, readDebugMap, readCosts, readSignature};
  for (uint32_t i = 0; i < numSections; ++i) {
    ProgramFileInfo::Section& s = fi.sections[i];
    Cursor c(data, s.offset, s.offset + s.size, fmt::format("section '{}'", s.name));
    if (!readers[i](c, &p, loaded)) return fail(c.error());
    switch (s.type) {
      case kCode:
        s.count = uint32_t(loaded.bundles);
        break;
      case kData:
        s.count = uint32_t(p.data.size());
        break;
      case kBuffers:
        s.count = uint32_t(p.buffers.size());
        break;
      case kSymbols:
        s.count = uint32_t(p.symbols.size());
        break;
      case kDebugMap:
        s.count = uint32_t(p.debugMap.size());
        break;
      case kCosts:
        s.count = uint32_t(p.costs.size());
        break;
      case kSignature:
        s.count = uint32_t(p.signature.parameters.size() + p.signature.results.size());
        break;
      default:
        s.count = 1;
    }
  }
  *out = std::move(p);
  if (info) *info = std::move(fi);
  return true;
}

}  // namespace tpusim::isa
