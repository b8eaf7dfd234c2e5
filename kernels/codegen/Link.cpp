#include "kernels/codegen/Link.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "isa/Decoder.h"
#include "isa/Encoder.h"
#include "isa/SharedCode.h"

namespace tpusim::kernels::codegen {

namespace {

void requireOpen(const Module& m, const std::string& what) {
  if (m.finished) throw LinkError(fmt::format("cannot {}: the module was already finished", what));
}

// Who needs how much SMEM when [begin, end) of `owner` passes its end: the
// need against the size, and the largest users (ranges of one owner added up).
std::string smemOverflowMessage(const Module& m, int64_t begin, int64_t end,
                                const std::string& owner) {
  std::map<std::string, int64_t> byOwner;
  for (const Module::SmemRange& r : m.smem) byOwner[r.owner] += r.end - r.begin;
  byOwner[owner] += end - begin;
  std::vector<std::pair<int64_t, std::string>> users;
  for (const auto& [who, words] : byOwner) users.push_back({words, who});
  std::sort(users.begin(), users.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string msg = fmt::format(
      "{}: SMEM words [{}, {}) pass the end of SMEM: the program needs at least {} words ({} "
      "bytes) but the chip's SMEM holds {} words ({} bytes, core.smem_bytes); the largest users:",
      owner, begin, end, end, end * 4, m.smemCapacityWords, m.smemCapacityWords * 4);
  constexpr size_t kShown = 6;
  for (size_t i = 0; i < users.size() && i < kShown; ++i)
    msg += fmt::format("\n  {:>10} words  {}", users[i].first, users[i].second);
  if (users.size() > kShown) msg += fmt::format("\n  ({} more users)", users.size() - kShown);
  return msg;
}

void claimSmem(Module& m, int64_t begin, int64_t words, const std::string& owner) {
  int64_t end = begin + words;
  for (const Module::SmemRange& r : m.smem)
    if (words > 0 && begin < r.end && r.begin < end)
      throw LinkError(fmt::format("{}: SMEM words [{}, {}) overlap [{}, {}) of {}", owner, begin,
                                  end, r.begin, r.end, r.owner));
  if (m.smemCapacityWords > 0 && words > 0 && end > m.smemCapacityWords)
    throw LinkError(smemOverflowMessage(m, begin, end, owner));
  m.smem.push_back({begin, end, owner});
}

// A hash of the opcode in every slot of every bundle: kernels that may be
// instances of one body have the same.
uint64_t shapeHash(const std::vector<isa::Bundle>& code) {
  uint64_t h = 0xcbf29ce484222325ull ^ code.size();
  for (const isa::Bundle& b : code)
    for (const isa::Instruction& in : b.slots) {
      h ^= uint64_t(in.op);
      h *= 0x100000001b3ull;
    }
  return h;
}

// Sets each patch to the value the decoder gives for its operand (what a
// file holds), so the program read back is the one linked. False when a
// patched bundle does not encode (the kernel is then stored as plain code,
// where the writer reports it).
bool canonicalPatches(const std::vector<isa::Bundle>& body, std::vector<isa::CodePatch>* patches) {
  std::string error;
  for (size_t k = 0; k < patches->size();) {
    size_t first = k;
    uint32_t b = (*patches)[k].bundle;
    isa::Bundle patched = body[b];
    for (; k < patches->size() && (*patches)[k].bundle == b; ++k)
      isa::applyPatch(&patched, (*patches)[k], &error);
    isa::EncodedBundle bytes;
    isa::Bundle back;
    if (!isa::tryEncode(patched, &bytes, &error) || !isa::tryDecode(bytes.data(), &back, &error))
      return false;
    for (size_t j = first; j < k; ++j) {
      isa::CodePatch& patch = (*patches)[j];
      patch.value = back.slots[patch.slot].operands[patch.operand];
    }
  }
  return true;
}

// The patches that make `body` into `code` when at most half its bundles
// differ, canonical; false otherwise.
bool closeEnough(const std::vector<isa::Bundle>& body, const std::vector<isa::Bundle>& code,
                 std::vector<isa::CodePatch>* out) {
  std::vector<isa::CodePatch> patches;
  if (!isa::patchesFor(body, code.data(), code.size(), &patches)) return false;
  size_t patched = 0;
  for (size_t k = 0; k < patches.size(); ++k)
    patched += k == 0 || patches[k].bundle != patches[k - 1].bundle;
  if (2 * patched > code.size() || !canonicalPatches(body, &patches)) return false;
  *out = std::move(patches);
  return true;
}

// Stores `code` as an instance of a shared body (Module::shareCode); false
// when it is to be plain code.
bool appendShared(Module& m, const std::vector<isa::Bundle>& code) {
  if (!m.shareCode || code.size() < Module::kMinSharedBundles) return false;
  const uint64_t shape = shapeHash(code);
  const uint32_t at = m.nextBundle();
  // An instance of a body with this layout (the one with the fewest patches).
  std::vector<uint32_t>& bodies = m.bodiesByShape[shape];
  int64_t best = -1;
  std::vector<isa::CodePatch> bestPatches;
  for (uint32_t b : bodies) {
    std::vector<isa::CodePatch> patches;
    if (closeEnough(m.program.bodies[b].code, code, &patches) &&
        (best < 0 || patches.size() < bestPatches.size())) {
      best = b;
      bestPatches = std::move(patches);
    }
  }
  if (best >= 0) {
    m.program.instances.push_back({at, uint32_t(best), std::move(bestPatches)});
    m.instanceBundles += code.size();
    return true;
  }
  // A repeat of a kernel stored plain: that one becomes a body (its own
  // instance, unpatched) and this one its second instance. A kernel that
  // never repeats stays plain code, so a program without repeats is written
  // exactly as without sharing.
  std::vector<uint32_t>& plain = m.plainByShape[shape];
  for (size_t j = 0; j < plain.size(); ++j) {
    int64_t own = isa::ownCodeIndex(m.program, plain[j]);
    if (own < 0 || size_t(own) + code.size() > m.program.code.size()) continue;
    auto first = m.program.code.begin() + own, last = first + long(code.size());
    std::vector<isa::Bundle> body(first, last);
    std::vector<isa::CodePatch> patches;
    if (!closeEnough(body, code, &patches)) continue;
    m.program.code.erase(first, last);
    const uint32_t b = uint32_t(m.program.bodies.size());
    m.program.bodies.push_back({std::move(body)});
    bodies.push_back(b);
    auto& instances = m.program.instances;
    auto before =
        std::upper_bound(instances.begin(), instances.end(), plain[j],
                         [](uint32_t pc, const isa::BodyInstance& in) { return pc < in.at; });
    instances.insert(before, {plain[j], b, {}});
    instances.push_back({at, b, std::move(patches)});
    m.instanceBundles += 2 * code.size();
    plain.erase(plain.begin() + long(j));
    return true;
  }
  if (plain.size() + bodies.size() < Module::kMaxBodiesPerShape) plain.push_back(at);
  return false;
}

}  // namespace

isa::Bundle& Module::ownBundle(uint32_t pc) {
  int64_t at = isa::ownCodeIndex(program, pc);
  if (at < 0)
    throw LinkError(
        fmt::format("bundle {} is not the module's own code (it is in a shared kernel "
                    "body, or past the end)",
                    pc));
  return program.code[size_t(at)];
}

int64_t Module::nextSmemWord() const {
  int64_t end = 0;
  for (const SmemRange& r : smem) end = std::max(end, r.end);
  return end;
}

int64_t reserveSmem(Module& m, int64_t words, const std::string& owner) {
  requireOpen(m, "reserve SMEM for " + owner);
  if (words < 0) throw LinkError(fmt::format("{}: negative SMEM word count {}", owner, words));
  int64_t at = m.nextSmemWord();
  claimSmem(m, at, words, owner);
  return at;
}

void appendKernel(Module& m, const CompiledKernel& k) {
  const isa::Program& p = k.program;
  std::string name = p.symbols.empty() ? std::string("(unnamed)") : p.symbols[0].name;
  std::string who = fmt::format("kernel '{}'", name);
  requireOpen(m, "append " + who);
  if (k.standalone)
    throw LinkError(who +
                    ": compiled with CompileOptions::standalone = true (it halts and has "
                    "its own buffer table); compile it with standalone = false to link it");
  if (k.firstBundle != m.nextBundle())
    throw LinkError(
        fmt::format("{}: compiled for firstBundle {} but the module's code ends at bundle {}", who,
                    k.firstBundle, m.nextBundle()));
  if (!m.program.chip.empty() && !p.chip.empty() && p.chip != m.program.chip)
    throw LinkError(fmt::format("{}: compiled for chip '{}' but the module is for '{}'", who,
                                p.chip, m.program.chip));
  for (const isa::Symbol& s : p.symbols)
    for (const isa::Symbol& t : m.program.symbols)
      if (s.name == t.name)
        throw LinkError(fmt::format("{}: symbol '{}' is already defined (at bundle {})", who,
                                    s.name, t.bundle));
  // SMEM: the kernel's range, and its data segments inside it.
  for (const isa::DataSegment& d : p.data) {
    if (d.space != isa::MemorySpace::Smem) continue;
    int64_t first = int64_t(d.address / 4), last = int64_t((d.address + d.bytes.size() + 3) / 4);
    if (d.address % 4 != 0 || first < k.smemBase || last > k.smemBase + k.smemWords)
      throw LinkError(fmt::format(
          "{}: SMEM data segment at byte {} ({} bytes) is outside the kernel's words [{}, {})", who,
          d.address, d.bytes.size(), k.smemBase, k.smemBase + k.smemWords));
  }
  uint32_t end = k.firstBundle + uint32_t(p.code.size());
  for (const isa::DebugEntry& e : p.debugMap)
    if (e.begin < k.firstBundle || e.end > end || e.begin > e.end)
      throw LinkError(fmt::format("{}: debug-map entry '{}' [{}, {}) is outside its code [{}, {})",
                                  who, e.opName, e.begin, e.end, k.firstBundle, end));
  claimSmem(m, k.smemBase, k.smemWords, who);

  if (m.program.chip.empty()) m.program.chip = p.chip;
  // `mark n` names debug-map entry n: the kernel's entries move to the end of the module's map.
  const int64_t markBase = int64_t(m.program.debugMap.size());
  std::vector<isa::Bundle> code = p.code;
  for (isa::Bundle& b : code)
    for (isa::Instruction& in : b.slots)
      if (in.op == isa::Opcode::Mark) {
        if (in.operands[0] < 0 || in.operands[0] >= int64_t(p.debugMap.size()))
          throw LinkError(fmt::format("{}: mark {} names no debug-map entry (the kernel has {})",
                                      who, in.operands[0], p.debugMap.size()));
        in.operands[0] += markBase;
      }
  if (!appendShared(m, code)) m.program.code.insert(m.program.code.end(), code.begin(), code.end());
  m.program.data.insert(m.program.data.end(), p.data.begin(), p.data.end());
  m.program.symbols.insert(m.program.symbols.end(), p.symbols.begin(), p.symbols.end());
  m.program.debugMap.insert(m.program.debugMap.end(), p.debugMap.begin(), p.debugMap.end());
  m.program.costs.insert(m.program.costs.end(), p.costs.begin(), p.costs.end());
}

isa::Program finishModule(Module& m, std::vector<isa::BufferDesc> buffers) {
  requireOpen(m, "finish the module");
  isa::Bundle halt;
  halt.slot(isa::SlotKind::Misc, 0).op = isa::Opcode::Halt;
  m.program.code.push_back(halt);
  const uint32_t size = m.nextBundle();
  isa::forEachBundle(m.program, [&](uint32_t c, const isa::Bundle& b) {
    for (const isa::Instruction& in : b.slots)
      for (int o = 0; o < in.info().numOperands; ++o)
        if (isa::operandInfo(in.info().operands[o]).cls == isa::OperandClass::Target &&
            (in.operands[o] < 0 || in.operands[o] >= int64_t(size)))
          throw LinkError(fmt::format("bundle {}: {} branches to bundle {}, outside the {} bundles",
                                      c, in.info().mnemonic, in.operands[o], size));
  });
  std::set<std::string> names;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const isa::BufferDesc& a = buffers[i];
    if (!names.insert(a.name).second)
      throw LinkError(fmt::format("buffer '{}' appears twice in the buffer table", a.name));
    for (size_t j = 0; j < i; ++j) {
      const isa::BufferDesc& b = buffers[j];
      if (isa::buffersOverlap(a, b))
        throw LinkError(fmt::format("buffer '{}' [{}, {}) overlaps buffer '{}' [{}, {})", a.name,
                                    a.address, a.address + a.sizeBytes, b.name, b.address,
                                    b.address + b.sizeBytes));
    }
  }
  m.program.buffers = std::move(buffers);
  m.finished = true;
  return std::move(m.program);  // it may be big; the module is finished
}

}  // namespace tpusim::kernels::codegen
