#include "kernels/lib/Matmul.h"

#include <fmt/format.h>

#include "kernels/tiling/Tiling.h"

namespace tpusim::kernels::lib {

using namespace dsl;

MatmulBlocks chooseMatmulBlocks(int64_t m, int64_t n, int64_t k, llo::DType inType,
                                const codegen::TargetInfo& target, std::string* why) {
  tiling::TilingTarget t = tiling::TilingTarget::from(target);
  t.dotEpilogue = false;          // one K block: the dot is stored into the output block
  t.dotOperandsAreInputs = true;  // x and y blocks are read as they are
  const int in = isa::dtypeBytes(inType);
  tiling::DotBlocking b = tiling::chooseDotBlocks(1, m, n, k, in, in, 4, t);
  if (why) *why = b.why;
  return {b.bm, b.bn, b.bk, matmulResultsFitMxu(b.bm, b.bn, target)};
}

bool matmulResultsFitMxu(int64_t bm, int64_t bn, const codegen::TargetInfo& target) {
  return tiling::dotResultsFitMxu(1, bm, bn, tiling::TilingTarget::from(target));
}

PallasCall matmulCall(int64_t m, int64_t n, int64_t k, llo::DType inType, MatmulBlocks b) {
  if (inType != BF16 && inType != S8)
    throw Error(
        fmt::format("error: matmul inputs must be bf16 or s8, not {}", isa::dtypeName(inType)));
  DType accType = inType == BF16 ? F32 : S32;
  // Blocks larger than the array shrink to it (still a legal block shape).
  int64_t bm = std::min(b.bm, m), bn = std::min(b.bn, n), bk = std::min(b.bk, k);
  auto cdiv = [](int64_t a, int64_t d) { return (a + d - 1) / d; };
  int64_t kBlocks = cdiv(k, bk);
  int64_t kTail = k - (kBlocks - 1) * bk;  // valid K of the last block

  CallConfig c;
  c.name = fmt::format("matmul_{}_{}x{}x{}", isa::dtypeName(inType), m, n, k);
  c.out_shapes = {{{m, n}, accType, "out"}};
  c.grid = {cdiv(m, bm), cdiv(n, bn), kBlocks};
  // With one K block, odd rows of x blocks walk the N blocks backwards (a
  // serpentine order): the step that starts a new x block keeps the y block
  // of the step before, so it moves only the x block on top of its write-back.
  const int64_t nBlocks = cdiv(n, bn);
  auto col = [=](const GridIndex& g) -> Scalar {
    if (kBlocks > 1 || nBlocks == 1) return g[1];
    return g[1] + g[0] % Scalar(2) * (Scalar(nBlocks - 1) - g[1] - g[1]);
  };
  c.in_specs = {BlockSpec({bm, bk},
                          [](const GridIndex& g) {
                            return std::vector<Scalar>{g[0], g[2]};
                          }),
                BlockSpec({bk, bn}, [=](const GridIndex& g) {
                  return std::vector<Scalar>{g[2], col(g)};
                })};
  c.out_specs = {BlockSpec({bm, bn}, [=](const GridIndex& g) {
    return std::vector<Scalar>{g[0], col(g)};
  })};
  // One K block: the dot accumulates straight into the output block (no
  // scratch accumulator to copy out).
  bool oneK = kBlocks == 1;
  bool resident = !oneK && b.resident;
  if (!oneK && !resident) c.scratch = {VMEM({bm, bn}, accType)};
  c.compiler_params.dimension_semantics = {PARALLEL, PARALLEL, ARBITRARY};
  // VMEM: double-buffered blocks (one 32-bit word per element) + the
  // accumulator, at least the DSL's 16 MiB default; the code generator checks
  // it against the chip's VMEM.
  int64_t words = 2 * (bm * bk + bk * bn + bm * bn) + (oneK || resident ? 0 : bm * bn);
  c.compiler_params.vmem_limit_bytes = std::max<int64_t>(int64_t(16) << 20, words * 4 + (1 << 20));

  if (oneK)
    return pallas_call(
        [=](Ref x, Ref y, Ref o) {
          // A dot stored whole into o is one matmul op that writes o in place.
          o.store(dot(x.load(), y.load()));
        },
        c);
  if (resident)
    return pallas_call(
        [=](Ref x, Ref y, Ref o) {
          // The K steps accumulate in the MXU result slots (the first starts
          // them, the others go on from them); the last pops them into o. In
          // interpret mode o holds the running value.
          Scalar kb = program_id(2);
          auto step = [&](MxuResident keep, bool cont, bool clipped) {
            DotOptions opt;
            opt.resident = keep;
            opt.continue_in_mxu = cont;
            // The last K block read clipped to its valid part, as below.
            int64_t kv = clipped ? kTail : bk;
            o.store(dot(x.load(ds(0, bm), ds(0, kv)), y.load(ds(0, kv), ds(0, bn)), opt));
          };
          when(kb == 0, [&] { step(MxuResident::Keep, false, false); });
          if (kBlocks > 2)
            when(kb > 0 && kb < kBlocks - 1, [&] { step(MxuResident::Keep, true, false); });
          when(kb == kBlocks - 1, [&] { step(MxuResident::Store, true, kTail != bk); });
        },
        c);
  auto body = [=](Ref x, Ref y, Ref o, Ref acc) {
    Scalar kb = program_id(2);
    when(kb == 0, [&] { acc.store(zeros(bm, bn, accType)); });
    if (kTail == bk) {
      acc.store(acc.load() + dot(x.load(), y.load()));
    } else {
      // The last K block holds kTail valid columns of x / rows of y; the rest is
      // padding (undefined), so the last step reads only the valid part (the
      // MXU lowering pushes a K that is not a multiple of its tile, with no
      // masks over the blocks).
      when(kb != kBlocks - 1, [&] { acc.store(acc.load() + dot(x.load(), y.load())); });
      when(kb == kBlocks - 1, [&] {
        acc.store(acc.load() +
                  dot(x.load(ds(0, bm), ds(0, kTail)), y.load(ds(0, kTail), ds(0, bn))));
      });
    }
    when(kb == kBlocks - 1, [&] { o.store(acc.load()); });
  };
  return pallas_call(body, c);
}

std::vector<double> matmulReference(const std::vector<double>& x, const std::vector<double>& y,
                                    int64_t m, int64_t n, int64_t k) {
  std::vector<double> out(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk) {
      double a = x[i * k + kk];
      for (int64_t j = 0; j < n; ++j) out[i * n + j] += a * y[kk * n + j];
    }
  return out;
}

}  // namespace tpusim::kernels::lib
