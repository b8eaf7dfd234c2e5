// The small kernel the linking tests chain (LinkTest, DrainTest): out =
// 1.5 x + y over f32 [rows, cols] arrays in blocks of `blockRows` rows, and
// the buffer-table entry of one such array.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/Program.h"
#include "kernels/dsl/PallasCall.h"

namespace tpusim::testing {

// `reversed`: the blocks from the last one down.
inline kernels::dsl::PallasCall scaledAddCall(const std::string& name, int64_t rows, int64_t cols,
                                              int64_t blockRows, bool reversed = false) {
  using namespace kernels::dsl;
  const int64_t last = rows / blockRows - 1;
  auto map = [=](const GridIndex& g) {
    return std::vector<Scalar>{reversed ? Scalar(last) - g[0] : g[0], 0};
  };
  CallConfig c;
  c.name = name;
  c.out_shapes = {{{rows, cols}, F32, "out"}};
  c.grid = {rows / blockRows};
  c.in_specs = {BlockSpec({blockRows, cols}, map), BlockSpec({blockRows, cols}, map)};
  c.out_specs = {BlockSpec({blockRows, cols}, map)};
  c.compiler_params.dimension_semantics = {PARALLEL};
  return pallas_call([](Ref x, Ref y, Ref o) { o.store(x.load() * 1.5 + y.load()); }, c);
}

inline isa::BufferDesc f32ArrayBuffer(const std::string& name, int64_t rows, int64_t cols,
                                      uint64_t address, isa::BufferRole role) {
  isa::BufferDesc b;
  b.name = name;
  b.shape = {rows, cols};
  b.dtype = isa::DType::F32;
  b.address = address;
  b.sizeBytes = uint64_t(rows * cols * 4);
  b.role = role;
  return b;
}

}  // namespace tpusim::testing
