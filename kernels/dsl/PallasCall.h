// pallas_call: a kernel body over a grid, with block specs that say which
// block of each array the body sees at each grid point (Pallas semantics, see
// ../shared/reference/tpu-facts.md). Tracing the body builds the kernel IR
// (llo::Kernel) that interpret mode runs and the code generator compiles.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/dsl/Ref.h"

namespace tpusim::kernels::dsl {

using llo::DimSemantics;
constexpr DimSemantics PARALLEL = DimSemantics::Parallel;
constexpr DimSemantics ARBITRARY = DimSemantics::Arbitrary;

// Shape and dtype of an array operand (jax.ShapeDtypeStruct).
struct ShapeDtype {
  std::vector<int64_t> shape;
  DType dtype = F32;
  std::string name;  // optional, for messages and buffer names
  // Inputs only, optional: element strides per dim when the array is read in
  // place from a buffer laid out in another dim order (the operand of a
  // transpose that only moves major dims); a permutation of the dense
  // row-major strides with the last dim's stride 1. Empty: dense.
  std::vector<int64_t> strides;

  ShapeDtype() = default;
  ShapeDtype(std::vector<int64_t> s, DType d, std::string n = "")
      : shape(std::move(s)), dtype(d), name(std::move(n)) {}
};

// What an index map sees: the grid indices and the scalar-prefetch refs (SMEM).
struct GridIndex {
  std::vector<Scalar> ids;
  std::vector<Ref> prefetch;
  Scalar operator[](size_t axis) const { return ids.at(axis); }
};
using IndexMap = std::function<std::vector<Scalar>(const GridIndex&)>;

enum class Space { VMEM, SMEM, ANY };

struct BlockSpec {
  std::vector<int64_t> block_shape;
  IndexMap index_map;
  Space memory_space = Space::VMEM;
  int buffers = 2;  // pipeline depth (Pallas pipeline_mode=pl.Buffered(n))
  Loc loc;

  BlockSpec() = default;
  BlockSpec(std::vector<int64_t> shape, IndexMap map, Loc l = Loc::here())
      : block_shape(std::move(shape)), index_map(std::move(map)), loc(l) {}
  // A whole array in SMEM, or left in HBM for the body to copy (Space::ANY).
  static BlockSpec in(Space space, Loc l = Loc::here());
  BlockSpec& buffered(int n) {
    buffers = n;
    return *this;
  }
};

// Scratch buffers (Pallas scratch_shapes).
struct ScratchSpec {
  std::vector<int64_t> shape;
  DType dtype = F32;
  MemSpace space = MemSpace::Vmem;
};
inline ScratchSpec VMEM(std::vector<int64_t> shape, DType dtype) {
  return {std::move(shape), dtype, MemSpace::Vmem};
}
inline ScratchSpec SMEM(std::vector<int64_t> shape, DType dtype = S32) {
  return {std::move(shape), dtype, MemSpace::Smem};
}
inline ScratchSpec Semaphores(int64_t n) { return {{n}, S32, MemSpace::Semaphore}; }
// Pallas pltpu.SemaphoreType: DMA semaphores count copies (send / receive of
// remote copies, async copies), REGULAR ones semaphore_signal / _wait, BARRIER
// one semaphore for a barrier between devices. All are sync flags on the
// machine, zero when the kernel starts; the kinds say what a kernel means.
struct SemaphoreType {
  static ScratchSpec DMA(std::vector<int64_t> shape = {1}) {
    return {std::move(shape), S32, MemSpace::Semaphore};
  }
  static ScratchSpec REGULAR(std::vector<int64_t> shape = {1}) { return DMA(std::move(shape)); }
  static ScratchSpec BARRIER() { return DMA({1}); }
};

struct CompilerParams {
  std::vector<DimSemantics> dimension_semantics;  // empty: all arbitrary
  // VMEM the kernel may use (blocks x buffers + scratch + temporaries); 0 = 16 MiB,
  // the smallest VMEM of the presets. The code generator checks the target's VMEM too.
  int64_t vmem_limit_bytes = 0;
  // The last grid steps that start no input block (a pipelined epilogue's
  // extra step, whose operand blocks stay): the next kernel's first blocks
  // (cross-kernel prefetch) start this many steps before the last step.
  int64_t tail_steps_without_inputs = 0;
  // How far (instructions) the list scheduler looks past the oldest
  // unscheduled one; 0: its default, 1024. More lets the next independent dot
  // on an MXU start while the one before it drains, in a block of many whole
  // dots (the attention kernels), at the cost of longer register lifetimes.
  int64_t schedule_lookahead = 0;
};

using KernelBody = std::function<void(const std::vector<Ref>&)>;

struct CallConfig {
  std::string name = "kernel";
  std::vector<ShapeDtype> out_shapes;
  std::vector<int64_t> grid;
  std::vector<BlockSpec> in_specs, out_specs;  // in_specs excludes scalar-prefetch inputs
  std::vector<ScratchSpec> scratch;
  CompilerParams compiler_params;
  int num_scalar_prefetch = 0;
  std::vector<std::pair<int, int>> input_output_aliases;  // (input index, output index)
};

class PallasCall {
 public:
  PallasCall(KernelBody body, CallConfig config, Loc loc)
      : body_(std::move(body)), config_(std::move(config)), loc_(loc) {}
  // Traces the kernel for these input arrays: checks the specs (block-shape
  // rule, VMEM budget) and returns the verified kernel IR. Throws dsl::Error.
  std::unique_ptr<llo::Kernel> trace(const std::vector<ShapeDtype>& inputs) const;
  const CallConfig& config() const { return config_; }

