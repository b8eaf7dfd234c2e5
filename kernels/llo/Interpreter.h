// Runs kernel-IR functions functionally, with the machine's exact numerics
// (TileMath.h). Memory is modelled as the machine holds it: VMEM refs in the
// (8,128) tiled layout of 32-bit words (padding included), SMEM one word per
// element, HBM one element per word in its low bits. DMAs complete at once and
// signal their semaphore; a wait with nothing to wait for is an error
// (it would deadlock on the machine).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/llo/Ir.h"
#include "kernels/llo/TileMath.h"

namespace tpusim::kernels::llo {

// Every error of interpret mode (bad index, unaligned tile access, deadlock...).
class InterpretError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Poison for memory nobody wrote: a NaN as f32 (0x7FC07FC0) and as bf16 (0x7FC0).
constexpr uint32_t kPoisonWord = 0x7FC07FC0u;

// The storage of one ref.
struct Buffer {
  std::string name;
  Type type;
  std::vector<uint32_t> words;      // VMEM: tiled rows * 128; others: one per element
  std::vector<int64_t> semaphores;  // Semaphore space only

  static std::unique_ptr<Buffer> make(std::string name, Type type, uint32_t fill = kPoisonWord);
  // Word of element `index` (one index per dimension); VMEM uses the tiled layout.
  uint32_t& at(const std::vector<int64_t>& index);
  bool inBounds(const std::vector<int64_t>& index) const;
};

// What a kernel on one device of a multi-device run sees of the others
// (dsl::interpretDevices implements it). Without one, the kernel runs alone:
// device 0 of 1, remote copies and signals are errors, and a wait its own
// copies cannot satisfy is an error at once.
class DeviceLink {
 public:
  virtual ~DeviceLink() = default;
  virtual int deviceId() const = 0;
  virtual int deviceCount() const = 0;
  // The buffer of device `device` that corresponds to `local` (the same
  // kernel operand or scratch), or null when `local` is none of those.
  virtual Buffer* peer(Buffer* local, int device) = 0;
  // Returns once semaphore element `index` of `sem` holds at least `value`
  // (other devices run meanwhile); the caller then subtracts. Throws
  // InterpretError when no device can ever signal it (a deadlock). `what`
  // names the wait for the report.
  virtual void block(Buffer* sem, int64_t index, int64_t value, const std::string& what) = 0;
};

struct InterpOptions {
  int mxuSize = 128;  // chunk length of the MXU's k-order accumulation
};

// The grid position a body runs at.
struct GridContext {
  std::vector<int64_t> grid;
  std::vector<int64_t> ids;
};

// A function argument: a scalar or a buffer (for ref arguments).
struct Arg {
  int32_t scalar = 0;
  Buffer* buffer = nullptr;
  static Arg ofScalar(int32_t v) { return Arg{v, nullptr}; }
  static Arg ofBuffer(Buffer* b) { return Arg{0, b}; }
};

// The weights mxu_latch left on the MXUs (K chunk c on MXU c), K x N
// row-major. The MXUs keep them from one grid step to the next (a run of the
// body), as the hardware does; a matmul that pushes its own weights replaces
// them.
struct LatchedWeights {
  bool valid = false;
  int64_t K = 0, N = 0;
  std::vector<uint32_t> w;
};

class Interpreter {
 public:
  explicit Interpreter(InterpOptions options = {}) : options_(options) {}
  void setDeviceLink(DeviceLink* link) { link_ = link; }
  // Runs `fn`; returns the scalars of its `return` (index maps), if any.
  std::vector<int32_t> run(const Function& fn, const std::vector<Arg>& args,
                           const GridContext& grid);
  // Counters for tests and reports.
  int64_t opsExecuted() const { return opsExecuted_; }

 private:
  InterpOptions options_;
  DeviceLink* link_ = nullptr;
  int64_t opsExecuted_ = 0;
  LatchedWeights latched_;
};

}  // namespace tpusim::kernels::llo
