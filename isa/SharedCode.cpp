#include "isa/SharedCode.h"

#include <fmt/format.h>

#include <tuple>

#include "isa/Decoder.h"
#include "isa/Encoder.h"
#include "isa/Rules.h"

namespace tpusim::isa {

uint64_t codeSize(const Program& p) {
  uint64_t n = p.code.size();
  for (const BodyInstance& in : p.instances)
    if (in.body < p.bodies.size()) n += p.bodies[in.body].code.size();
  return n;
}

void forEachRun(const Program& p, const std::function<void(int64_t, uint32_t)>& visit) {
  uint64_t pc = 0, own = 0;
  for (size_t i = 0; i < p.instances.size(); ++i) {
    const BodyInstance& in = p.instances[i];
    if (in.at > pc) {
      visit(-1, uint32_t(pc));
      own += in.at - pc;
      pc = in.at;
    }
    visit(int64_t(i), uint32_t(pc));
    pc += p.bodies[in.body].code.size();
  }
  if (own < p.code.size()) visit(-1, uint32_t(pc));
}

bool applyPatch(Bundle* b, const CodePatch& patch, std::string* error) {
  if (patch.slot >= kNumSlotInstances) {
    *error = fmt::format("slot {} does not exist (a bundle has {})", patch.slot, kNumSlotInstances);
    return false;
  }
  Instruction& in = b->slots[patch.slot];
  if (in.empty()) {
    *error = fmt::format("slot {} of the body bundle is empty", slotInstanceName(patch.slot));
    return false;
  }
  if (patch.operand >= in.info().numOperands) {
    *error = fmt::format("operand {} of {} in slot {} does not exist ({} has {})", patch.operand,
                         in.info().mnemonic, slotInstanceName(patch.slot), in.info().mnemonic,
                         in.info().numOperands);
    return false;
  }
  in.operands[patch.operand] = patch.value;
  return true;
}

void forEachBundle(const Program& p, const std::function<void(uint32_t, const Bundle&)>& visit) {
  uint64_t pc = 0, own = 0;
  Bundle scratch;
  std::string error;
  auto ownUntil = [&](uint64_t end) {
    for (; pc < end; ++pc) visit(uint32_t(pc), p.code[own++]);
  };
  for (const BodyInstance& in : p.instances) {
    ownUntil(in.at);
    const std::vector<Bundle>& body = p.bodies[in.body].code;
    size_t k = 0;
    for (uint32_t b = 0; b < body.size(); ++b, ++pc) {
      if (k == in.patches.size() || in.patches[k].bundle != b) {
        visit(uint32_t(pc), body[b]);
        continue;
      }
      scratch = body[b];
      for (; k < in.patches.size() && in.patches[k].bundle == b; ++k)
        applyPatch(&scratch, in.patches[k], &error);
      visit(uint32_t(pc), scratch);
    }
  }
  ownUntil(pc + (p.code.size() - own));
}

std::vector<Bundle> instanceCode(const Program& p, size_t i) {
  const BodyInstance& in = p.instances.at(i);
  std::vector<Bundle> code = p.bodies.at(in.body).code;
  std::string error;
  for (const CodePatch& patch : in.patches)
    if (patch.bundle < code.size()) applyPatch(&code[patch.bundle], patch, &error);
  return code;
}

std::vector<Bundle> flatCode(const Program& p) {
  if (!hasSharedCode(p)) return p.code;
  std::vector<Bundle> out;
  out.reserve(codeSize(p));
  forEachBundle(p, [&](uint32_t, const Bundle& b) { out.push_back(b); });
  return out;
}

void flattenCode(Program* p) {
  if (!hasSharedCode(*p)) return;
  p->code = flatCode(*p);
  p->bodies.clear();
  p->instances.clear();
}

int64_t ownCodeIndex(const Program& p, uint32_t pc) {
  uint64_t before = 0;  // bundles of instances before pc
  for (const BodyInstance& in : p.instances) {
    if (in.at > pc) break;
    uint64_t size = p.bodies[in.body].code.size();
    if (pc < in.at + size) return -1;
    before += size;
  }
  uint64_t own = pc - before;
  return own < p.code.size() ? int64_t(own) : -1;
}

bool patchesFor(const std::vector<Bundle>& body, const Bundle* code, size_t n,
                std::vector<CodePatch>* out) {
  if (body.size() != n) return false;
  for (size_t b = 0; b < n; ++b)
    for (int s = 0; s < kNumSlotInstances; ++s)
      if (body[b].slots[s].op != code[b].slots[s].op) return false;
  for (size_t b = 0; b < n; ++b)
    for (int s = 0; s < kNumSlotInstances; ++s) {
      const Instruction &x = body[b].slots[s], &y = code[b].slots[s];
      for (int o = 0; o < x.info().numOperands; ++o)
        if (x.operands[o] != y.operands[o])
          out->push_back({uint32_t(b), uint8_t(s), uint8_t(o), y.operands[o]});
    }
  return true;
}

std::string checkInstance(const Program& p, size_t i, uint64_t ownTotal, CodeWalk* walk) {
  const BodyInstance& in = p.instances[i];
  std::string what = fmt::format("instance {} (at bundle {})", i, in.at);
  if (in.body >= p.bodies.size())
    return fmt::format("{}: names body {}, but there are {}", what, in.body, p.bodies.size());
  if (in.at < walk->pc)
    return fmt::format("{}: starts before the previous instance ends (bundle {})", what, walk->pc);
  if (in.at - walk->pc > ownTotal - walk->own)
    return fmt::format("{}: {} bundles before it, but only {} code bundles are left", what,
                       in.at - walk->pc, ownTotal - walk->own);
  walk->own += in.at - walk->pc;
  const std::vector<Bundle>& body = p.bodies[in.body].code;
  walk->pc = uint64_t(in.at) + body.size();
  if (walk->pc > UINT32_MAX) return what + ": ends past bundle 2^32";
  for (size_t k = 0; k < in.patches.size(); ++k) {
    const CodePatch& patch = in.patches[k];
    std::string where = fmt::format("{}, patch {}", what, k);
    if (k > 0) {
      const CodePatch& prev = in.patches[k - 1];
      if (std::tie(prev.bundle, prev.slot, prev.operand) >=
          std::tie(patch.bundle, patch.slot, patch.operand))
        return where + ": patches are not in order (bundle, slot, operand) or repeat an operand";
    }
    if (patch.bundle >= body.size())
      return fmt::format("{}: bundle {} is outside the body's {} bundles", where, patch.bundle,
                         body.size());
  }
  // Each patched bundle must encode, and hold what decoding it gives.
  for (size_t k = 0; k < in.patches.size();) {
    uint32_t b = in.patches[k].bundle;
    Bundle patched = body[b];
    std::string error;
    for (; k < in.patches.size() && in.patches[k].bundle == b; ++k)
      if (!applyPatch(&patched, in.patches[k], &error))
        return fmt::format("{}, patch {}: {}", what, k, error);
    EncodedBundle bytes;
    Bundle back;
    if (!tryEncode(patched, &bytes, &error) || !tryDecode(bytes.data(), &back, &error))
      return fmt::format("{}: patched bundle {} does not encode: {}", what, b, error);
    if (back != patched)
      return fmt::format(
          "{}: patched bundle {} holds an operand value the decoder would return otherwise", what,
          b);
  }
  return "";
}

std::string checkSharedCode(const Program& p) {
  for (size_t b = 0; b < p.bodies.size(); ++b)
    if (p.bodies[b].code.empty()) return fmt::format("shared body {} has no bundles", b);
  CodeWalk walk;
  for (size_t i = 0; i < p.instances.size(); ++i)
    if (std::string problem = checkInstance(p, i, p.code.size(), &walk); !problem.empty())
      return problem;
  if (walk.pc + (p.code.size() - walk.own) > UINT32_MAX)
    return "the code has more than 2^32 bundles";
  return "";
}

}  // namespace tpusim::isa
