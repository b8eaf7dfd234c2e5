// The DSL's f16 <-> f32 converts (VPU sequences: the machine has no f16
// convert) agree bit for bit with tpusim::f16BitsToF32 / f32ToF16Bits, the
// conversions of the reference evaluator and the host I/O: every f16 value,
// every tie between neighbours, and random f32 bit patterns.
#include <catch2/catch.hpp>

#include <random>

#include "isa/support/Numerics.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/PallasCall.h"

using namespace tpusim;
using namespace tpusim::kernels::dsl;

namespace {

// x (dtype `from`, shape [rows, 256]) converted to `to` by one kernel.
std::vector<uint32_t> convertAll(const std::vector<uint32_t>& words, DType from, DType to) {
  const int64_t cols = 256, rows = int64_t(words.size()) / cols;
  auto call =
      pallas_call([to](Ref x, Ref o) { o.store(x.load().astype(to)); }, {{{rows, cols}, to}}, {1},
                  {BlockSpec({rows, cols}, nullptr)}, {BlockSpec({rows, cols}, nullptr)});
  auto k = call.trace({{{rows, cols}, from}});
  InterpretResult r = interpret(*k, {HostArray{{rows, cols}, from, words}});
  return r.outputs.at(0).words;
}

}  // namespace

TEST_CASE("f16 -> f32 is exact for every f16 bit pattern") {
  std::vector<uint32_t> in(65536);
  for (uint32_t h = 0; h < 65536; ++h) in[h] = h;
  std::vector<uint32_t> out = convertAll(in, F16, F32);
  for (uint32_t h = 0; h < 65536; ++h) {
    float want = f16BitsToF32(uint16_t(h));
    INFO("f16 bits " << h);
    REQUIRE(out[h] == bitsOf(want));  // NaN payloads included
  }
}

TEST_CASE("f32 -> f16 rounds to nearest even like the evaluator") {
  std::vector<uint32_t> in;
  // Every f16 value, the midpoint to its neighbour (a tie), and one f32 ulp
  // either side of that midpoint.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    float a = f16BitsToF32(uint16_t(h)), b = f16BitsToF32(uint16_t(h + 1));
    float mid = float((double(a) + double(b)) / 2);
    for (float v : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      in.push_back(bitsOf(v));
      in.push_back(bitsOf(-v));
    }
  }
  std::mt19937 rng(20);
  while (in.size() % 256 != 0 || in.size() < 600000) in.push_back(uint32_t(rng()));
  for (uint32_t special : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x477ff000u,
                           0x477fefffu, 0x33000000u, 0x33000001u, 0x00000001u}) {
    in.pop_back();
    in.insert(in.begin(), special);
  }
  std::vector<uint32_t> out = convertAll(in, F32, F16);
  for (size_t i = 0; i < in.size(); ++i) {
    INFO("f32 bits " << in[i]);
    REQUIRE((out[i] & 0xffffu) == f32ToF16Bits(floatOf(in[i])));
  }
}
