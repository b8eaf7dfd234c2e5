#include "kernels/dsl/HostArrayIo.h"

#include <fmt/format.h>

namespace tpusim::kernels::dsl {

namespace {
npy::DType npyType(llo::DType d) {
  switch (d) {
    case llo::DType::Bf16:
      return npy::DType::U16;
    case llo::DType::S32:
      return npy::DType::S32;
    case llo::DType::S8:
      return npy::DType::S8;
    default:
      return npy::DType::F32;
  }
}
}  // namespace

npy::Array toNpy(const HostArray& h) {
  npy::DType t = npyType(h.dtype);
  npy::Array a = npy::makeArray(t, h.shape);
  size_t e = npy::dtypeSize(t);
  for (size_t i = 0; i < h.words.size(); ++i)
    for (size_t b = 0; b < e; ++b) a.data[i * e + b] = uint8_t(h.words[i] >> (8 * b));
  return a;
}

HostArray fromNpy(const npy::Array& a, llo::DType dtype, const std::string& name) {
  if (a.dtype != npyType(dtype))
    throw npy::NpyError(fmt::format("{}: expected {} data, the file holds {}", name,
                                    npy::dtypeName(npyType(dtype)), npy::dtypeName(a.dtype)));
  HostArray h;
  h.shape = a.shape;
  h.dtype = dtype;
  size_t e = npy::dtypeSize(a.dtype);
  h.words.assign(size_t(a.numElements()), 0);
  for (size_t i = 0; i < h.words.size(); ++i)
    for (size_t b = 0; b < e; ++b) h.words[i] |= uint32_t(a.data[i * e + b]) << (8 * b);
  return h;
}

HostArray randomArray(const std::vector<int64_t>& shape, llo::DType dtype, std::mt19937_64& rng) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (dtype == llo::DType::S8 || dtype == llo::DType::S32) {
    std::uniform_int_distribution<int32_t> d(-128, 127);
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (auto& x : v) x = d(rng);
    return HostArray::fromInts(shape, dtype, v);
  }
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return HostArray::fromFloats(shape, dtype, v);
}

double valueAt(const HostArray& a, int64_t i) {
  return (a.dtype == llo::DType::S32 || a.dtype == llo::DType::S8) ? double(a.intAt(i))
                                                                   : double(a.floatAt(i));
}

}  // namespace tpusim::kernels::dsl
