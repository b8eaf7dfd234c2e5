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

}  // namespace

Literal dotLit(const Literal& lhs, const Literal& rhs, const DotDims& dd, ElemType resultType) {
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
