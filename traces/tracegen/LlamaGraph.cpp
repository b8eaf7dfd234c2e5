#include "traces/tracegen/LlamaGraph.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "traces/tracegen/JaxHloBuilder.h"

// Builder calls are sequenced by statements, never as two arguments of one
// call: argument order is unspecified in C++, and instruction numbering must
// not depend on the compiler.
namespace tpusim::traces {

namespace {

using hlo::ComparisonDirection;
using hlo::DotDimensionNumbers;
using hlo::HloOpcode;
using I = HloInstruction*;
using Dims = std::vector<int64_t>;

constexpr PrimitiveType F32 = PrimitiveType::F32;
constexpr PrimitiveType S32 = PrimitiveType::S32;

// A projection matrix: the weight, and for int8 its per-column scale.
struct Weight {
  I w = nullptr;
  I scale = nullptr;
};

struct LayerParams {
  I attentionNorm = nullptr, ffnNorm = nullptr;
  Weight wq, wk, wv, wo, w1, w3, w2;
  I cacheK = nullptr, cacheV = nullptr;  // decode only
};

class LlamaGraph {
 public:
  LlamaGraph(const LlamaConfig& c, const std::string& sourceFile)
      : c_(c),
        b_(c.functionName(), sourceFile),
        act_(c.weights == WeightType::F32 ? F32 : PrimitiveType::BF16),
        hd_(c.headDim()),
        half_(c.headDim() / 2),
        s_(c.queryLen()),
        t_(c.keyLen()) {}

  LlamaTrace build() {
    declareParameters();
    I x = input_;
    if (!c_.layersOnly) {
      JaxHloBuilder::Scope scope(b_, "embed");
      x = embed(input_);
    }
    {
      JaxHloBuilder::Scope scope(b_, "rope");
      ropeTables();
    }
    {
      JaxHloBuilder::Scope scope(b_, "mask");
      causalMask();
    }
    std::vector<I> caches;
    for (int64_t l = 0; l < c_.nLayers; ++l) {
      JaxHloBuilder::Scope scope(b_, fmt::format("layers_{}", l));
      x = layer(x, layers_[l], caches);
    }
    std::vector<I> outputs;
    if (c_.layersOnly) {
      outputs.push_back(x);
      trace_.outputNames.push_back("x");
    } else {
      I h;
      {
        JaxHloBuilder::Scope scope(b_, "norm");
        h = rmsNorm(x, norm_);
      }
      JaxHloBuilder::Scope scope(b_, "output");
      outputs.push_back(project(h, output_, F32));
      trace_.outputNames.push_back("logits");
    }
    std::vector<std::pair<int64_t, int64_t>> aliases;
    for (size_t i = 0; i < caches.size(); ++i) {
      outputs.push_back(caches[i]);
      trace_.outputNames.push_back(
          fmt::format("cache['{}'][{}]", i % 2 ? 'v' : 'k', static_cast<int64_t>(i / 2)));
      if (c_.phase == Phase::Decode)
        aliases.emplace_back(static_cast<int64_t>(outputs.size()) - 1, cacheParamNumbers_.at(i));
    }
    trace_.module = b_.finish(outputs, aliases);
    return std::move(trace_);
  }

 private:
  I param(PrimitiveType t, Dims dims, const std::string& name) {
    trace_.parameterNames.push_back(name);
    return b_.parameter(t, dims, name, sharding(dims, name));
  }

  Weight weight(const std::string& name, int64_t rows, int64_t cols) {
    Weight w;
    if (c_.weights == WeightType::Int8) {
      w.w = param(PrimitiveType::S8, {rows, cols}, name);
      std::string scaleName = name;
      scaleName.insert(scaleName.size() - 2, "_scale");  // params[...]['wq'] -> ['wq_scale']
      w.scale = param(act_, {cols}, scaleName);
    } else {
      w.w = param(act_, {rows, cols}, name);
    }
    return w;
  }

