#include "kernels/lib/DecodeAttention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/dsl/HostArrayIo.h"
#include "kernels/lib/FlashAttention.h"

namespace tpusim::kernels::lib {

using namespace dsl;

namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

void checkShape(const DecodeShape& s, const char* what) {
  if (s.batch < 1 || s.kvHeads < 1 || s.group < 1)
    throw Error(fmt::format("error: {}: batch {}, kv_heads {} and group {} must be positive", what,
                            s.batch, s.kvHeads, s.group));
  int64_t d = s.headDim;
  if (d < 8 || (d <= 128 && d % 8 != 0) || (d > 128 && d % 128 != 0))
    throw Error(fmt::format(
        "error: {}: head_dim {} is not supported (a multiple of 8 up to 128, or of 128)", what, d));
}

// One kv block of `cols` positions starting at kStart against the group's
// queries; positions >= len are masked (scores) and zeroed (v rows).
void decodeStep(const OnlineSoftmax& sm, const Ref& q, const Ref& k, const Ref& v, Scalar len,
                Scalar kStart, int64_t cols, double scale) {
  when(kStart < len, [&] {
    auto score = [=](const Array& raw, Scalar, int64_t col0) {
      Array col = iota(1, raw.cols(), 1) + splat(kStart + col0, 1, 1);
      return where(col < splat(len, 1, 1), raw * scale, full(1, 1, OnlineSoftmax::kMaskValue));
    };
    // Only the block holding the last position has rows past the length.
    when_else(
        kStart + cols > len,
        [&] {
          Array vv =
              where(iota(cols, 1, 0) < splat(len - kStart, 1, 1), v.load(), zeros(1, 1, BF16));
          sm.update(q.load(), k.load(), score, vv);
        },
        [&] { sm.update(q.load(), k.load(), score, v.load()); });
  });
}

}  // namespace

std::vector<ShapeDtype> decodeAttentionInputs(const DecodeShape& s, int64_t maxLen) {
  return {{{s.batch}, S32, "lengths"},
          {{s.batch, s.kvHeads, s.group, s.headDim}, BF16, "q"},
          {{s.batch, s.kvHeads, maxLen, s.headDim}, BF16, "k"},
          {{s.batch, s.kvHeads, maxLen, s.headDim}, BF16, "v"}};
}

PallasCall decodeAttentionCall(const DecodeShape& sh, int64_t maxLen,
                               const DecodeAttentionParams& prm) {
  checkShape(sh, "decode attention");
  if (maxLen < 1) throw Error("error: decode attention: the cache length must be positive");
  const int64_t bk =
      prm.blockK < maxLen ? prm.blockK : (maxLen <= 128 ? maxLen : cdiv(maxLen, 128) * 128);
  if (bk < 1 || (bk % 128 != 0 && bk != maxLen))
    throw Error(fmt::format(
        "error: decode attention block_k {} must be a multiple of 128 (a block_k >= the cache "
        "length {} covers all of it)",
        prm.blockK, maxLen));
  const int64_t G = sh.group, d = sh.headDim, nk = cdiv(maxLen, bk);
  const double scale = prm.smScale != 0 ? prm.smScale : 1.0 / std::sqrt(double(d));

  CallConfig c;
  c.name = fmt::format("decode_attention_{}x{}x{}x{}_len{}", sh.batch, sh.kvHeads, G, d, maxLen);
  c.num_scalar_prefetch = 1;
  c.out_shapes = {{{sh.batch, sh.kvHeads, G, d}, F32, "out"}};
  c.grid = {sh.batch, sh.kvHeads, nk};
  auto qMap = [](const GridIndex& g) { return std::vector<Scalar>{g[0], g[1], 0, 0}; };
  // Blocks past the length repeat the last valid block: no copy.
  auto kvMap = [=](const GridIndex& g) {
    Scalar len = g.prefetch[0].get({g[0]});
    return std::vector<Scalar>{g[0], g[1], min(g[2], (len - 1) / bk), 0};
  };
  c.in_specs = {BlockSpec({1, 1, G, d}, qMap), BlockSpec({1, 1, bk, d}, kvMap),
                BlockSpec({1, 1, bk, d}, kvMap)};
  c.out_specs = {BlockSpec({1, 1, G, d}, qMap)};
  c.scratch = OnlineSoftmax::scratch(G, bk, d);
  c.compiler_params.dimension_semantics = {PARALLEL, PARALLEL, ARBITRARY};
  c.compiler_params.vmem_limit_bytes = prm.vmemLimitBytes;

  auto body = [=](const std::vector<Ref>& r) {
    Ref lengths = r[0];
    Ref q = r[1].at(0).at(0), k = r[2].at(0).at(0), v = r[3].at(0).at(0), o = r[4].at(0).at(0);
    OnlineSoftmax sm(std::vector<Ref>(r.begin() + 5, r.end()), G, bk, d);
    Scalar kv = program_id(2);
    when(kv == 0, [&] { sm.init(); });
    decodeStep(sm, q, k, v, lengths.get({program_id(0)}), kv * bk, bk, scale);
    when(kv == nk - 1, [&] { sm.finish(o); });
  };
  return pallas_call(body, c);
}

