#include "compiler/lower/module/KernelCache.h"

#include "isa/Rules.h"

#include <fmt/format.h>

#include <cstring>

#include "compiler/lower/module/ModuleLowering.h"
#include "kernels/llo/Printer.h"
#include "kernels/llo/Types.h"

namespace tpusim::lower {

namespace codegen = kernels::codegen;
namespace llo = kernels::llo;

namespace {

// The fields of a compiled kernel in one fixed order: numbers (operands,
// 32-bit words of data, bundle / address / size fields), strings, and the
// structure that must be equal for two kernels to be related at all.
struct Fields {
  std::vector<int64_t> nums;
  std::vector<std::string> strs;
  std::vector<int64_t> shape;
};

int64_t bitsOf(double d) {
  int64_t v;
  std::memcpy(&v, &d, sizeof v);
  return v;
}

// Reads the fields of `k` into `f` (write == false), or overwrites them
// from `f` (write == true; `k` has the structure f was read from).
void walk(codegen::CompiledKernel& k, Fields& f, bool write) {
  size_t ni = 0, si = 0;
  auto num = [&](auto& field) {
    if (write)
      field = static_cast<std::remove_reference_t<decltype(field)>>(f.nums[ni++]);
    else
      f.nums.push_back(int64_t(field));
  };
  auto str = [&](std::string& s) {
    if (write)
      s = f.strs[si++];
    else
      f.strs.push_back(s);
  };
  auto shape = [&](int64_t v) {
    if (!write) f.shape.push_back(v);
  };
  isa::Program& p = k.program;
  str(p.chip);
  shape(int64_t(p.code.size()));
  for (isa::Bundle& b : p.code)
    for (isa::Instruction& in : b.slots) {
      shape(int64_t(in.op));
      if (in.empty()) continue;
      for (int o = 0; o < in.info().numOperands; ++o) num(in.operands[size_t(o)]);
    }
  shape(int64_t(p.data.size()));
  for (isa::DataSegment& d : p.data) {
    shape(int64_t(d.space));
    shape(int64_t(d.bytes.size()));
    num(d.address);
    if (d.bytes.size() % 4 == 0) {
      for (size_t i = 0; i < d.bytes.size(); i += 4) {
        uint32_t w = uint32_t(d.bytes[i]) | uint32_t(d.bytes[i + 1]) << 8 |
                     uint32_t(d.bytes[i + 2]) << 16 | uint32_t(d.bytes[i + 3]) << 24;
        num(w);
        if (write)
          for (int b = 0; b < 4; ++b) d.bytes[i + size_t(b)] = uint8_t(w >> (8 * b));
      }
    } else {
      for (uint8_t& byte : d.bytes) num(byte);
    }
  }
  // A kernel to link has no buffer table and no signature (Compile.h).
  shape(int64_t(p.buffers.size()));
  shape(p.hasSignature ? 1 : 0);
  shape(int64_t(p.symbols.size()));
  for (isa::Symbol& s : p.symbols) {
    str(s.name);
    num(s.bundle);
  }
  shape(int64_t(p.debugMap.size()));
  for (isa::DebugEntry& e : p.debugMap) {
    num(e.begin);
    num(e.end);
    str(e.opName);
    str(e.hloInstruction);
    str(e.sourceFile);
    num(e.sourceLine);
  }
  shape(int64_t(p.costs.size()));
  for (isa::CostEntry& c : p.costs) {
    str(c.opName);
    shape(bitsOf(c.flops));
    num(c.hbmBytesRead);
    num(c.hbmBytesWritten);
    num(c.vmemBytesRead);
    num(c.vmemBytesWritten);
  }
  const codegen::CompileStats& s = k.stats;
  for (int64_t v : {s.bundles, s.instructions, int64_t(s.vectorRegs), int64_t(s.scalarRegs),
                    int64_t(s.maskRegs), s.vmemRows, s.smemWords, int64_t(s.flags), s.stepBundles,
                    int64_t(s.spills), int64_t(s.spillInstructions), int64_t(s.scheduleFallbacks),
                    k.smemWords, int64_t(k.standalone)})
    shape(v);
}

// A derived kernel whose patched operands leave their encodings (an SMEM
// offset past a 16-bit immediate, say) is not what the code generator would
// emit: it would have chosen another sequence. Such a kernel is compiled.
bool operandsFit(const codegen::CompiledKernel& k) {
  for (const isa::Bundle& b : k.program.code)
    for (size_t slot = 0; slot < b.slots.size(); ++slot)
      if (!b.slots[slot].empty() && !isa::checkInstruction(b.slots[slot], int(slot)).empty())
        return false;
  return true;
}

Fields fieldsOf(const codegen::CompiledKernel& k) {
  Fields f;
  walk(const_cast<codegen::CompiledKernel&>(k), f, false);  // read mode changes nothing
  return f;
}

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

constexpr int64_t kLow = int64_t(1) << 32;
int64_t lo32(int64_t v) { return int64_t(uint64_t(v) & 0xFFFFFFFFu); }
int64_t hi32(int64_t v) { return int64_t(uint64_t(v) >> 32); }

void appendLocs(const llo::Block& b, std::string& key) {
  for (const auto& op : b.ops) {
    key += op->loc.file;  // "file:line;", appended in place (every op of every kernel)
    key += ':';
    key += std::to_string(op->loc.line);
    key += ';';
    for (const llo::Block& r : op->regions) appendLocs(r, key);
  }
}

}  // namespace

// How each field of a key's kernels follows the parameters (KernelCache.h).
struct KernelCache::Table {
  enum class Kind : uint8_t { Lin, Lo, Hi };
  struct Rel {
    uint32_t param;
    Kind kind;
    int64_t c;
  };
  struct NumField {
    uint32_t index;  // into Fields::nums
    bool constant;   // equal in both kernels
    std::vector<Rel> rels;
  };
  std::vector<NumField> nums;       // only fields with relations
  std::vector<uint32_t> namedStrs;  // strings that are the name replaced
  // Per parameter: which of its parts changed between the two kernels (a
  // part that did not may be hidden in any field, so it must not change).
  std::vector<bool> changed, lowChanged, highChanged;
  Fields last;  // of the second kernel