  // Inputs first (as the step function takes them), then the weights.
  void declareParameters() {
    const int64_t B = c_.localBatch(), D = c_.dModel;
    if (c_.layersOnly)
      input_ = param(act_, {B, s_, D}, "x");
    else
      input_ = param(S32, {B, s_}, "tokens");
    layers_.resize(static_cast<size_t>(c_.nLayers));
    if (c_.phase == Phase::Decode) {
      pos_ = param(S32, {}, "pos");
      for (int64_t l = 0; l < c_.nLayers; ++l) {
        cacheParamNumbers_.push_back(static_cast<int64_t>(trace_.parameterNames.size()));
        layers_[l].cacheK =
            param(act_, {B, t_, c_.localKvHeads(), hd_}, fmt::format("cache['k'][{}]", l));
        cacheParamNumbers_.push_back(static_cast<int64_t>(trace_.parameterNames.size()));
        layers_[l].cacheV =
            param(act_, {B, t_, c_.localKvHeads(), hd_}, fmt::format("cache['v'][{}]", l));
      }
    }
    if (!c_.layersOnly) embedTable_ = param(act_, {c_.vocab, D}, "params['embed']");
    const int64_t qDim = c_.localHeads() * hd_, kvDim = c_.localKvHeads() * hd_;
    for (int64_t l = 0; l < c_.nLayers; ++l) {
      LayerParams& p = layers_[l];
      auto name = [&](const char* w) { return fmt::format("params['layers'][{}]['{}']", l, w); };
      p.attentionNorm = param(act_, {D}, name("attention_norm"));
      p.wq = weight(name("wq"), D, qDim);
      p.wk = weight(name("wk"), D, kvDim);
      p.wv = weight(name("wv"), D, kvDim);
      p.wo = weight(name("wo"), qDim, D);
      p.ffnNorm = param(act_, {D}, name("ffn_norm"));
      p.w1 = weight(name("w1"), D, c_.localFf());
      p.w3 = weight(name("w3"), D, c_.localFf());
      p.w2 = weight(name("w2"), c_.localFf(), D);
    }
    if (!c_.layersOnly) {
      norm_ = param(act_, {D}, "params['norm']");
      output_ = weight("params['output']", D, c_.vocab);
    }
  }

  // Token ids wrap like NumPy indices (-1 is the last row), then pick rows.
  I embed(I tokens) {
    const Dims idDims{c_.localBatch(), s_};
    I negative = b_.compare(tokens, b_.splat(S32, 0, idDims), ComparisonDirection::LT);
    I wrapped = b_.binary(HloOpcode::Add, tokens, b_.splat(S32, double(c_.vocab), idDims));
    I ids = b_.select(negative, wrapped, tokens);
    if (c_.embedding == Embedding::Gather)
      return b_.takeRows(embedTable_, b_.reshape(ids, {c_.localBatch(), s_, 1}));
    // jax.nn.one_hot(ids, vocab) @ table.
    const Dims hot{c_.localBatch(), s_, c_.vocab};
    I classes = b_.iota(S32, hot, 2);
    I match = b_.compare(b_.broadcast(ids, hot, {0, 1}), classes, ComparisonDirection::EQ);
    DotDimensionNumbers dn;
    dn.lhsContracting = {2};
    dn.rhsContracting = {0};
    return b_.dot(b_.convert(match, act_), embedTable_, dn, act_);
  }

  // cos/sin of position * theta^(-2i/hd), f32[S, hd/2]: computed in the graph
  // (iota, exp) rather than stored as constants, as jnp code traces it.
  void ropeTables() {
    I i = b_.iota(F32, {half_}, 0);
    I exponent = b_.binary(HloOpcode::Multiply, i,
                           b_.splat(F32, -2.0 * std::log(c_.ropeTheta) / double(hd_), {half_}));
    I invFreq = b_.unary(HloOpcode::Exp, exponent);
    I positions;
    if (c_.phase == Phase::Prefill)
      positions = b_.iota(F32, {s_}, 0);
    else
      positions = b_.broadcast(b_.convert(pos_, F32), {1}, {});
    I rows = b_.broadcast(positions, {s_, half_}, {0});
    I cols = b_.broadcast(invFreq, {s_, half_}, {1});
    I angles = b_.binary(HloOpcode::Multiply, rows, cols);
    cos_ = b_.unary(HloOpcode::Cosine, angles);
    sin_ = b_.unary(HloOpcode::Sine, angles);
  }

