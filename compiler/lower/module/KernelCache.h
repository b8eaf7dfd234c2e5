// A cache of compiled kernels for the module compiler: the 32 layers of a
// model lower to the same kernels 32 times, differing only in where they sit
// (first bundle, SMEM words), the HBM addresses of their arrays and the HLO
// instruction's name. The code generator (scheduling, register allocation)
// is the bulk of tpuc's time, so a kernel seen before is derived from earlier
// compilations instead of compiled again.
//
// How a kernel is derived (relocation inference, no knowledge of the code
// generator's internals): the first two kernels with one key are compiled for
// real. Every field of the two results (instruction operands, 32-bit words of
// SMEM data, bundle and address fields, strings) is compared: a field that
// differs must be explained by a parameter that differs (firstBundle,
// smemBase in words or bytes, an array's address): v = p + c, v = (p + c) mod
// 2^32 (a 32-bit immediate) or v = (p >> 32) + c (a high word), or, for
// strings, the instruction name replaced. Anything else (another structure,
// an unexplained difference) makes the key uncacheable: compiled every time.
// A later kernel is the second result with each field recomputed from its
// relations; it is compiled for real instead when the prediction is not
// unique: a parameter that did not change between the two (so any field might
// depend on it) changes now, or two relations of one field disagree.
//
// The key is the kernel IR as printed (without the kernel's name), every
// source location in it, the placement options, and whether each array
// crosses a 4 GiB boundary (the code generator then emits a carry; such
// kernels are never derived). `verify` compiles every derived kernel too and
// throws ModuleLoweringError when the two differ (tpuc --verify-kernel-cache,
// what the tests use).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/codegen/Compile.h"
#include "kernels/llo/Ir.h"

namespace tpusim::lower {

class KernelCache {
 public:
  explicit KernelCache(bool verify = false) : verify_(verify) {}

  // The kernel `kernel` compiled with `options`; `compile` compiles it for
  // real. options.hloInstruction is the name strings are relocated by.
  kernels::codegen::CompiledKernel get(
      const kernels::llo::Kernel& kernel, const kernels::codegen::CompileOptions& options,
      const std::function<kernels::codegen::CompiledKernel()>& compile);

  int64_t compiled() const { return compiled_; }  // by the code generator
  int64_t derived() const { return derived_; }    // from the cache

  struct Params {
    std::vector<int64_t> values;  // firstBundle, smemBase words, smemBase bytes, addresses
    std::string name;
  };
  struct Table;  // relations of one key's fields (KernelCache.cpp)
  struct Entry {
    kernels::codegen::CompiledKernel first, last;  // the pair the table was derived from
    Params firstParams, lastParams;
    bool haveFirst = false, uncacheable = false;
    std::shared_ptr<Table> table;
  };

 private:
  bool verify_;
  std::map<std::string, Entry> entries_;
  int64_t compiled_ = 0, derived_ = 0;
};

}  // namespace tpusim::lower
