#include "sim/chip/BufferIo.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "isa/support/Numerics.h"
#include "sim/chip/Mt64Blocks.h"
#include "sim/chip/UniformWords.h"

namespace tpusim::sim {
namespace {

using isa::DType;

int64_t elementsOf(const isa::BufferDesc& b) {
  int64_t n = 1;
  for (int64_t d : b.shape) n *= d;
  return n;
}

npy::DType npyTypeOf(DType t) {
  switch (t) {
    case DType::F32:
      return npy::DType::F32;
    case DType::Bf16:
      return npy::DType::U16;
    case DType::S32:
      return npy::DType::S32;
    case DType::S8:
      return npy::DType::S8;
    case DType::U8:
      return npy::DType::U8;
    case DType::S16:
      return npy::DType::S16;
    case DType::U16:
      return npy::DType::U16;
    case DType::Pred:
      return npy::DType::U8;
    case DType::F16:
      return npy::DType::F16;
    case DType::U32:
      return npy::DType::U32;
    case DType::S64:
      return npy::DType::S64;
    case DType::U64:
      return npy::DType::U64;
  }
  return npy::DType::U8;
}

uint64_t nameHash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

mem::SparseMemory& spaceOf(mem::ChipMemory& memory, const isa::BufferDesc& b) {
  return memory.space(b.space, 0);
}

}  // namespace

std::vector<uint8_t> inputBytes(const isa::BufferDesc& buffer, const npy::Array& array,
                                const std::string& source) {
  if (array.shape != buffer.shape)
    throw std::runtime_error(
        fmt::format("{}: input '{}' has shape {} but the program's buffer is {}", source,
                    buffer.name, npy::shapeString(array.shape), npy::shapeString(buffer.shape)));
  size_t n = size_t(elementsOf(buffer));
  std::vector<uint8_t> out;
  if (buffer.dtype == DType::Bf16) {
    std::vector<uint16_t> bits = npy::toBf16Bits(array, source);
    out.resize(n * 2);
    std::memcpy(out.data(), bits.data(), out.size());
    return out;
  }
  bool ok = array.dtype == npyTypeOf(buffer.dtype) ||
            (buffer.dtype == DType::Pred && array.dtype == npy::DType::Bool);
  if (!ok)
    throw std::runtime_error(
        fmt::format("{}: input '{}' has dtype {} but the program's buffer is {} (expected {})",
                    source, buffer.name, npy::dtypeName(array.dtype), isa::dtypeName(buffer.dtype),
                    npy::dtypeName(npyTypeOf(buffer.dtype))));
  out = array.data;
  return out;
}

bool parseRandomInputs(const std::string& name, RandomInputs* out) {
  if (name == "uniform")
    *out = RandomInputs::Uniform;
  else if (name == "fan-in")
    *out = RandomInputs::FanIn;
  else
    return false;
  return true;
}

namespace {

// Draws one value per element in index order and stores its low sizeof(Bits)
// bytes: a fixed-width store per element instead of a width switch and a
// memcpy call (input generation was a fifth of a functional run's CPU time).
template <typename Bits, typename Draw>
void fillElements(std::vector<uint8_t>& out, size_t n, Draw draw) {
  uint8_t* p = out.data();
  for (size_t i = 0; i < n; ++i) {
    const Bits v = Bits(draw());
    std::memcpy(p + i * sizeof(Bits), &v, sizeof(Bits));  // little-endian host
  }
}

// Float elements take exactly one 64-bit word each (what
// std::uniform_real_distribution<float> draws from a 64-bit engine), so whole
// blocks of words convert at once (UniformWords.h).
template <typename Bits, typename Convert>
void fillFloats(std::vector<uint8_t>& out, size_t n, Mt64Blocks& rng, Convert convert) {
  Bits block[Mt64Blocks::kBlockWords];  // typed scratch: out holds bytes, not Bits objects
  for (size_t i = 0; i < n;) {
    size_t count = 0;
    const uint64_t* words = rng.take(n - i, &count);
    convert(words, block, count);
    std::memcpy(out.data() + i * sizeof(Bits), block, count * sizeof(Bits));
    i += count;
  }
}

}  // namespace

std::vector<uint8_t> randomBytes(const isa::BufferDesc& buffer, uint64_t seed, RandomInputs kind) {
  Mt64Blocks rng(seed ^ nameHash(buffer.name));  // the std::mt19937_64 sequence
  size_t n = size_t(elementsOf(buffer));
  std::vector<uint8_t> out(n * size_t(isa::dtypeBytes(buffer.dtype)));
  float bound = 1.0f;
  if (kind == RandomInputs::FanIn && buffer.shape.size() >= 2) {
    double fanIn = 1;
    for (size_t d = 0; d + 1 < buffer.shape.size(); ++d) fanIn *= double(buffer.shape[d]);
    bound = float(std::sqrt(3.0 / std::max(fanIn, 1.0)));
  }
  std::uniform_int_distribution<int> small(-8, 8), unsignedSmall(0, 15), bit(0, 1);
  switch (buffer.dtype) {
    case DType::F32:
      fillFloats<uint32_t>(out, n, rng, [&](const uint64_t* w, uint32_t* o, size_t count) {
        uniformF32Bits(w, o, count, -bound, bound);
      });
      break;
    case DType::Bf16:
      fillFloats<uint16_t>(out, n, rng, [&](const uint64_t* w, uint16_t* o, size_t count) {
        uniformBf16Bits(w, o, count, -bound, bound);
      });
      break;
    case DType::F16:
      fillFloats<uint16_t>(out, n, rng, [&](const uint64_t* w, uint16_t* o, size_t count) {
        std::vector<uint32_t> f32(count);
        uniformF32Bits(w, f32.data(), count, -bound, bound);
        for (size_t j = 0; j < count; ++j) o[j] = f32ToF16Bits(floatOf(f32[j]));
      });
      break;
    case DType::S64:  // sign-extended into both words
      fillElements<uint64_t>(out, n, [&] { return uint64_t(int64_t(small(rng))); });
      break;
    case DType::S32:
      fillElements<uint32_t>(out, n, [&] { return uint32_t(small(rng)); });
      break;
    case DType::S16:
      fillElements<uint16_t>(out, n, [&] { return uint32_t(small(rng)); });
      break;
    case DType::S8:
      fillElements<uint8_t>(out, n, [&] { return uint32_t(small(rng)); });
      break;
    case DType::U8:
      fillElements<uint8_t>(out, n, [&] { return uint32_t(unsignedSmall(rng)); });
      break;
    case DType::U16:
      fillElements<uint16_t>(out, n, [&] { return uint32_t(unsignedSmall(rng)); });
      break;
    case DType::U32:
      fillElements<uint32_t>(out, n, [&] { return uint32_t(unsignedSmall(rng)); });
      break;
    case DType::U64:
      fillElements<uint64_t>(out, n, [&] { return uint64_t(uint32_t(unsignedSmall(rng))); });
      break;
    case DType::Pred:
      fillElements<uint8_t>(out, n, [&] { return uint32_t(bit(rng)); });
      break;
  }
  return out;
}

void storeBuffer(mem::ChipMemory& memory, const isa::BufferDesc& buffer,
                 const std::vector<uint8_t>& dense) {
  // A buffer in the packed int8 weight layout holds the dense bytes reordered.
  const std::vector<uint8_t> bytes = isa::packBuffer(buffer, dense);
  if (auto f = spaceOf(memory, buffer).write(buffer.address, bytes.data(), bytes.size()))
    throw std::runtime_error(
        fmt::format("buffer '{}' does not fit in memory: {}", buffer.name, f->describe()));
}

npy::Array loadBuffer(mem::ChipMemory& memory, const isa::BufferDesc& buffer) {
  npy::Array a = npy::makeArray(npyTypeOf(buffer.dtype), buffer.shape);
  if (auto f = spaceOf(memory, buffer).read(buffer.address, a.data.data(), a.data.size()))
    throw std::runtime_error(
        fmt::format("buffer '{}' cannot be read back: {}", buffer.name, f->describe()));
  if (buffer.pairRows) a.data = isa::unpackBuffer(buffer, a.data);
  return a;
}

}  // namespace tpusim::sim
