#include "kernels/lib/Registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "kernels/dsl/HostArrayIo.h"
#include "kernels/lib/AttentionBackward.h"
#include "kernels/lib/Collectives.h"
#include "kernels/lib/DecodeAttention.h"
#include "kernels/lib/FlashAttention.h"
#include "kernels/lib/LayerNorm.h"
#include "kernels/lib/Matmul.h"
#include "kernels/lib/RmsNorm.h"
#include "kernels/lib/Softmax.h"
#include "kernels/lib/SwiGlu.h"

namespace tpusim::kernels::lib {

namespace {

KernelEntry matmulEntry() {
  KernelEntry e;
  e.name = "matmul";
  e.description = "out[m,n] = x[m,k] @ y[k,n]: bf16 -> f32 or s8 -> s32, any shape (padded)";
  e.params = {{"m", "256", "rows of x and out"},
              {"n", "256", "columns of y and out"},
              {"k", "256", "contracting size"},
              {"dtype", "bf16", "input dtype: bf16 or s8"},
              {"bm", "auto", "block rows (auto: tpuc's tiling model for the chip)"},
              {"bn", "auto", "block columns (auto: tpuc's tiling model)"},
              {"bk", "auto", "block K (auto: tpuc's tiling model)"}};
  e.build = [](const Params& p) {
    int64_t m = p.integer("m", 1), n = p.integer("n", 1), k = p.integer("k", 1);
    llo::DType t = p.dtype("dtype", {llo::DType::Bf16, llo::DType::S8});
    MatmulBlocks b = chooseMatmulBlocks(m, n, k, t, p.target());
    if (!p.isAuto("bm")) b.bm = p.integer("bm", 1);
    if (!p.isAuto("bn")) b.bn = p.integer("bn", 1);
    if (!p.isAuto("bk")) b.bk = p.integer("bk", 1);
    b.resident = matmulResultsFitMxu(std::min(b.bm, m), std::min(b.bn, n), p.target());
    LibraryKernel lk{matmulCall(m, n, k, t, b), {{{m, k}, t, "x"}, {{k, n}, t, "y"}}, {}, {}};
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      return std::vector<std::vector<double>>{matmulReference(in.at(0), in.at(1), m, n, k)};
    };
    // int8 accumulates exactly in s32; f32 accumulation error grows with k.
    lk.tolerance = t == llo::DType::S8 ? Tolerance{0, 0} : Tolerance{1e-5 + 1e-6 * double(k), 1e-2};
    return lk;
  };
  return e;
}

KernelEntry softmaxEntry() {
  KernelEntry e;
  e.name = "softmax";
  e.description = "row softmax of f32[rows, cols], blocks of full rows";
  e.params = {{"rows", "64", "rows of x"},
              {"cols", "256", "columns of x (the softmax axis)"},
              {"block_rows", "8", "rows per block"}};
  e.build = [](const Params& p) {
    int64_t r = p.integer("rows", 1), c = p.integer("cols", 1);
    LibraryKernel lk{softmaxCall(r, c, p.integer("block_rows", 1)),
                     {{{r, c}, llo::DType::F32, "x"}},
                     {},
                     {1e-5, 1e-3}};
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      return std::vector<std::vector<double>>{softmaxReference(in.at(0), r, c)};
    };
    return lk;
  };
  return e;
}

// The registry: one line per kernel (see Registry.h for why it is explicit).
std::vector<KernelEntry> makeRegistry() {
  return {matmulEntry(),          softmaxEntry(),          rmsNormEntry(),
          layerNormEntry(),       swiGluEntry(),           flashAttentionEntry(),
          decodeAttentionEntry(), pagedAttentionEntry(),   ringAllReduceEntry(),
          allGatherMatmulEntry(), attentionForwardEntry(), attentionBackwardEntry()};
}

std::string kernelNames() {
  std::string s;
  for (const KernelEntry& e : registeredKernels()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

std::string paramNames(const KernelEntry& e) {
  std::string s;
  for (const ParamSpec& p : e.params) s += (s.empty() ? "" : ", ") + p.name;
  return s.empty() ? "none" : s;
}

}  // namespace

const std::string& Params::text(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    throw RegistryError(
        fmt::format("error: kernel '{}' reads parameter '{}', which it does not declare (a bug "
                    "in its registry entry)",
                    kernel_, name));
  return it->second;
}

void Params::invalid(const std::string& name, const std::string& why) const {
  throw RegistryError(fmt::format("error: {}: parameter '{}' = '{}': {}", kernel_, name,
                                  values_.count(name) ? values_.at(name) : "", why));
}

int64_t Params::integer(const std::string& name, int64_t min) const {
  const std::string& s = text(name);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) invalid(name, "expected an integer");
  if (v < min) invalid(name, fmt::format("must be at least {}", min));
  return v;
}

double Params::real(const std::string& name) const {
  const std::string& s = text(name);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v)) invalid(name, "expected a finite number");
  return v;
}

