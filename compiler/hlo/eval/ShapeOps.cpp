#include "compiler/hlo/eval/ShapeOps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "compiler/hlo/eval/Convert.h"

namespace tpusim::hlo::eval {
namespace {

template <typename T>
void innerCopy(uint8_t* dst, int64_t ds, const uint8_t* src, int64_t ss, int64_t n) {
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  if (ds == 1 && ss == 1) {
    std::memcpy(d, s, static_cast<size_t>(n) * sizeof(T));
    return;
  }
  for (int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
}

std::vector<int64_t> physicalStrides(const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& minorToMajor) {
  std::vector<int64_t> s(dims.size(), 0);
  int64_t acc = 1;
  for (int64_t d : minorToMajor) {
    s[static_cast<size_t>(d)] = acc;
    acc *= dims[static_cast<size_t>(d)];
  }
  return s;
}

}  // namespace

void affineCopy(const std::vector<int64_t>& space, uint8_t* dst, int64_t dstOff,
                const std::vector<int64_t>& dstStrides, const uint8_t* src, int64_t srcOff,
                const std::vector<int64_t>& srcStrides, size_t es) {
  for (int64_t d : space)
    if (d == 0) return;
  size_t rank = space.size();
  int64_t inner = rank ? space[rank - 1] : 1;
  int64_t ids = rank ? dstStrides[rank - 1] : 0, iss = rank ? srcStrides[rank - 1] : 0;
  std::vector<int64_t> idx(rank, 0);
  int64_t dOff = dstOff, sOff = srcOff;
  while (true) {
    uint8_t* d = dst + dOff * static_cast<int64_t>(es);
    const uint8_t* s = src + sOff * static_cast<int64_t>(es);
    switch (es) {
      case 1:
        innerCopy<uint8_t>(d, ids, s, iss, inner);
        break;
      case 2:
        innerCopy<uint16_t>(d, ids, s, iss, inner);
        break;
      case 4:
        innerCopy<uint32_t>(d, ids, s, iss, inner);
        break;
      default:
        innerCopy<uint64_t>(d, ids, s, iss, inner);
        break;
    }
    // Advance the outer dims (all but the last) like an odometer.
    size_t k = rank > 0 ? rank - 1 : 0;
    while (k > 0) {
      --k;
      ++idx[k];
      dOff += dstStrides[k];
      sOff += srcStrides[k];
      if (idx[k] < space[k]) break;
      dOff -= dstStrides[k] * space[k];
      sOff -= srcStrides[k] * space[k];
      idx[k] = 0;
      if (k == 0) return;
    }
    if (rank <= 1) return;
  }
}

Literal broadcastLit(const Literal& in, const std::vector<int64_t>& outDims,
                     const std::vector<int64_t>& dims) {
  Literal out = Literal::array(in.type(), outDims);
  std::vector<int64_t> inStrides = stridesOf(in.dims()), src(outDims.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) src[static_cast<size_t>(dims[i])] = inStrides[i];
  affineCopy(outDims, out.raw(), 0, stridesOf(outDims), in.raw(), 0, src, elemSize(in.type()));
  return out;
}

Literal transposeLit(const Literal& in, const std::vector<int64_t>& perm) {
  std::vector<int64_t> outDims(perm.size()), src(perm.size());
  std::vector<int64_t> inStrides = stridesOf(in.dims());
  for (size_t i = 0; i < perm.size(); ++i) {
    outDims[i] = in.dims()[static_cast<size_t>(perm[i])];
    src[i] = inStrides[static_cast<size_t>(perm[i])];
  }
  Literal out = Literal::array(in.type(), outDims);
  affineCopy(outDims, out.raw(), 0, stridesOf(outDims), in.raw(), 0, src, elemSize(in.type()));
  return out;
}

Literal reshapeLit(const Literal& in, const std::vector<int64_t>& dims) {
  Literal out = Literal::array(in.type(), dims);
  if (out.numElements() != in.numElements())
    throw EvalError(fmt::format("reshape of {} to [{}] changes the element count", in.shapeString(),
                                fmt::join(dims, ",")));
  if (in.byteSize()) std::memcpy(out.raw(), in.raw(), in.byteSize());
  return out;
}

Literal bitcastLit(const Literal& in, const std::vector<int64_t>& fromMinorToMajor,
                   const std::vector<int64_t>& toDims, const std::vector<int64_t>& toMinorToMajor) {
  Literal out = Literal::array(in.type(), toDims);
  if (out.numElements() != in.numElements())
    throw EvalError(fmt::format("bitcast of {} to [{}] changes the element count", in.shapeString(),
                                fmt::join(toDims, ",")));
  size_t es = elemSize(in.type());
  // Logical -> physical buffer of the operand, then the physical buffer read
  // back through the result's layout.
  std::vector<uint8_t> phys(in.byteSize());
  affineCopy(in.dims(), phys.data(), 0, physicalStrides(in.dims(), fromMinorToMajor), in.raw(), 0,
             stridesOf(in.dims()), es);
  affineCopy(toDims, out.raw(), 0, stridesOf(toDims), phys.data(), 0,
             physicalStrides(toDims, toMinorToMajor), es);
  return out;
}

Literal sliceLit(const Literal& in, const std::vector<int64_t>& starts,
                 const std::vector<int64_t>& limits, const std::vector<int64_t>& strides) {
  size_t rank = starts.size();
  std::vector<int64_t> outDims(rank), src(rank), inStrides = stridesOf(in.dims());
  int64_t off = 0;
  for (size_t i = 0; i < rank; ++i) {
    int64_t st = std::max<int64_t>(strides[i], 1);
    outDims[i] = std::max<int64_t>(0, (limits[i] - starts[i] + st - 1) / st);
    src[i] = inStrides[i] * st;
    off += starts[i] * inStrides[i];
  }
  Literal out = Literal::array(in.type(), outDims);
  affineCopy(outDims, out.raw(), 0, stridesOf(outDims), in.raw(), off, src, elemSize(in.type()));
  return out;
}

void clampStarts(std::vector<int64_t>& starts, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& sizes) {
  for (size_t i = 0; i < starts.size(); ++i)
    starts[i] = std::clamp<int64_t>(starts[i], 0, std::max<int64_t>(0, dims[i] - sizes[i]));
}

Literal dynamicSliceLit(const Literal& in, std::vector<int64_t> starts,
                        const std::vector<int64_t>& sizes) {
  clampStarts(starts, in.dims(), sizes);
  std::vector<int64_t> limits(starts.size()), ones(starts.size(), 1);
  for (size_t i = 0; i < starts.size(); ++i) limits[i] = starts[i] + sizes[i];
  return sliceLit(in, starts, limits, ones);
}

Literal dynamicUpdateSliceLit(const Literal& base, const Literal& update,
                              std::vector<int64_t> starts) {
  clampStarts(starts, base.dims(), update.dims());
  Literal out = base;
  std::vector<int64_t> outStrides = stridesOf(base.dims());
  int64_t off = 0;
  for (size_t i = 0; i < starts.size(); ++i) off += starts[i] * outStrides[i];
  affineCopy(update.dims(), out.raw(), off, outStrides, update.raw(), 0, stridesOf(update.dims()),
             elemSize(base.type()));
  return out;
}

Literal concatenateLit(const std::vector<const Literal*>& ins, int64_t dim) {
  std::vector<int64_t> outDims = ins.at(0)->dims();
  auto d = static_cast<size_t>(dim);
  outDims[d] = 0;
  for (const Literal* l : ins) outDims[d] += l->dims()[d];
  Literal out = Literal::array(ins[0]->type(), outDims);
  std::vector<int64_t> outStrides = stridesOf(outDims);
  int64_t at = 0;
  for (const Literal* l : ins) {
    affineCopy(l->dims(), out.raw(), at * outStrides[d], outStrides, l->raw(), 0,
               stridesOf(l->dims()), elemSize(out.type()));
    at += l->dims()[d];
  }
  return out;
}

Literal padLit(const Literal& in, const Literal& padValue, const std::vector<int64_t>& lows,
               const std::vector<int64_t>& highs, const std::vector<int64_t>& interiors) {
  size_t rank = in.dims().size();
  std::vector<int64_t> outDims(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t n = in.dims()[i];
    outDims[i] =
        std::max<int64_t>(0, lows[i] + highs[i] + n + std::max<int64_t>(0, n - 1) * interiors[i]);
  }
  Literal out = Literal::array(in.type(), outDims);
  size_t es = elemSize(in.type());
  for (int64_t i = 0; i < out.numElements(); ++i)
    std::memcpy(out.raw() + i * static_cast<int64_t>(es), padValue.raw(), es);
  // For each dim, the operand indices that land inside the output.
  std::vector<int64_t> space(rank), dstStrides(rank), srcStrides = stridesOf(in.dims());
  std::vector<int64_t> outStrides = stridesOf(outDims);
  int64_t dstOff = 0, srcOff = 0;
  for (size_t i = 0; i < rank; ++i) {
    int64_t step = interiors[i] + 1;
    int64_t first = 0;
    while (first < in.dims()[i] && lows[i] + first * step < 0) ++first;
    int64_t last = in.dims()[i] - 1;
    while (last >= first && lows[i] + last * step >= outDims[i]) --last;
    space[i] = std::max<int64_t>(0, last - first + 1);
    dstStrides[i] = outStrides[i] * step;
    dstOff += (lows[i] + first * step) * outStrides[i];
    srcOff += first * srcStrides[i];
  }
  affineCopy(space, out.raw(), dstOff, dstStrides, in.raw(), srcOff, srcStrides, es);
  return out;
}

Literal reverseLit(const Literal& in, const std::vector<int64_t>& dims) {
  std::vector<int64_t> src = stridesOf(in.dims());
  int64_t off = 0;
  for (int64_t d : dims) {
    auto k = static_cast<size_t>(d);
    off += (in.dims()[k] - 1) * src[k];
    src[k] = -src[k];
  }
  Literal out = Literal::array(in.type(), in.dims());
  affineCopy(in.dims(), out.raw(), 0, stridesOf(in.dims()), in.raw(), off, src,
             elemSize(in.type()));
  return out;
}

Literal iotaLit(ElemType type, const std::vector<int64_t>& dims, int64_t iotaDim) {
  Literal idx = Literal::array(ElemType::S64, dims);
  std::vector<int64_t> strides = stridesOf(dims);
  auto d = static_cast<size_t>(iotaDim);
  for (int64_t i = 0, n = idx.numElements(); i < n; ++i)
    idx.data<int64_t>()[i] = (i / strides[d]) % dims[d];
  return convertLiteral(idx, type);
}

}  // namespace tpusim::hlo::eval
