#include "compiler/tools/tpu-opt/TpuOptMode.h"

namespace tpuopt {

static std::vector<Mode>& modes() {
  static std::vector<Mode> m;
  return m;
}

ModeRegistration::ModeRegistration(Mode mode) { modes().push_back(std::move(mode)); }

const std::vector<Mode>& registeredModes() { return modes(); }

}  // namespace tpuopt
