// Interpret mode's run of one kernel's grid, as the multi-device driver
// (InterpretDevices.cpp) needs it: its buffers in a fixed order (so a remote
// copy finds the same buffer on another device) and the link to the others.
#pragma once

#include <memory>
#include <vector>

#include "kernels/dsl/Interpret.h"

namespace tpusim::kernels::dsl {

class GridRunner {
 public:
  virtual ~GridRunner() = default;
  virtual void setDeviceLink(llo::DeviceLink* link) = 0;
  // Every buffer of the run (arrays, blocks, scratch), the same order on every device.
  virtual std::vector<llo::Buffer*> buffers() = 0;
  virtual InterpretResult run() = 0;
};

std::unique_ptr<GridRunner> makeGridRunner(const llo::Kernel& kernel,
                                           const std::vector<HostArray>& inputs,
                                           const InterpretOptions& options);

}  // namespace tpusim::kernels::dsl