  // pred[S, T]: query position q may see key position k when k <= q (prefill)
  // or k <= pos (decode).
  void causalMask() {
    if (c_.phase == Phase::Prefill) {
      I rows = b_.iota(S32, {s_, t_}, 0);
      I cols = b_.iota(S32, {s_, t_}, 1);
      mask_ = b_.compare(rows, cols, ComparisonDirection::GE);
    } else {
      I cols = b_.iota(S32, {s_, t_}, 1);
      mask_ = b_.compare(cols, b_.broadcast(pos_, {s_, t_}, {}), ComparisonDirection::LE);
    }
  }

  I rmsNorm(I x, I weight) {
    const Dims dims = x->shape().dims;
    const int64_t last = x->shape().rank() - 1;
    Dims rowDims(dims.begin(), dims.end() - 1), keep;
    for (int64_t d = 0; d < last; ++d) keep.push_back(d);
    I xf = b_.convert(x, F32);
    I sum = b_.reduce(b_.binary(HloOpcode::Multiply, xf, xf), {last}, JaxHloBuilder::Reducer::Sum);
    I mean = b_.binary(HloOpcode::Divide, sum, b_.splat(F32, double(dims[last]), rowDims));
    I inv = b_.unary(HloOpcode::Rsqrt,
                     b_.binary(HloOpcode::Add, mean, b_.splat(F32, c_.normEps, rowDims)));
    I normed = b_.binary(HloOpcode::Multiply, xf, b_.broadcast(inv, dims, keep));
    I narrowed = b_.convert(normed, act_);
    return b_.binary(HloOpcode::Multiply, narrowed, b_.broadcast(weight, dims, {last}));
  }

  // x[..., K] @ W[K, N]; an int8 W is dequantized per column first (or x quantized: below).
  I project(I x, const Weight& w, PrimitiveType resultType) {
    I matrix = w.w;
    if (w.scale && !c_.int8Activations) {
      const Dims dims = w.w->shape().dims;
      I widened = b_.convert(w.w, act_);
      matrix = b_.binary(HloOpcode::Multiply, widened, b_.broadcast(w.scale, dims, {1}));
    }
    if (w.scale && c_.int8Activations) return quantizedProject(x, w, resultType);
    const int64_t last = x->shape().rank() - 1;
    DotDimensionNumbers dn{{}, {last}, {}, {0}};
    return b_.dot(x, matrix, dn, resultType);
  }

  // Rotates the two halves of the last dimension of x[B, S, ..., hd] by the
  // position angles, in f32.
  I rope(I x) {
    const int64_t last = x->shape().rank() - 1;
    I xf = b_.convert(x, F32);
    I x1 = b_.sliceDim(xf, last, 0, half_);
    I x2 = b_.sliceDim(xf, last, half_, hd_);
    const Dims dims = x1->shape().dims;
    I cos = b_.broadcast(cos_, dims, {1, last});
    I sin = b_.broadcast(sin_, dims, {1, last});
    I x1cos = b_.binary(HloOpcode::Multiply, x1, cos);
    I x2sin = b_.binary(HloOpcode::Multiply, x2, sin);
    I r1 = b_.binary(HloOpcode::Subtract, x1cos, x2sin);
    I x2cos = b_.binary(HloOpcode::Multiply, x2, cos);
    I x1sin = b_.binary(HloOpcode::Multiply, x1, sin);
    I r2 = b_.binary(HloOpcode::Add, x2cos, x1sin);
    return b_.convert(b_.concatenate({r1, r2}, last), act_);
  }

