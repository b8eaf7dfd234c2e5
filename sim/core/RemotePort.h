// What a TensorCore needs from a multi-chip system (sim/system): its device
// id, the number of chips, and the two ICI operations of the ISA. A core on a
// single chip has none; then chip.id is 0, chip.count 1, and dma.remote /
// sync.remote are faults.
#pragma once

#include <cstdint>
#include <string>

#include "isa/DmaDescriptor.h"

namespace tpusim::sim {

class RemotePort {
 public:
  virtual ~RemotePort() = default;
  virtual int deviceId() const = 0;
  virtual int numDevices() const = 0;
  // dma.remote at SystemC time = `cycle`: copy `desc` to chip `device`. The
  // system later calls the sender's TensorCore::deliverCompletion (queue,
  // sendFlag) when the last byte has left, and the destination core's
  // deliverSignal(recvFlag, 1) when it has arrived. Returns "" or the fault
  // (then *faultAddress is the offending byte address, or -1).
  virtual std::string sendRemote(int core, int queue, int sendFlag, int recvFlag, int device,
                                 const isa::DmaDescriptor& desc, int64_t cycle,
                                 int64_t* faultAddress) = 0;
  // sync.remote: flag `flag` of core `core` on chip `device` gets +amount
  // after the route's hop latency. Returns "" or the fault.
  virtual std::string signalRemote(int core, int device, int flag, uint32_t amount,
                                   int64_t cycle) = 0;
};

}  // namespace tpusim::sim
