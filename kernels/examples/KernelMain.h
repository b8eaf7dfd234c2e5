// The driver behind every kernel built with tpusim_add_kernel(): trace the
// kernel, run it in interpret mode on seeded random inputs and check it
// against the reference, compile it for a chip preset, and (given the tpusim
// binary) simulate it, check the simulator's outputs equal interpret mode's
// bit for bit, and print cycles, MXU utilization and HBM bandwidth.
//
//   int main(int argc, char** argv) { return kernelMain(argc, argv, myExample()); }
//
// Options: --chip NAME|file.json  --chips-dir DIR  --tpusim PATH  --out DIR  --seed N
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/dsl/PallasCall.h"

namespace tpusim::kernels::examples {

// Inputs and outputs as doubles (bf16 and int8 given as their values).
using Reference =
    std::function<std::vector<std::vector<double>>(const std::vector<std::vector<double>>&)>;

struct KernelExample {
  dsl::PallasCall call;
  std::vector<dsl::ShapeDtype> inputs;  // named: the names become .npy file names
  Reference reference;                  // optional
  double tolerance = 1e-5;              // max |out - ref| / (1 + |ref|)
};

int kernelMain(int argc, char** argv, const KernelExample& example);

}  // namespace tpusim::kernels::examples