bool Params::flag(const std::string& name) const {
  const std::string& s = text(name);
  if (s == "true" || s == "1" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "no") return false;
  invalid(name, "expected true or false");
}

llo::DType Params::dtype(const std::string& name, const std::vector<llo::DType>& allowed) const {
  const std::string& s = text(name);
  std::string names;
  for (llo::DType d : allowed) {
    if (s == isa::dtypeName(d)) return d;
    names += (names.empty() ? "" : ", ") + std::string(isa::dtypeName(d));
  }
  invalid(name, "expected one of " + names);
}

const std::vector<KernelEntry>& registeredKernels() {
  static const std::vector<KernelEntry> entries = makeRegistry();
  return entries;
}

const KernelEntry& findKernel(const std::string& name) {
  for (const KernelEntry& e : registeredKernels())
    if (e.name == name) return e;
  throw RegistryError(
      fmt::format("error: unknown kernel '{}' (library kernels: {})", name, kernelNames()));
}

const codegen::TargetInfo& Params::target() const {
  static const codegen::TargetInfo fallback = codegen::TargetInfo::defaults();
  return target_ ? *target_ : fallback;
}

LibraryKernel buildKernel(const std::string& name, const std::map<std::string, std::string>& values,
                          const codegen::TargetInfo* target) {
  const KernelEntry& e = findKernel(name);
  std::map<std::string, std::string> all;
  for (const ParamSpec& p : e.params) all[p.name] = p.defaultValue;
  for (const auto& [k, v] : values) {
    if (!all.count(k))
      throw RegistryError(fmt::format(
          "error: kernel '{}' has no parameter '{}' (its parameters: {})", name, k, paramNames(e)));
    all[k] = v;
  }
  return e.build(Params(name, std::move(all), target));
}

std::vector<dsl::HostArray> LibraryKernel::sampleInputs(std::mt19937_64& rng) const {
  std::vector<dsl::HostArray> in;
  if (makeInputs) in = makeInputs(rng);
  if (in.size() > inputs.size())
    throw RegistryError(
        fmt::format("error: makeInputs gives {} arrays for {} inputs", in.size(), inputs.size()));
  for (size_t i = in.size(); i < inputs.size(); ++i)
    in.push_back(dsl::randomArray(inputs[i].shape, inputs[i].dtype, rng));
  return in;
}

std::vector<std::vector<dsl::HostArray>> LibraryKernel::sampleDeviceInputs(
    std::mt19937_64& rng) const {
  std::vector<std::vector<dsl::HostArray>> all;
  for (int d = 0; d < devices; ++d) all.push_back(sampleInputs(rng));
  return all;
}

std::vector<dsl::InterpretResult> interpretLibraryKernel(
    const LibraryKernel& lk, const llo::Kernel& kernel,
    const std::vector<std::vector<dsl::HostArray>>& inputs, const dsl::InterpretOptions& options) {
  if (int(inputs.size()) != lk.devices)
    throw RegistryError(fmt::format("error: kernel '{}' runs on {} devices, inputs for {} given",
                                    kernel.name, lk.devices, inputs.size()));
  if (lk.devices == 1) return {dsl::interpret(kernel, inputs[0], options)};
  return dsl::interpretDevices(kernel, inputs, options);
}

ErrorReport compareWithReference(const std::vector<std::vector<double>>& got,
                                 const std::vector<std::vector<double>>& want, Tolerance tol) {
  if (got.size() != want.size())
    throw RegistryError(fmt::format("error: the reference gives {} outputs, the kernel {}",
                                    want.size(), got.size()));
  ErrorReport r;
  bool nan = false;
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k].size() != want[k].size())
      throw RegistryError(fmt::format("error: output {} has {} elements, its reference {}", k,
                                      got[k].size(), want[k].size()));
    double scale = 0;
    for (double w : want[k]) scale = std::max(scale, std::fabs(w));
    for (size_t i = 0; i < got[k].size(); ++i) {
      double d = std::fabs(got[k][i] - want[k][i]);
      if (std::isnan(d)) {  // the first NaN is the worst element
        if (!nan) r.worstOutput = k, r.worstIndex = int64_t(i);
        nan = true;
        continue;
      }
      double rel = d == 0 ? 0 : d / std::max({std::fabs(want[k][i]), tol.floor * scale, 1e-300});
      r.maxAbs = std::max(r.maxAbs, d);
      if (rel > r.maxRel && !nan) r.worstOutput = k, r.worstIndex = int64_t(i);
      r.maxRel = std::max(r.maxRel, rel);
    }
  }
  if (nan) r.maxAbs = r.maxRel = std::nan("");
  r.pass = !nan && r.maxRel <= tol.rel;
  return r;
}

std::string describeKernel(const KernelEntry& e) {
  std::string s = fmt::format("{}: {}\n", e.name, e.description);
  for (const ParamSpec& p : e.params)
    s += fmt::format("    {:<12} (default {}) {}\n", p.name, p.defaultValue, p.help);
  return s;
}

}  // namespace tpusim::kernels::lib
