// Builds an HloModule the way JAX lowers a jitted function and prints it with
// `.compiler_ir('hlo').as_hlo_text()`: one id counter for the whole module
// (`dot.57`, `Arg_3.4`, `region_0.12`, `main.301`), default layouts on every
// array, a fresh `region_N` computation per reduce, an
// entry_computation_layout header, and metadata on every traced operation:
//   metadata={op_name="jit(fn)/jit(main)/<scope>/<primitive>[params]"
//             source_file="..." source_line=N}
// where the primitive is the jax.lax one the operation comes from and the line
// is the generator's own source line that emitted it (__builtin_LINE()).
// Constants carry no metadata, as in JAX dumps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"

namespace tpusim::traces {

using hlo::HloInstruction;
using hlo::PrimitiveType;
using hlo::Shape;

class JaxHloBuilder {
 public:
  // `fnName` is the jitted Python function's name: the module is "jit_<fnName>".
  JaxHloBuilder(std::string fnName, std::string sourceFile);
  ~JaxHloBuilder();

  // A jax.named_scope: operations built while it lives get "<name>/" in their op_name.
  class Scope {
   public:
    Scope(JaxHloBuilder& b, const std::string& name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    JaxHloBuilder& b_;
    size_t saved_;
  };

  // An entry parameter, numbered in call order; `argName` (e.g. "params['wq']")
  // becomes its metadata op_name, as JAX records argument names; a non-empty
  // `sharding` (e.g. "{devices=[1,2]<=[2]}") its sharding= attribute, as an
  // SPMD-partitioned dump has it.
  HloInstruction* parameter(PrimitiveType t, std::vector<int64_t> dims, const std::string& argName,
                            const std::string& sharding = "");
  HloInstruction* constant(PrimitiveType t, double value);
  // A scalar constant broadcast to `dims` (JAX's implicit broadcast of a Python scalar).
  HloInstruction* splat(PrimitiveType t, double value, const std::vector<int64_t>& dims,
                        int line = __builtin_LINE());

  HloInstruction* iota(PrimitiveType t, std::vector<int64_t> dims, int64_t dimension,
                       int line = __builtin_LINE());
  HloInstruction* broadcast(HloInstruction* x, std::vector<int64_t> dims,
                            std::vector<int64_t> mapping, int line = __builtin_LINE());
  // No instruction when `x` already has type `t` (JAX drops no-op converts too).
  HloInstruction* convert(HloInstruction* x, PrimitiveType t, int line = __builtin_LINE());
  HloInstruction* reshape(HloInstruction* x, std::vector<int64_t> dims,
                          int line = __builtin_LINE());
  HloInstruction* transpose(HloInstruction* x, std::vector<int64_t> perm,
                            int line = __builtin_LINE());
  // x[..., start:limit] along `dim`, other dims whole.
  HloInstruction* sliceDim(HloInstruction* x, int64_t dim, int64_t start, int64_t limit,
                           int line = __builtin_LINE());
  HloInstruction* concatenate(std::vector<HloInstruction*> xs, int64_t dim,
                              int line = __builtin_LINE());

  // Element-wise: add, subtract, multiply, divide, maximum (operands of one shape).
  HloInstruction* binary(hlo::HloOpcode op, HloInstruction* a, HloInstruction* b,
                         int line = __builtin_LINE());
  // Also power (JAX's pow of two arrays of one type).
  // exponential, rsqrt, logistic, cosine, sine, negate, log, sqrt.
  HloInstruction* unary(hlo::HloOpcode op, HloInstruction* x, int line = __builtin_LINE());
  HloInstruction* compare(HloInstruction* a, HloInstruction* b, hlo::ComparisonDirection dir,
                          int line = __builtin_LINE());
  HloInstruction* select(HloInstruction* pred, HloInstruction* onTrue, HloInstruction* onFalse,
                         int line = __builtin_LINE());

  // dot_general with explicit dimension numbers and result element type
  // (JAX's preferred_element_type).
  HloInstruction* dot(HloInstruction* lhs, HloInstruction* rhs, hlo::DotDimensionNumbers dnums,
                      PrimitiveType resultType, int line = __builtin_LINE());

  enum class Reducer { Sum, Max };
  // reduce_sum / reduce_max over `dims`, with init 0 / -inf, in the operand's type.
  HloInstruction* reduce(HloInstruction* x, std::vector<int64_t> dims, Reducer kind,
                         int line = __builtin_LINE());
  // psum over every one of `devices` partitions (jax.lax.psum under
  // shard_map): all-reduce, replica_groups=[1,N]<=[N], a channel, global ids;
  // the module gets num_partitions=N.
  // `axis` names the mesh axis in the op_name metadata ("tp", "dp").
  HloInstruction* psum(HloInstruction* x, int64_t devices, const std::string& axis = "tp",
                       int line = __builtin_LINE());
  // The module runs on `devices` partitions (num_partitions) even without a
  // collective (data-parallel inference).
  void setPartitions(int64_t devices) { partitions_ = std::max(partitions_, devices); }

  // operand[indices] along dimension 0 (jnp.take with clipping): `indices`
  // ends in an index vector of size 1; the result is indices.dims[:-1] + row.
  HloInstruction* takeRows(HloInstruction* table, HloInstruction* indices,
                           int line = __builtin_LINE());
  // Appends `count` zeros along `dim` (what autodiff of a leading slice emits).
  HloInstruction* padHigh(HloInstruction* x, int64_t dim, int64_t count,
                          int line = __builtin_LINE());
  // A zero table of `tableDims` with each update row added at its index
  // (autodiff of takeRows: scatter with an add region; repeated indices sum).
  HloInstruction* scatterAddRows(const std::vector<int64_t>& tableDims, HloInstruction* indices,
                                 HloInstruction* updates, int line = __builtin_LINE());
  HloInstruction* dynamicUpdateSlice(HloInstruction* x, HloInstruction* update,
                                     std::vector<HloInstruction*> starts,
                                     int line = __builtin_LINE());

  // Finishes the module with `outputs` as the entry's result (a tuple when
  // there are several) and `aliases` as input_output_alias pairs
  // (output index, parameter number): the donated buffers of jax.jit.
  std::unique_ptr<hlo::HloModule> finish(std::vector<HloInstruction*> outputs,
                                         std::vector<std::pair<int64_t, int64_t>> aliases = {});

 private:
  HloInstruction* add(std::unique_ptr<HloInstruction> inst, const std::string& primitive, int line);
  std::string nextName(const std::string& base);
  hlo::HloComputation* makeRegion(PrimitiveType t, Reducer kind, const hlo::OpMetadata& md);
  hlo::OpMetadata metadata(const std::string& primitive, int line) const;

  std::string fnName_, sourceFile_;
  int64_t nextId_ = 1;
  int64_t channels_ = 0, partitions_ = 1;
  int64_t regions_ = 0;
  std::vector<std::string> scopes_;
  std::unique_ptr<hlo::HloModule> module_;
  std::unique_ptr<hlo::HloComputation> entry_;
  std::vector<HloInstruction*> params_;
};

// Python spellings JAX uses in op_name parameters: "float32", "(2, 0, 1)", "(3,)".
std::string pythonDtype(PrimitiveType t);
std::string pythonTuple(const std::vector<int64_t>& v);

}  // namespace tpusim::traces
