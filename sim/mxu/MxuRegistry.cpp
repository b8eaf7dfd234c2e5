#include "sim/mxu/MxuRegistry.h"

#include <fmt/format.h>

#include <map>

#include "isa/target/MxuConfig.h"
#include "sim/mxu/MxuModel.h"

namespace tpusim::sim {
namespace {

struct RtlEntry {
  int slots;  // result-buffer slots the model was built with
  RtlMxuFactory factory;
};

std::map<int, RtlEntry>& rtlFactories() {
  static std::map<int, RtlEntry> factories;  // built on first use: safe from static init
  return factories;
}

}  // namespace

void registerRtlMxuFactory(int n, int slots, RtlMxuFactory factory) {
  rtlFactories()[n] = {slots, std::move(factory)};
}

std::vector<int> registeredRtlMxuSizes() {
  std::vector<int> sizes;
  for (const auto& [n, f] : rtlFactories()) sizes.push_back(n);
  return sizes;
}

bool parseMxuModelKind(const std::string& text, MxuModelKind* kind) {
  if (text == "model")
    *kind = MxuModelKind::Model;
  else if (text == "rtl")
    *kind = MxuModelKind::Rtl;
  else
    return false;
  return true;
}

std::unique_ptr<MxuUnit> makeMxu(const target::MxuConfig& config, MxuModelKind kind,
                                 bool functional, std::string* error) {
  const int n = int(config.size);
  if (kind == MxuModelKind::Model)
    return std::make_unique<MxuModel>(n, int(config.acc_slots), functional, config.int8_rate >= 2);
  auto it = rtlFactories().find(n);
  if (it != rtlFactories().end()) {
    if (config.acc_slots <= it->second.slots) return it->second.factory(config, functional);
    if (error)
      *error = fmt::format(
          "--mxu-model rtl: the RTL MXU of size {} was built with {} result slots, the preset "
          "has {} (mxu.acc_slots); reconfigure with -DTPUSIM_RTL_SLOTS=64 and rebuild",
          n, it->second.slots, config.acc_slots);
    return nullptr;
  }
  std::vector<int> sizes = registeredRtlMxuSizes();
  if (error) {
    if (sizes.empty())
      *error = fmt::format(
          "--mxu-model rtl: this binary has no RTL MXU models linked (link the CMake target "
          "tpusim_rtl_mxu_registered, and configure with -DTPUSIM_RTL_SIZES=\"{}\")",
          n);
    else
      *error = fmt::format(
          "--mxu-model rtl: no RTL MXU of size {} was built (built: {}); reconfigure with "
          "-DTPUSIM_RTL_SIZES=\"{};{}\" and rebuild (about a minute of compilation per size at "
          "128x128)",
          n, fmt::join(sizes, ", "), fmt::join(sizes, ";"), n);
  }
  return nullptr;
}

}  // namespace tpusim::sim
