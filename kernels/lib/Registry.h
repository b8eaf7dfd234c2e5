// The kernel library's registry: every library kernel by name ("matmul",
// "rms_norm", ...) with its description, its parameters (name, default, help),
// and a builder that turns parameter values into the pallas_call, its input
// arrays, a double-precision reference and the tolerance the kernel meets.
// tpu-kernel and the HLO compiler (custom calls such as `tpu.rms_norm`) find
// kernels here.
//
//   lib::LibraryKernel k = lib::buildKernel("rms_norm", {{"rows", "2048"}, {"cols", "4096"}});
//   std::unique_ptr<llo::Kernel> ir = k.trace();
//
// Registration is the explicit list in Registry.cpp (a static initializer in a
// static library is dropped by the linker when nothing else references its file).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/codegen/TargetInfo.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/PallasCall.h"

namespace tpusim::kernels::lib {

// An unknown kernel or parameter, or a parameter value that does not parse or is
// out of range. The message lists what exists.
class RegistryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ParamSpec {
  std::string name;
  std::string defaultValue;
  std::string help;
};

// Parameter values as given (text), with typed accessors that check them. Every
// declared parameter has a value (its default when not given).
class Params {
 public:
  Params(std::string kernel, std::map<std::string, std::string> values,
         const codegen::TargetInfo* target = nullptr)
      : kernel_(std::move(kernel)), values_(std::move(values)), target_(target) {}
  // The chip the kernel is built for: parameters that default to "auto" (the
  // matmul's blocks) are chosen for it. TargetInfo::defaults() when no chip
  // was given.
  const codegen::TargetInfo& target() const;
  bool isAuto(const std::string& name) const { return text(name) == "auto"; }
  const std::string& text(const std::string& name) const;
  int64_t integer(const std::string& name, int64_t min = INT64_MIN) const;  // value >= min
  double real(const std::string& name) const;                               // finite
  bool flag(const std::string& name) const;  // true/false, 1/0, yes/no
  // A dtype name ("f32", "bf16", ...) that must be one of `allowed`.
  llo::DType dtype(const std::string& name, const std::vector<llo::DType>& allowed) const;
  [[noreturn]] void invalid(const std::string& name, const std::string& why) const;

 private:
  std::string kernel_;
  std::map<std::string, std::string> values_;
  const codegen::TargetInfo* target_ = nullptr;
};

// Inputs and outputs as doubles in row-major order (bf16 and int8 given as their values).
using Reference =
    std::function<std::vector<std::vector<double>>(const std::vector<std::vector<double>>&)>;

// How close a result must be to the reference. The relative error of element i
// is |got - want| / max(|want|, floor * max_j |want_j|) (the floor keeps
// elements near zero, where rounding of larger intermediates dominates, from
// reading as huge relative errors); the kernel passes when every relative
// error is <= rel (NaN never passes).
struct Tolerance {
  double rel = 1e-5;
  double floor = 1e-3;
};

// One built instance of a library kernel.
struct LibraryKernel {
  LibraryKernel(dsl::PallasCall c, std::vector<dsl::ShapeDtype> in, Reference ref = {},
                Tolerance tol = {})
      : call(std::move(c)), inputs(std::move(in)), reference(std::move(ref)), tolerance(tol) {}
  dsl::PallasCall call;
  std::vector<dsl::ShapeDtype> inputs;  // named: the names are the .npy / tpusim buffer names
  // An SPMD kernel's reference takes every device's inputs, device after
  // device (device 0's inputs, then device 1's, ...), and returns every
  // device's outputs in the same order.
  Reference reference;  // empty when the kernel has none
  Tolerance tolerance;
  // Chips the kernel runs on (SPMD kernels: interpret with
  // dsl::interpretDevices, simulate with tpusim --topology); 1 otherwise.
  int devices = 1;
  // Seeded inputs for a run; empty: uniform random values per input
  // (dsl::randomArray). Kernels whose inputs must be valid (lengths, page tables) set it.
  std::function<std::vector<dsl::HostArray>(std::mt19937_64&)> makeInputs = nullptr;
  // What the build chose that a user may not expect (a fast path not taken
  // and why), one line each; tpu-kernel prints them as notes.
  std::vector<std::string> notes;
  std::unique_ptr<llo::Kernel> trace() const { return call.trace(inputs); }
  // Seeded inputs: makeInputs when set, else uniform random values per input
  // (dsl::randomArray: floats in [-2, 2), ints in [-128, 127]).
  std::vector<dsl::HostArray> sampleInputs(std::mt19937_64& rng) const;
  // Seeded inputs of every device (sampleInputs per device, device 0 first).
  std::vector<std::vector<dsl::HostArray>> sampleDeviceInputs(std::mt19937_64& rng) const;
};

// Interpret mode of a library kernel on every device's inputs (one device:
// dsl::interpret; several: dsl::interpretDevices).
std::vector<dsl::InterpretResult> interpretLibraryKernel(
    const LibraryKernel& lk, const llo::Kernel& kernel,
    const std::vector<std::vector<dsl::HostArray>>& inputs, const dsl::InterpretOptions& options);

struct KernelEntry {
  std::string name;
  std::string description;  // one line
  std::vector<ParamSpec> params;
  std::function<LibraryKernel(const Params&)> build;
  // Runs on several chips at once (remote copies): not a single-device custom
  // call, so the reference evaluator does not offer it.
  bool spmd = false;
};

// Every registered kernel, in registration order.
const std::vector<KernelEntry>& registeredKernels();
// Throws RegistryError listing the registered names.
const KernelEntry& findKernel(const std::string& name);
// Checks the names in `values` against the entry's parameters (an unknown one is
// an error listing them), fills in defaults, and builds the kernel. Errors in
// values are RegistryError; errors the DSL finds (block shapes, ...) dsl::Error.
// `target`: the chip it is built for (see Params::target).
LibraryKernel buildKernel(const std::string& name,
                          const std::map<std::string, std::string>& values = {},
                          const codegen::TargetInfo* target = nullptr);

// The comparison behind `tpu-kernel --check`.
struct ErrorReport {
  double maxAbs = 0, maxRel = 0;
  size_t worstOutput = 0;
  int64_t worstIndex = -1;  // flat index of the largest relative error (-1: no elements)
  bool pass = true;
};
ErrorReport compareWithReference(const std::vector<std::vector<double>>& got,
                                 const std::vector<std::vector<double>>& want, Tolerance tol);

// "name: description" plus one line per parameter, for --list and error messages.
std::string describeKernel(const KernelEntry& entry);

}  // namespace tpusim::kernels::lib