std::vector<ShapeDtype> pagedAttentionInputs(const DecodeShape& s, const PagedLayout& p) {
  return {{{s.batch}, S32, "lengths"},
          {{s.batch, p.pagesPerSeq}, S32, "page_indices"},
          {{s.batch, s.kvHeads, s.group, s.headDim}, BF16, "q"},
          {{s.kvHeads, p.numPages, p.pageSize, s.headDim}, BF16, "k_pages"},
          {{s.kvHeads, p.numPages, p.pageSize, s.headDim}, BF16, "v_pages"}};
}

PallasCall pagedAttentionCall(const DecodeShape& sh, const PagedLayout& pg,
                              const DecodeAttentionParams& prm) {
  checkShape(sh, "paged attention");
  if (pg.numPages < 1 || pg.pagesPerSeq < 1 || pg.pageSize < 1)
    throw Error(fmt::format(
        "error: paged attention: num_pages {}, page_size {} and pages_per_sequence {} must be "
        "positive",
        pg.numPages, pg.pageSize, pg.pagesPerSeq));
  if (pg.pageSize > 128 && pg.pageSize % 128 != 0)
    throw Error(
        fmt::format("error: paged attention: page_size {} must be at most 128 or a multiple of 128",
                    pg.pageSize));
  const int64_t G = sh.group, d = sh.headDim, ps = pg.pageSize;
  const double scale = prm.smScale != 0 ? prm.smScale : 1.0 / std::sqrt(double(d));

  CallConfig c;
  c.name = fmt::format("paged_attention_{}x{}x{}x{}_pages{}x{}", sh.batch, sh.kvHeads, G, d,
                       pg.pagesPerSeq, ps);
  c.num_scalar_prefetch = 2;
  c.out_shapes = {{{sh.batch, sh.kvHeads, G, d}, F32, "out"}};
  c.grid = {sh.batch, sh.kvHeads, pg.pagesPerSeq};
  auto qMap = [](const GridIndex& g) { return std::vector<Scalar>{g[0], g[1], 0, 0}; };
  // The page table picks the physical page; steps past the length repeat the
  // last valid page, so nothing is copied for them.
  auto kvMap = [=](const GridIndex& g) {
    Scalar len = g.prefetch[0].get({g[0]});
    Scalar page = min(g[2], (len - 1) / ps);
    return std::vector<Scalar>{g[1], g.prefetch[1].get({g[0], page}), 0, 0};
  };
  c.in_specs = {BlockSpec({1, 1, G, d}, qMap), BlockSpec({1, 1, ps, d}, kvMap),
                BlockSpec({1, 1, ps, d}, kvMap)};
  c.out_specs = {BlockSpec({1, 1, G, d}, qMap)};
  c.scratch = OnlineSoftmax::scratch(G, ps, d);
  c.compiler_params.dimension_semantics = {PARALLEL, PARALLEL, ARBITRARY};
  c.compiler_params.vmem_limit_bytes = prm.vmemLimitBytes;

  const int64_t nPages = pg.pagesPerSeq;
  auto body = [=](const std::vector<Ref>& r) {
    Ref lengths = r[0];
    Ref q = r[2].at(0).at(0), k = r[3].at(0).at(0), v = r[4].at(0).at(0), o = r[5].at(0).at(0);
    OnlineSoftmax sm(std::vector<Ref>(r.begin() + 6, r.end()), G, ps, d);
    Scalar page = program_id(2);
    when(page == 0, [&] { sm.init(); });
    decodeStep(sm, q, k, v, lengths.get({program_id(0)}), page * ps, ps, scale);
    when(page == nPages - 1, [&] { sm.finish(o); });
  };
  return pallas_call(body, c);
}