  // Scores and values per KV head: with groups (GQA), the G query heads that
  // share a KV head form their own dimension, so K and V are never repeated.
  I attention(I h, const LayerParams& p, std::vector<I>& caches) {
    const int64_t B = c_.localBatch(), KV = c_.localKvHeads(), G = c_.groupSize();
    const bool grouped = G > 1;
    I q = project(h, p.wq, act_);
    I k = project(h, p.wk, act_);
    I v = project(h, p.wv, act_);
    q = rope(grouped ? b_.reshape(q, {B, s_, KV, G, hd_}) : b_.reshape(q, {B, s_, KV, hd_}));
    k = rope(b_.reshape(k, {B, s_, KV, hd_}));
    v = b_.reshape(v, {B, s_, KV, hd_});
    if (c_.phase == Phase::Decode) {
      I zero = b_.constant(S32, 0);
      k = b_.dynamicUpdateSlice(p.cacheK, k, {zero, pos_, zero, zero});
      v = b_.dynamicUpdateSlice(p.cacheV, v, {zero, pos_, zero, zero});
    }
    caches.push_back(k);
    caches.push_back(v);

    I qt = grouped ? b_.transpose(q, {0, 2, 3, 1, 4}) : b_.transpose(q, {0, 2, 1, 3});
    I kt = b_.transpose(k, {0, 2, 1, 3});  // [B, KV, T, hd]
    I vt = b_.transpose(v, {0, 2, 1, 3});
    const int64_t rank = qt->shape().rank();
    DotDimensionNumbers qk;
    qk.lhsBatch = qk.rhsBatch = {0, 1};
    qk.lhsContracting = {rank - 1};
    qk.rhsContracting = {3};
    I scores = b_.dot(qt, kt, qk, F32);  // [B, KV, (G,) S, T]
    const Dims sd = scores->shape().dims;
    scores =
        b_.binary(HloOpcode::Multiply, scores, b_.splat(F32, 1.0 / std::sqrt(double(hd_)), sd));
    I visible = b_.broadcast(mask_, sd, {rank - 2, rank - 1});
    scores =
        b_.select(visible, scores, b_.splat(F32, double(std::numeric_limits<float>::lowest()), sd));

    Dims rowDims(sd.begin(), sd.end() - 1), keep;
    for (int64_t d = 0; d < rank - 1; ++d) keep.push_back(d);
    I max = b_.reduce(scores, {rank - 1}, JaxHloBuilder::Reducer::Max);
    I e = b_.unary(HloOpcode::Exp,
                   b_.binary(HloOpcode::Subtract, scores, b_.broadcast(max, sd, keep)));
    I sum = b_.reduce(e, {rank - 1}, JaxHloBuilder::Reducer::Sum);
    I probs = b_.binary(HloOpcode::Divide, e, b_.broadcast(sum, sd, keep));

    DotDimensionNumbers pv;
    pv.lhsBatch = pv.rhsBatch = {0, 1};
    pv.lhsContracting = {rank - 1};
    pv.rhsContracting = {2};
    I o = b_.dot(b_.convert(probs, act_), vt, pv, act_);  // [B, KV, (G,) S, hd]
    o = grouped ? b_.transpose(o, {0, 3, 1, 2, 4}) : b_.transpose(o, {0, 2, 1, 3});
    o = b_.reshape(o, {B, s_, c_.localHeads() * hd_});
    return allReduce(project(o, p.wo, act_));
  }

  I feedForward(I h, const LayerParams& p) {
    I gate = project(h, p.w1, act_);
    I up = project(h, p.w3, act_);
    I silu = b_.binary(HloOpcode::Multiply, gate, b_.unary(HloOpcode::Logistic, gate));
    return allReduce(project(b_.binary(HloOpcode::Multiply, silu, up), p.w2, act_));
  }

  I layer(I x, const LayerParams& p, std::vector<I>& caches) {
    I h;
    {
      JaxHloBuilder::Scope scope(b_, "attention_norm");
      h = rmsNorm(x, p.attentionNorm);
    }
    {
      JaxHloBuilder::Scope scope(b_, "attention");
      x = b_.binary(HloOpcode::Add, x, attention(h, p, caches));
    }
    {
      JaxHloBuilder::Scope scope(b_, "ffn_norm");
      h = rmsNorm(x, p.ffnNorm);
    }
    JaxHloBuilder::Scope scope(b_, "feed_forward");
    return b_.binary(HloOpcode::Add, x, feedForward(h, p));
  }

  // The row-parallel projections' partial sums, summed over the tp devices
  // (defined last: the traces record the source lines of the code above).
  I allReduce(I partial) { return c_.tp > 1 ? b_.psum(partial, c_.tp) : partial; }

