// What a TensorCore needs from the chip's DMA engines: start a descriptor,
// and hear when one completes. The chip adapts its DmaSystem to this, so the
// core's timing logic does not depend on how DMA and HBM are modelled.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "isa/DmaDescriptor.h"

namespace tpusim::sim {

class HostThreads;

struct DmaCompletion {
  int queue = 0;
  int flag = 0;
  uint64_t bytes = 0;
  int64_t issueCycle = 0;
  // Core cycle at which the last byte was written; the flag increment is
  // visible to bundles issuing from completeCycle + 1 on.
  int64_t completeCycle = 0;
};

class DmaPort {
 public:
  virtual ~DmaPort() = default;
  // Starts `desc` for core `core` on `queue`; called at SystemC time = `cycle`.
  // Returns "" or the fault (addresses out of bounds, unsupported transfer);
  // then *faultAddress is the offending byte address, or -1.
  virtual std::string issue(int core, int queue, int flag, const isa::DmaDescriptor& desc,
                            int64_t cycle, int64_t* faultAddress) = 0;
  // `callback` runs (in SystemC context) whenever a descriptor of `core` completes.
  virtual void onComplete(int core, std::function<void(const DmaCompletion&)> callback) = 0;
  // Lets the model run its plain-C++ advance on host threads (timing mode
  // only: there the advance touches nothing but the chip's DMA and HBM model).
  virtual void useHostThreads(HostThreads*) {}
};

}  // namespace tpusim::sim