  static int64_t apply(const Rel& r, int64_t p) {
    switch (r.kind) {
      case Kind::Lin:
        return p + r.c;
      case Kind::Lo:
        return lo32(p + r.c);
      case Kind::Hi:
        return hi32(p) + r.c;
    }
    return 0;
  }

  // Derives the relations from two kernels; nullptr when they are not related.
  static std::shared_ptr<Table> derive(const codegen::CompiledKernel& a, const Params& pa,
                                       const codegen::CompiledKernel& b, const Params& pb) {
    Fields fa = fieldsOf(a), fb = fieldsOf(b);
    if (fa.shape != fb.shape || fa.nums.size() != fb.nums.size() ||
        fa.strs.size() != fb.strs.size() || pa.values.size() != pb.values.size())
      return nullptr;
    auto t = std::make_shared<Table>();
    const size_t np = pa.values.size();
    for (size_t j = 0; j < np; ++j) {
      t->changed.push_back(pa.values[j] != pb.values[j]);
      t->lowChanged.push_back(lo32(pa.values[j]) != lo32(pb.values[j]));
      t->highChanged.push_back(hi32(pa.values[j]) != hi32(pb.values[j]));
    }
    for (size_t i = 0; i < fa.nums.size(); ++i) {
      const int64_t v0 = fa.nums[i], v1 = fb.nums[i];
      NumField nf{uint32_t(i), v0 == v1, {}};
      for (size_t j = 0; j < np; ++j) {
        const int64_t p0 = pa.values[j], p1 = pb.values[j];
        if (t->changed[j] && v1 - p1 == v0 - p0)
          nf.rels.push_back({uint32_t(j), Kind::Lin, v0 - p0});
        if (t->lowChanged[j] && v0 >= 0 && v0 < kLow && v1 >= 0 && v1 < kLow &&
            lo32(v1 - p1) == lo32(v0 - p0))
          nf.rels.push_back({uint32_t(j), Kind::Lo, lo32(v0 - p0)});
        if (t->highChanged[j] && v1 - hi32(p1) == v0 - hi32(p0))
          nf.rels.push_back({uint32_t(j), Kind::Hi, v0 - hi32(p0)});
      }
      if (!nf.constant && nf.rels.empty()) return nullptr;  // a difference nothing explains
      if (!nf.rels.empty()) t->nums.push_back(std::move(nf));
    }
    for (size_t i = 0; i < fa.strs.size(); ++i) {
      if (fa.strs[i] == fb.strs[i]) continue;
      if (pa.name == pb.name || replaceAll(fa.strs[i], pa.name, pb.name) != fb.strs[i])
        return nullptr;
      t->namedStrs.push_back(uint32_t(i));
    }
    t->last = std::move(fb);
    return t;
  }