  // x @ W with int8 activations, AQT-style (defined last, as allReduce): each
  // row of x scaled by 127 / max |x| and rounded to s8 (|x| 127 / max |x| <=
  // 127 rounds into range: no clamp), the dot in s32, the result times the
  // row's scale (max |x| / 127) and the column's. An all-zero row gets
  // max |x| = 1e-30: its values quantize to 0 either way.
  I quantizedProject(I x, const Weight& w, PrimitiveType resultType) {
    const int64_t last = x->shape().rank() - 1;
    const Dims dims = x->shape().dims;
    const Dims rowDims(dims.begin(), dims.end() - 1);
    std::vector<int64_t> keep;
    for (int64_t d = 0; d < last; ++d) keep.push_back(d);
    I xf = b_.convert(x, F32);
    I amax = b_.reduce(b_.unary(HloOpcode::Abs, xf), {last}, JaxHloBuilder::Reducer::Max);
    amax = b_.binary(HloOpcode::Maximum, amax, b_.splat(F32, 1e-30, rowDims));
    I inv = b_.binary(HloOpcode::Divide, b_.splat(F32, 127.0, rowDims), amax);
    I scaled = b_.binary(HloOpcode::Multiply, xf, b_.broadcast(inv, dims, keep));
    I q = b_.convert(b_.unary(HloOpcode::RoundNearestEven, scaled), PrimitiveType::S8);
    DotDimensionNumbers dn{{}, {last}, {}, {0}};
    I acc = b_.convert(b_.dot(q, w.w, dn, S32), F32);
    const Dims outDims = acc->shape().dims;
    I rowScale = b_.binary(HloOpcode::Divide, amax, b_.splat(F32, 127.0, rowDims));
    I out = b_.binary(HloOpcode::Multiply, acc, b_.broadcast(rowScale, outDims, keep));
    I colScale = b_.convert(w.scale, F32);
    out = b_.binary(HloOpcode::Multiply, out, b_.broadcast(colScale, outDims, {last}));
    return b_.convert(out, resultType);
  }

  const LlamaConfig& c_;
  JaxHloBuilder b_;
  PrimitiveType act_;
  int64_t hd_, half_, s_, t_;
  LlamaTrace trace_;
  I input_ = nullptr, pos_ = nullptr, embedTable_ = nullptr, norm_ = nullptr;
  Weight output_;
  std::vector<LayerParams> layers_;
  std::vector<int64_t> cacheParamNumbers_;
  I cos_ = nullptr, sin_ = nullptr, mask_ = nullptr;

 public:
  // Data parallelism: every device runs this module on its share of the batch (no
  // collective at inference). Kept below the graph code: the traces record source lines.
  void setDataParallel() { b_.setPartitions(c_.dp); }

  // A parameter's sharding= as JAX's SPMD-partitioned dumps have it (the
  // iota tile assignment over the partitions): --tp splits the
  // column-parallel weights (wq, wk, wv, w1, w3: columns) and their scales,
  // the row-parallel ones (wo, w2: rows) and the KV caches (heads); --dp the
  // batch of the inputs and caches; the rest is replicated. None on one device.
  std::string sharding(const Dims& dims, const std::string& name) const {
    const int64_t n = std::max(c_.tp, c_.dp);
    if (n == 1) return "";
    auto tiled = [&](size_t dim) {
      std::vector<int64_t> tiles(dims.size(), 1);
      tiles[dim] = n;
      return fmt::format("{{devices=[{}]<=[{}]}}", fmt::join(tiles, ","), n);
    };
    auto endsWith = [&](const char* w) {
      const std::string s = std::string("['") + w + "']";
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    const bool cache = name.rfind("cache[", 0) == 0;
    if (c_.dp > 1)
      return !dims.empty() && (cache || name == "x" || name == "tokens") ? tiled(0)
                                                                         : "{replicated}";
    if (cache) return tiled(2);
    for (const char* w : {"wq", "wk", "wv", "w1", "w3"})
      if (endsWith(w)) return tiled(1);
    for (const char* w : {"wq_scale", "wk_scale", "wv_scale", "w1_scale", "w3_scale"})
      if (endsWith(w)) return tiled(0);
    for (const char* w : {"wo", "w2"})
      if (endsWith(w)) return tiled(0);
    return "{replicated}";
  }
};

}  // namespace

LlamaTrace buildLlama(const LlamaConfig& config, const std::string& sourceFile) {
  LlamaGraph graph(config, sourceFile);
  graph.setDataParallel();
  return graph.build();
}

}  // namespace tpusim::traces