namespace {

// Attention of one query row over `n` positions; key/value j at kAt(j)/vAt(j).
template <typename KAt, typename VAt>
void attendRow(const double* q, int64_t n, int64_t d, double scale, KAt kAt, VAt vAt, double* out) {
  std::vector<double> s(static_cast<size_t>(n));
  double mx = -std::numeric_limits<double>::infinity(), sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double* kj = kAt(j);
    double x = 0;
    for (int64_t e = 0; e < d; ++e) x += q[e] * kj[e];
    s[size_t(j)] = x * scale;
    mx = std::max(mx, s[size_t(j)]);
  }
  for (double& x : s) sum += (x = std::exp(x - mx));
  for (int64_t e = 0; e < d; ++e) out[e] = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double* vj = vAt(j);
    for (int64_t e = 0; e < d; ++e) out[e] += s[size_t(j)] / sum * vj[e];
  }
}

}  // namespace

std::vector<double> decodeAttentionReference(const std::vector<int32_t>& lengths,
                                             const std::vector<double>& q,
                                             const std::vector<double>& k,
                                             const std::vector<double>& v, const DecodeShape& sh,
                                             int64_t maxLen, double smScale) {
  const int64_t G = sh.group, d = sh.headDim;
  const double scale = smScale != 0 ? smScale : 1.0 / std::sqrt(double(d));
  std::vector<double> out(size_t(sh.batch * sh.kvHeads * G * d));
  for (int64_t b = 0; b < sh.batch; ++b)
    for (int64_t h = 0; h < sh.kvHeads; ++h) {
      size_t cache = size_t((b * sh.kvHeads + h) * maxLen * d);
      for (int64_t g = 0; g < G; ++g) {
        size_t row = size_t(((b * sh.kvHeads + h) * G + g) * d);
        attendRow(
            &q[row], lengths[size_t(b)], d, scale,
            [&](int64_t j) { return &k[cache + size_t(j * d)]; },
            [&](int64_t j) { return &v[cache + size_t(j * d)]; }, &out[row]);
      }
    }
  return out;
}

std::vector<double> pagedAttentionReference(const std::vector<int32_t>& lengths,
                                            const std::vector<int32_t>& pageIndices,
                                            const std::vector<double>& q,
                                            const std::vector<double>& kPages,
                                            const std::vector<double>& vPages,
                                            const DecodeShape& sh, const PagedLayout& pg,
                                            double smScale) {
  const int64_t G = sh.group, d = sh.headDim, ps = pg.pageSize;
  const double scale = smScale != 0 ? smScale : 1.0 / std::sqrt(double(d));
  std::vector<double> out(size_t(sh.batch * sh.kvHeads * G * d));
  for (int64_t b = 0; b < sh.batch; ++b)
    for (int64_t h = 0; h < sh.kvHeads; ++h) {
      // Position j lives in page page_indices[b, j / ps] at offset j % ps.
      auto at = [&](const std::vector<double>& pages, int64_t j) {
        int64_t page = pageIndices[size_t(b * pg.pagesPerSeq + j / ps)];
        return &pages[size_t(((h * pg.numPages + page) * ps + j % ps) * d)];
      };
      for (int64_t g = 0; g < G; ++g) {
        size_t row = size_t(((b * sh.kvHeads + h) * G + g) * d);
        attendRow(
            &q[row], lengths[size_t(b)], d, scale, [&](int64_t j) { return at(kPages, j); },
            [&](int64_t j) { return at(vPages, j); }, &out[row]);
      }
    }
  return out;
}

}  // namespace tpusim::kernels::lib

