#include <atomic>
#include <cstdlib>
#include <string>

#include "hw/mxu_wrapper/RtlMxu.h"

namespace tpusim::hw {

std::string nextRtlTraceFile() {
  static std::atomic<int> count{0};
  const char* path = std::getenv("TPUSIM_TRACE_RTL");
  if (!path || !*path) return {};
  int k = count++;
  return k == 0 ? std::string(path) : std::string(path) + "." + std::to_string(k);
}

}  // namespace tpusim::hw
