// Interpret mode: runs a traced pallas_call functionally, without bundles.
// The grid runs in Pallas order with every parallel axis shuffled (seeded), each
// block copied HBM->VMEM when its index changes and written back when the output
// block index changes; uninitialized memory (fresh output blocks, scratch, the
// padding of edge blocks) is poisoned with NaN; two parallel grid points that
// write the same output element are reported as a race. Numerics are the
// machine's (llo/TileMath.h), so results equal the simulator's bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/llo/Interpreter.h"

namespace tpusim::kernels::dsl {

// A host array: one element per 32-bit word, in its low bits (bf16: 16, int8: 8).
struct HostArray {
  std::vector<int64_t> shape;
  llo::DType dtype = llo::DType::F32;
  std::vector<uint32_t> words;

  int64_t size() const;
  static HostArray fromFloats(std::vector<int64_t> shape, llo::DType dtype,
                              const std::vector<float>& values);  // f32 / bf16 (RNE)
  static HostArray fromInts(std::vector<int64_t> shape, llo::DType dtype,
                            const std::vector<int32_t>& values);  // s32 / s8 (wraps to 8 bits)
  float floatAt(int64_t i) const;                                 // f32 / bf16
  int32_t intAt(int64_t i) const;                                 // s32 / s8
};

struct InterpretOptions {
  uint64_t seed = 0;
  bool shuffleParallel = true;
  int mxuSize = 128;  // the MXU size whose accumulation order to reproduce
  int maxRaceReports = 8;
};

struct InterpretResult {
  std::vector<HostArray> outputs;
  std::vector<std::string> races;  // one line per reported race
  int64_t gridSteps = 0;
  int64_t blockCopiesIn = 0, blockCopiesOut = 0;
};

// Throws llo::InterpretError on a run-time error (out-of-bounds block index,
// deadlocking wait, ...), with the DSL source location.
InterpretResult interpret(const llo::Kernel& kernel, const std::vector<HostArray>& inputs,
                          const InterpretOptions& options = {});

// An SPMD kernel on inputs.size() devices (inputs[d]: device d's inputs), each
// its own grid run with its own buffers, interleaved deterministically: device
// 0 runs until it waits for a semaphore that does not hold enough yet, then the
// next device (in id order, round the ring) that can run does, and so on.
// Remote copies complete at once into the target device's buffer and count on
// both semaphores. When every device left waits for a semaphore no device can
// signal any more, the run stops with an llo::InterpretError naming each waiting
// device, semaphore, value held, value wanted and DSL line. Returns one result
// per device.
std::vector<InterpretResult> interpretDevices(const llo::Kernel& kernel,
                                              const std::vector<std::vector<HostArray>>& inputs,
                                              const InterpretOptions& options = {});

}  // namespace tpusim::kernels::dsl