 private:
  KernelBody body_;
  CallConfig config_;
  Loc loc_;
};

namespace detail {
template <size_t>
using RefAt = Ref;
template <typename F, size_t... I>
constexpr bool invocableWith(std::index_sequence<I...>) {
  return std::is_invocable_v<F&, RefAt<I>...>;
}
template <typename F, size_t... I>
void callPositional(F& f, const std::vector<Ref>& refs, std::index_sequence<I...>) {
  f(refs[I]...);
}
[[noreturn]] void arityMismatch(size_t expected, size_t given);
template <typename F, size_t N>
KernelBody adaptArity(F f) {
  static_assert(N <= 16, "a kernel takes const std::vector<Ref>& or up to 16 Ref parameters");
  if constexpr (N > 16) {
    return {};
  } else if constexpr (invocableWith<F>(std::make_index_sequence<N>{})) {
    return [f](const std::vector<Ref>& refs) mutable {
      if (refs.size() != N) arityMismatch(N, refs.size());
      callPositional(f, refs, std::make_index_sequence<N>{});
    };
  } else {
    return adaptArity<F, N + 1>(std::move(f));
  }
}
template <typename F>
KernelBody adapt(F f) {
  if constexpr (std::is_invocable_v<F&, const std::vector<Ref>&>)
    return [f](const std::vector<Ref>& refs) mutable { f(refs); };
  else
    return adaptArity<F, 1>(std::move(f));
}
}  // namespace detail

// The kernel is a callable taking the refs (scalar-prefetch inputs, inputs,
// outputs, scratch), as `const std::vector<Ref>&` or as positional `Ref`s.
template <typename F>
PallasCall pallas_call(F kernel, CallConfig config, Loc loc = Loc::here()) {
  return PallasCall(detail::adapt(std::move(kernel)), std::move(config), loc);
}

// The Pallas argument order.
template <typename F>
PallasCall pallas_call(F kernel, std::vector<ShapeDtype> out_shapes, std::vector<int64_t> grid,
                       std::vector<BlockSpec> in_specs, std::vector<BlockSpec> out_specs,
                       std::vector<ScratchSpec> scratch = {}, CompilerParams params = {},
                       Loc loc = Loc::here()) {
  CallConfig c;
  c.out_shapes = std::move(out_shapes);
  c.grid = std::move(grid);
  c.in_specs = std::move(in_specs);
  c.out_specs = std::move(out_specs);
  c.scratch = std::move(scratch);
  c.compiler_params = std::move(params);
  return pallas_call(std::move(kernel), std::move(c), loc);
}

}  // namespace tpusim::kernels::dsl