  // The fields for parameters `p` (from those of `lastParams`), or false
  // when they do not follow uniquely.
  bool predict(const Params& lastParams, const Params& p, Fields* out) const {
    const size_t np = p.values.size();
    for (size_t j = 0; j < np; ++j) {
      const int64_t was = lastParams.values[j], now = p.values[j];
      if ((!changed[j] && now != was) || (!lowChanged[j] && lo32(now) != lo32(was)) ||
          (!highChanged[j] && hi32(now) != hi32(was)))
        return false;
    }
    *out = last;
    for (const NumField& nf : nums) {
      bool have = nf.constant;
      int64_t v = last.nums[nf.index];
      for (const Rel& r : nf.rels) {
        int64_t x = apply(r, p.values[r.param]);
        if (have && x != v) return false;  // the relations disagree
        v = x;
        have = true;
      }
      out->nums[nf.index] = v;
    }
    for (uint32_t i : namedStrs) out->strs[i] = replaceAll(last.strs[i], lastParams.name, p.name);
    return true;
  }
};

codegen::CompiledKernel KernelCache::get(const llo::Kernel& kernel,
                                         const codegen::CompileOptions& options,
                                         const std::function<codegen::CompiledKernel()>& compile) {
  auto compileNow = [&] {
    ++compiled_;
    return compile();
  };
  if (options.standalone) return compileNow();
  // The key: the kernel as printed without names (its own, and the operand
  // and value names in quotes, which are HLO names that differ per layer),
  // with its source locations.
  std::string key = fmt::format("{}:{}\n", kernel.loc.file, kernel.loc.line);
  {
    std::string printed = replaceAll(llo::printKernel(kernel), "@" + kernel.name, "@");
    char quote = 0;
    for (char c : printed) {
      if (quote == 0 && (c == '"' || c == '\'')) {
        quote = c;
      } else if (c == quote) {
        quote = 0;
        continue;
      }
      if (quote == 0) key += c;
    }
  }
  appendLocs(kernel.body->body, key);
  Params params{{int64_t(options.firstBundle), options.smemBase, options.smemBase * 4},
                options.hloInstruction};
  auto addArrays = [&](const std::vector<llo::ArrayOperand>& arrays,
                       const std::vector<int64_t>& addresses) {
    for (size_t i = 0; i < arrays.size() && i < addresses.size(); ++i) {
      int64_t bytes =
          llo::refBytes(llo::Type::ref(llo::MemSpace::Hbm, arrays[i].dtype, arrays[i].shape));
      bool crosses = bytes > 0 && hi32(addresses[i]) != hi32(addresses[i] + bytes - 1);
      key += crosses ? 'X' : '.';
      if (arrays[i].pairRows) key += fmt::format("p{}", arrays[i].pairRows);  // packed s8x2 layout
      params.values.push_back(addresses[i]);
    }
  };
  addArrays(kernel.inputs, options.inputAddresses);
  addArrays(kernel.outputs, options.outputAddresses);
  key += fmt::format("|{}|{}", options.inputAddresses.size(), options.outputAddresses.size());
  // Cross-kernel prefetch: the plans' structure in the key; the next kernel's
  // source addresses (absolute, in this kernel's SMEM data) are parameters.
  key += "|" + options.prefetched.key() + "|" + options.prefetchNext.key() + "|" +
         options.inFlight.key() + "|" + (options.deferWriteBack ? "defer" : "") +
         options.drainBefore.key();
  for (const codegen::PrefetchCopy& c : options.prefetchNext.copies)
    params.values.push_back(int64_t(c.desc.srcAddr));
  if (key.find('X') != std::string::npos) return compileNow();  // carries: never derived

  Entry& e = entries_[key];
  if (e.uncacheable) return compileNow();
  if (!e.haveFirst) {
    e.haveFirst = true;
    e.first = compileNow();
    e.firstParams = params;
    return e.first;
  }
  if (e.table) {
    Fields f;
    codegen::CompiledKernel k;
    bool derivable = e.table->predict(e.lastParams, params, &f);
    if (derivable) {
      k = e.last;
      walk(k, f, true);
      derivable = operandsFit(k);
    }
    if (derivable) {
      k.firstBundle = options.firstBundle;
      k.smemBase = options.smemBase;
      k.machineText.clear();  // not relocated; --dump compiles standalone kernels only
      if (verify_) {
        codegen::CompiledKernel real = compileNow();
        Fields want = fieldsOf(real);
        if (want.nums != f.nums || want.strs != f.strs || want.shape != f.shape)
          throw ModuleLoweringError(
              fmt::format("kernel cache: the kernel derived for %{} differs from the compiled one",
                          options.hloInstruction));
        --compiled_;
      }
      ++derived_;
      return k;
    }
  }
  // No table, or this kernel does not follow from it: compile, and learn from
  // the first kernel and this one.
  codegen::CompiledKernel k = compileNow();
  std::shared_ptr<Table> t = Table::derive(e.first, e.firstParams, k, params);
  if (!t && !e.table) {
    e.uncacheable = true;
    e.first = {};  // free it
  } else if (t) {
    e.table = std::move(t);
    e.last = k;
    e.lastParams = params;
  }
  return k;
}

}  // namespace tpusim::lower
