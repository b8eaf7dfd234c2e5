#include "compiler/hlo/eval/Dot.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/hlo/eval/Convert.h"
#include "compiler/hlo/eval/ShapeOps.h"
#include "compiler/hlo/eval/TypeDispatch.h"

namespace tpusim::hlo::eval {
namespace {

struct Canon {
  Literal value;  // [B, M, K] for lhs, [B, K, N] for rhs
  std::vector<int64_t> freeDims;
  int64_t batch = 1, free = 1, contract = 1;
};

// Permutes `in` to batch dims, then (free, contracting) or (contracting, free).
Canon canonicalize(const Literal& in, const std::vector<int64_t>& batch,
                   const std::vector<int64_t>& contracting, bool freeFirst) {
  Canon c;
  std::vector<int64_t> perm = batch, freeIdx;
  for (int64_t d = 0; d < in.rank(); ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end())
      freeIdx.push_back(d);
  if (freeFirst) {
    perm.insert(perm.end(), freeIdx.begin(), freeIdx.end());
    perm.insert(perm.end(), contracting.begin(), contracting.end());
  } else {
    perm.insert(perm.end(), contracting.begin(), contracting.end());
    perm.insert(perm.end(), freeIdx.begin(), freeIdx.end());
  }
  for (int64_t d : batch) c.batch *= in.dims()[d];
  for (int64_t d : contracting) c.contract *= in.dims()[d];
  for (int64_t d : freeIdx) {
    c.free *= in.dims()[d];
    c.freeDims.push_back(in.dims()[d]);
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  c.value = identity ? in : transposeLit(in, perm);
  return c;
}

// out[b, m, n] = sum_k a[b, m, k] * r[b, k, n], accumulated in T in k order.
template <typename T>
void matmul(const T* a, const T* r, T* out, int64_t B, int64_t M, int64_t K, int64_t N) {
  constexpr int64_t kRowBlock = 8, kColBlock = 512;
  for (int64_t b = 0; b < B; ++b) {
    const T* ab = a + b * M * K;
    const T* rb = r + b * K * N;
    T* ob = out + b * M * N;
    std::fill(ob, ob + M * N, T(0));
    for (int64_t n0 = 0; n0 < N; n0 += kColBlock) {
      int64_t n1 = std::min(N, n0 + kColBlock);
      for (int64_t m0 = 0; m0 < M; m0 += kRowBlock) {
        int64_t m1 = std::min(M, m0 + kRowBlock);
        for (int64_t k = 0; k < K; ++k) {
          const T* rrow = rb + k * N;
          for (int64_t m = m0; m < m1; ++m) {
            T x = ab[m * K + k];
            T* orow = ob + m * N;
            for (int64_t n = n0; n < n1; ++n) orow[n] += x * rrow[n];
          }
        }
      }
    }
  }
}

// f32 `x` split into bf16 parts (each held as f32): parts[0] = bf16(x),
// parts[i] = bf16(x - parts[0] - ... - parts[i-1]), as the multi-pass MXU
// algorithms split an operand.
std::vector<Literal> bf16Parts(const Literal& x, int count) {
  std::vector<Literal> parts;
  Literal rest = x;
  for (int i = 0; i < count; ++i) {
    Literal part = convertLiteral(convertLiteral(rest, ElemType::BF16), ElemType::F32);
    if (i + 1 < count) {
      float* r = rest.data<float>();
      const float* p = part.data<float>();
      for (int64_t e = 0; e < rest.numElements(); ++e) r[e] -= p[e];
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace

Literal dotLit(const Literal& lhs, const Literal& rhs, const DotDims& dd, ElemType resultType,
               int bf16Passes) {
  Canon l = canonicalize(lhs, dd.lhsBatch, dd.lhsContracting, /*freeFirst=*/true);
  Canon r = canonicalize(rhs, dd.rhsBatch, dd.rhsContracting, /*freeFirst=*/false);
  if (l.batch != r.batch || l.contract != r.contract)
    throw EvalError(fmt::format("dot: operands {} and {} disagree on batch or contracting sizes",
                                lhs.shapeString(), rhs.shapeString()));
  std::vector<int64_t> outDims;
  for (int64_t d : dd.lhsBatch) outDims.push_back(lhs.dims()[d]);
  outDims.insert(outDims.end(), l.freeDims.begin(), l.freeDims.end());
  outDims.insert(outDims.end(), r.freeDims.begin(), r.freeDims.end());
  const int64_t B = l.batch, M = l.free, K = l.contract, N = r.free;

  // The compute type: f64, f32 or the (integer) result type.
  ElemType compute;
  if (isFloat(resultType) || isFloat(lhs.type()) || isFloat(rhs.type()))
    compute =
        (resultType == ElemType::F64 || lhs.type() == ElemType::F64 || rhs.type() == ElemType::F64)
            ? ElemType::F64
            : ElemType::F32;
  else
    compute = resultType == ElemType::Pred ? ElemType::S64 : resultType;
  Literal a = convertLiteral(l.value, compute);
  Literal b = convertLiteral(r.value, compute);
  Literal acc = Literal::array(compute, outDims);
  if (compute == ElemType::F32 && lhs.type() == ElemType::F32 && rhs.type() == ElemType::F32 &&
      (bf16Passes == 1 || bf16Passes == 3)) {
    // The MXU's passes over bf16 parts, each accumulated in f32, summed from the
    // smallest terms up (lo*hi, hi*lo, then hi*hi), as XLA orders them.
    const int count = bf16Passes == 1 ? 1 : 2;
    std::vector<Literal> as = bf16Parts(a, count), bs = bf16Parts(b, count);
    std::vector<std::pair<int, int>> terms =
        count == 1 ? std::vector<std::pair<int, int>>{{0, 0}}
                   : std::vector<std::pair<int, int>>{{1, 0}, {0, 1}, {0, 0}};
    Literal part = Literal::array(compute, outDims);
    float* out = acc.data<float>();
    std::fill(out, out + acc.numElements(), 0.0f);
    for (auto [i, j] : terms) {
      matmul<float>(as[i].data<float>(), bs[j].data<float>(), part.data<float>(), B, M, K, N);
      const float* p = part.data<float>();
      for (int64_t e = 0; e < acc.numElements(); ++e) out[e] += p[e];
    }
    return convertLiteral(acc, resultType);
  }
  dispatchNative(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      matmul<T>(a.data<T>(), b.data<T>(), acc.data<T>(), B, M, K, N);
    } else {
      // Integers: wrap in the unsigned type of the same width.
      using U = std::make_unsigned_t<T>;
      using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
      std::vector<W> aw(a.data<T>(), a.data<T>() + a.numElements());
      std::vector<W> bw(b.data<T>(), b.data<T>() + b.numElements());
      std::vector<W> ow(static_cast<size_t>(acc.numElements()));
      matmul<W>(aw.data(), bw.data(), ow.data(), B, M, K, N);
      for (size_t i = 0; i < ow.size(); ++i)
        acc.data<T>()[i] = static_cast<T>(static_cast<U>(ow[i]));
    }
  });
  return convertLiteral(acc, resultType);
}

}  // namespace tpusim::hlo::eval