namespace tpusim::kernels::lib {

namespace {

// Sequence lengths: all `fixed`, or (fixed = 0) seeded values in [1, capacity]
// with the first sequence full, so both a full and a partial last block occur.
dsl::HostArray lengthsArray(int64_t batch, int64_t capacity, int64_t fixed, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> len(1, capacity);
  std::vector<int32_t> v(static_cast<size_t>(batch));
  for (size_t b = 0; b < v.size(); ++b)
    v[b] = int32_t(fixed > 0 ? fixed : (b == 0 ? capacity : len(rng)));
  return dsl::HostArray::fromInts({batch}, S32, v);
}

std::vector<int32_t> intsOf(const std::vector<double>& v) { return {v.begin(), v.end()}; }

const std::vector<ParamSpec> kDecodeParams = {
    {"batch", "2", "sequences"},
    {"kv_heads", "2", "key/value heads"},
    {"group", "1", "query heads per kv head (GQA; 1 = multi-head)"},
    {"head_dim", "128", "head dimension"},
    {"length", "0", "every sequence's length; 0 = seeded lengths in [1, capacity]"},
    {"sm_scale", "0", "score scale; 0 = 1/sqrt(head_dim)"}};

DecodeShape decodeShapeOf(const Params& p) {
  return {p.integer("batch", 1), p.integer("kv_heads", 1), p.integer("group", 1),
          p.integer("head_dim", 1)};
}

// Outputs are averages of |v| < 2 in f32; p is rounded to bf16 for the MXU.
constexpr Tolerance kDecodeTolerance{2e-2, 0.2};

}  // namespace

KernelEntry decodeAttentionEntry() {
  KernelEntry e;
  e.name = "decode_attention";
  e.description =
      "one query token per head against a contiguous KV cache [batch, kv_heads, max_len, d] "
      "bf16, run-time lengths (scalar prefetch), GQA";
  e.params = kDecodeParams;
  e.params.push_back({"max_len", "2048", "cache capacity (positions)"});
  e.params.push_back({"block_k", "2048", "cache positions per grid step (a power of two >= 128)"});
  e.build = [](const Params& p) {
    DecodeShape s = decodeShapeOf(p);
    int64_t maxLen = p.integer("max_len", 1), fixed = p.integer("length", 0);
    if (fixed > maxLen) p.invalid("length", fmt::format("exceeds max_len {}", maxLen));
    DecodeAttentionParams dp;
    dp.blockK = p.integer("block_k", 1);
    dp.smScale = p.real("sm_scale");
    dp.vmemLimitBytes = int64_t(96) << 20;
    LibraryKernel lk{
        decodeAttentionCall(s, maxLen, dp), decodeAttentionInputs(s, maxLen), {}, kDecodeTolerance};
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      return std::vector<std::vector<double>>{decodeAttentionReference(
          intsOf(in.at(0)), in.at(1), in.at(2), in.at(3), s, maxLen, dp.smScale)};
    };
    std::vector<dsl::ShapeDtype> shapes = lk.inputs;
    lk.makeInputs = [=](std::mt19937_64& rng) {
      std::vector<dsl::HostArray> in{lengthsArray(s.batch, maxLen, fixed, rng)};
      for (size_t i = 1; i < shapes.size(); ++i)
        in.push_back(dsl::randomArray(shapes[i].shape, shapes[i].dtype, rng));
      return in;
    };
    return lk;
  };
  return e;
}

KernelEntry pagedAttentionEntry() {
  KernelEntry e;
  e.name = "paged_attention";
  e.description =
      "one query token per head against a paged KV cache [kv_heads, num_pages, page_size, d] "
      "bf16 through a page table (scalar prefetch), run-time lengths, GQA";
  e.params = kDecodeParams;
  e.params.push_back({"num_pages", "64", "physical pages per kv head"});
  e.params.push_back({"page_size", "128", "positions per page (<= 128 or a multiple of 128)"});
  e.params.push_back({"pages_per_seq", "16", "page-table entries per sequence"});
  e.build = [](const Params& p) {
    DecodeShape s = decodeShapeOf(p);
    PagedLayout pg{p.integer("num_pages", 1), p.integer("page_size", 1),
                   p.integer("pages_per_seq", 1)};
    if (pg.numPages < s.batch * pg.pagesPerSeq)
      p.invalid("num_pages", fmt::format("fewer than batch x pages_per_seq = {} (each sequence "
                                         "gets distinct pages)",
                                         s.batch * pg.pagesPerSeq));
    int64_t capacity = pg.pageSize * pg.pagesPerSeq, fixed = p.integer("length", 0);
    if (fixed > capacity)
      p.invalid("length", fmt::format("exceeds page_size x pages_per_seq = {}", capacity));
    DecodeAttentionParams dp;
    dp.smScale = p.real("sm_scale");
    dp.vmemLimitBytes = int64_t(96) << 20;
    LibraryKernel lk{
        pagedAttentionCall(s, pg, dp), pagedAttentionInputs(s, pg), {}, kDecodeTolerance};
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      return std::vector<std::vector<double>>{pagedAttentionReference(
          intsOf(in.at(0)), intsOf(in.at(1)), in.at(2), in.at(3), in.at(4), s, pg, dp.smScale)};
    };
    std::vector<dsl::ShapeDtype> shapes = lk.inputs;
    lk.makeInputs = [=](std::mt19937_64& rng) {
      std::vector<int32_t> pages(static_cast<size_t>(pg.numPages));
      for (size_t i = 0; i < pages.size(); ++i) pages[i] = int32_t(i);
      std::shuffle(pages.begin(), pages.end(), rng);
      pages.resize(static_cast<size_t>(s.batch * pg.pagesPerSeq));
      std::vector<dsl::HostArray> in{
          lengthsArray(s.batch, capacity, fixed, rng),
          dsl::HostArray::fromInts({s.batch, pg.pagesPerSeq}, S32, pages)};
      for (size_t i = 2; i < shapes.size(); ++i)
        in.push_back(dsl::randomArray(shapes[i].shape, shapes[i].dtype, rng));
      return in;
    };
    return lk;
  };
  return e;
}

}  // namespace tpusim::kernels::lib
