#include "traces/tracegen/LlamaTrainGraph.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "traces/tracegen/JaxHloBuilder.h"

// As in LlamaGraph.cpp: one builder call per statement where numbering would
// otherwise depend on the order C++ evaluates arguments in.
namespace tpusim::traces {

namespace {

using hlo::ComparisonDirection;
using hlo::DotDimensionNumbers;
using hlo::HloOpcode;
using I = HloInstruction*;
using Dims = std::vector<int64_t>;
using Reducer = JaxHloBuilder::Reducer;

constexpr PrimitiveType F32 = PrimitiveType::F32;
constexpr PrimitiveType S32 = PrimitiveType::S32;

// One trainable array: its path ("['layers'][0]['wq']"), the f32 master
// parameter, the compute-type copy the forward pass uses, its gradient and
// the optimizer's moments.
struct Param {
  std::string path;
  Dims dims;
  I master = nullptr, compute = nullptr, grad = nullptr, mu = nullptr, nu = nullptr;
};

// What RMSNorm's backward needs from its forward.
struct NormSaved {
  I xf = nullptr;      // the input in f32
  I inv = nullptr;     // rsqrt(mean(x^2) + eps), f32[rows]
  I normed = nullptr;  // x * inv in the compute type, before the weight
};

// The activations a layer's backward reads (autodiff keeps them alive).
struct LayerSaved {
  I xIn = nullptr, xMid = nullptr;
  NormSaved n1, n2;
  I h1 = nullptr, h2 = nullptr;                // the normed inputs of attention and FFN
  I qt = nullptr, kt = nullptr, vt = nullptr;  // [B, H, S, hd], after RoPE
  I probs = nullptr, probsC = nullptr;         // softmax f32 and in the compute type
  I attnFlat = nullptr;                        // attention output before wo, [B, S, D]
  I gate = nullptr, up = nullptr, sig = nullptr, silu = nullptr, hidden = nullptr;
};

struct LayerParams {
  Param *attentionNorm, *ffnNorm, *w1, *w2, *w3, *wk, *wo, *wq, *wv;
};

class LlamaTrainGraph {
 public:
  LlamaTrainGraph(const LlamaConfig& c, const std::string& sourceFile, TrainOutputs outputs)
      : c_(c),
        outputs_(outputs),
        b_(outputs == TrainOutputs::Step ? c.functionName() : "loss_and_grad", sourceFile),
        ct_(c.weights == WeightType::F32 ? F32 : PrimitiveType::BF16),
        B_(c.localBatch()),
        S_(c.seq),
        D_(c.dModel),
        H_(c.nHeads),
        hd_(c.headDim()),
        V_(c.vocab) {}

  LlamaTrace build() {
    declareParameters();
    I loss;
    std::vector<LayerSaved> saved(static_cast<size_t>(c_.nLayers));
    I hFinal, tokenIds;
    NormSaved finalNorm;
    I logits;
    {
      JaxHloBuilder::Scope fwd(b_, "jvp(loss_fn)");
      castParameters();
      I x;
      {
        JaxHloBuilder::Scope scope(b_, "embed");
        tokenIds = wrapTokenIds();
        x = embed(tokenIds);
      }
      if (c_.posEmbedding == PosEmbedding::Rope) {
        JaxHloBuilder::Scope scope(b_, "rope");
        ropeTables();
      }
      {
        JaxHloBuilder::Scope scope(b_, "mask");
        I rows = b_.iota(S32, {S_, S_}, 0);
        I cols = b_.iota(S32, {S_, S_}, 1);
        mask_ = b_.compare(rows, cols, ComparisonDirection::GE);
      }
      for (int64_t l = 0; l < c_.nLayers; ++l) {
        JaxHloBuilder::Scope scope(b_, fmt::format("layers_{}", l));
        x = layerForward(x, layers_[l], saved[l]);
      }
      {
        JaxHloBuilder::Scope scope(b_, "norm");
        hFinal = rmsNormForward(x, norm_->compute, finalNorm);
      }
      {
        JaxHloBuilder::Scope scope(b_, "output");
        DotDimensionNumbers dn;
        dn.lhsContracting = {2};
        dn.rhsContracting = {0};
        logits = b_.dot(hFinal, output_->compute, dn, F32);
      }
      JaxHloBuilder::Scope scope(b_, "loss");
      loss = crossEntropy(logits);
    }
    {
      JaxHloBuilder::Scope bwd(b_, "transpose(jvp(loss_fn))");
      I dx;
      {
        JaxHloBuilder::Scope scope(b_, "loss");
        dx = crossEntropyBackward();
      }
      {
        JaxHloBuilder::Scope scope(b_, "output");
        dx = projectBackward(hFinal, *output_, dx);
      }
      {
        JaxHloBuilder::Scope scope(b_, "norm");
        dx = rmsNormBackward(dx, *norm_, finalNorm);
      }
      for (int64_t l = c_.nLayers - 1; l >= 0; --l) {
        JaxHloBuilder::Scope scope(b_, fmt::format("layers_{}", l));
        dx = layerBackward(dx, layers_[l], saved[l]);
      }
      JaxHloBuilder::Scope scope(b_, "embed");
      embedBackward(dx, tokenIds);
    }
    if (c_.dp > 1) loss = syncGradients(loss);
    std::vector<I> outputs;
    std::vector<std::pair<int64_t, int64_t>> aliases;
    if (outputs_ == TrainOutputs::Gradients) {
      outputs.push_back(loss);
      trace_.outputNames.push_back("loss");
      for (Param& p : params_) {
        outputs.push_back(p.grad);
        trace_.outputNames.push_back("grad" + p.path);
      }
    } else {
      JaxHloBuilder::Scope scope(b_, "adamw");
      adamw();
      auto output = [&](I value, I input, const std::string& name) {
        outputs.push_back(value);
        trace_.outputNames.push_back(name);
        aliases.emplace_back(static_cast<int64_t>(outputs.size()) - 1,
                             input->attrs().parameterNumber);
      };
      output(newStep_, step_, "step");
      for (Param& p : params_) output(newMaster_.at(&p), p.master, "params" + p.path);
      output(newCount_, count_, "opt_state.count");
      for (Param& p : params_) output(newMu_.at(&p), p.mu, "opt_state.mu" + p.path);
      for (Param& p : params_) output(newNu_.at(&p), p.nu, "opt_state.nu" + p.path);
      outputs.push_back(loss);
      trace_.outputNames.push_back("loss");
    }
    trace_.module = b_.finish(outputs, aliases);
    return std::move(trace_);
  }

 private:
  I param(PrimitiveType t, Dims dims, const std::string& name) {
    trace_.parameterNames.push_back(name);
    return b_.parameter(t, dims, name, sharding(dims, name));
  }

  // The parameter tree in jax.tree_util order: dict keys sorted, list items in order.
  void declareTree() {
    auto add = [&](std::string path, Dims dims) {
      params_.push_back(Param{std::move(path), std::move(dims)});
    };
    add("['embed']", {V_, D_});
    for (int64_t l = 0; l < c_.nLayers; ++l) {
      auto path = [&](const char* w) { return fmt::format("['layers'][{}]['{}']", l, w); };
      add(path("attention_norm"), {D_});
      add(path("ffn_norm"), {D_});
      add(path("w1"), {D_, c_.dFf});
      add(path("w2"), {c_.dFf, D_});
      add(path("w3"), {D_, c_.dFf});
      add(path("wk"), {D_, D_});
      add(path("wo"), {D_, D_});
      add(path("wq"), {D_, D_});
      add(path("wv"), {D_, D_});
    }
    add("['norm']", {D_});
    add("['output']", {D_, V_});
    if (c_.posEmbedding == PosEmbedding::Learned) add("['pos_embed']", {S_, D_});
    // Pointers into params_ only after it stops growing.
    size_t i = 0;
    embed_ = &params_[i++];
    layers_.resize(static_cast<size_t>(c_.nLayers));
    for (LayerParams& lp : layers_) {
      lp.attentionNorm = &params_[i++];
      lp.ffnNorm = &params_[i++];
      lp.w1 = &params_[i++];
      lp.w2 = &params_[i++];
      lp.w3 = &params_[i++];
      lp.wk = &params_[i++];
      lp.wo = &params_[i++];
      lp.wq = &params_[i++];
      lp.wv = &params_[i++];
    }
    norm_ = &params_[i++];
    output_ = &params_[i++];
    if (c_.posEmbedding == PosEmbedding::Learned) posEmbed_ = &params_[i++];
  }

  void declareParameters() {
    declareTree();
    const bool step = outputs_ == TrainOutputs::Step;
    if (step) step_ = param(S32, {}, "step");
    for (Param& p : params_) p.master = param(F32, p.dims, "params" + p.path);
    if (step) {
      count_ = param(S32, {}, "opt_state.count");
      for (Param& p : params_) p.mu = param(F32, p.dims, "opt_state.mu" + p.path);
      for (Param& p : params_) p.nu = param(F32, p.dims, "opt_state.nu" + p.path);
    }
    tokens_ = param(S32, {B_, S_}, "tokens");
  }

  // Mixed precision converts each master weight once, where the model reads it.
  void castParameters() {
    for (Param& p : params_) p.compute = b_.convert(p.master, ct_);
  }

  // ---- forward -----------------------------------------------------------

  I wrapTokenIds() {
    const Dims idDims{B_, S_};
    I negative = b_.compare(tokens_, b_.splat(S32, 0, idDims), ComparisonDirection::LT);
    I wrapped = b_.binary(HloOpcode::Add, tokens_, b_.splat(S32, double(V_), idDims));
    return b_.select(negative, wrapped, tokens_);
  }

  I oneHotIds(I ids) {
    const Dims hot{B_, S_, V_};
    I classes = b_.iota(S32, hot, 2);
    I match = b_.compare(b_.broadcast(ids, hot, {0, 1}), classes, ComparisonDirection::EQ);
    return b_.convert(match, ct_);
  }

  I embed(I ids) {
    I x;
    if (c_.embedding == Embedding::Gather) {
      x = b_.takeRows(embed_->compute, b_.reshape(ids, {B_, S_, 1}));
    } else {
      DotDimensionNumbers dn;
      dn.lhsContracting = {2};
      dn.rhsContracting = {0};
      x = b_.dot(oneHotIds(ids), embed_->compute, dn, ct_);
    }
    if (posEmbed_) {
      I pos = b_.broadcast(posEmbed_->compute, {B_, S_, D_}, {1, 2});
      x = b_.binary(HloOpcode::Add, x, pos);
    }
    return x;
  }

  void ropeTables() {
    const int64_t half = hd_ / 2;
    I i = b_.iota(F32, {half}, 0);
    I exponent = b_.binary(HloOpcode::Multiply, i,
                           b_.splat(F32, -2.0 * std::log(c_.ropeTheta) / double(hd_), {half}));
    I invFreq = b_.unary(HloOpcode::Exp, exponent);
    I positions = b_.iota(F32, {S_}, 0);
    I rows = b_.broadcast(positions, {S_, half}, {0});
    I cols = b_.broadcast(invFreq, {S_, half}, {1});
    I angles = b_.binary(HloOpcode::Multiply, rows, cols);
    cos_ = b_.unary(HloOpcode::Cosine, angles);
    sin_ = b_.unary(HloOpcode::Sine, angles);
  }

  // Rotates the halves of the last dimension of x[B, S, H, hd] by +angle
  // (forward) or -angle (its transpose, for the backward pass).
  I rotate(I x, bool inverse) {
    const int64_t half = hd_ / 2, last = 3;
    I xf = b_.convert(x, F32);
    I x1 = b_.sliceDim(xf, last, 0, half);
    I x2 = b_.sliceDim(xf, last, half, hd_);
    const Dims dims = x1->shape().dims;
    I cos = b_.broadcast(cos_, dims, {1, last});
    I sin = b_.broadcast(sin_, dims, {1, last});
    I x1cos = b_.binary(HloOpcode::Multiply, x1, cos);
    I x2sin = b_.binary(HloOpcode::Multiply, x2, sin);
    I r1 = b_.binary(inverse ? HloOpcode::Add : HloOpcode::Subtract, x1cos, x2sin);
    I x2cos = b_.binary(HloOpcode::Multiply, x2, cos);
    I x1sin = b_.binary(HloOpcode::Multiply, x1, sin);
    I r2 = inverse ? b_.binary(HloOpcode::Subtract, x2cos, x1sin)
                   : b_.binary(HloOpcode::Add, x2cos, x1sin);
    return b_.convert(b_.concatenate({r1, r2}, last), ct_);
  }

  I rmsNormForward(I x, I weight, NormSaved& s) {
    const Dims dims = x->shape().dims;
    const Dims rows{B_, S_};
    s.xf = b_.convert(x, F32);
    I sum = b_.reduce(b_.binary(HloOpcode::Multiply, s.xf, s.xf), {2}, Reducer::Sum);
    I mean = b_.binary(HloOpcode::Divide, sum, b_.splat(F32, double(D_), rows));
    s.inv = b_.unary(HloOpcode::Rsqrt,
                     b_.binary(HloOpcode::Add, mean, b_.splat(F32, c_.normEps, rows)));
    I normed = b_.binary(HloOpcode::Multiply, s.xf, b_.broadcast(s.inv, dims, {0, 1}));
    s.normed = b_.convert(normed, ct_);
    return b_.binary(HloOpcode::Multiply, s.normed, b_.broadcast(weight, dims, {2}));
  }

  // x[B, S, K] @ W[K, N] in the compute type.
  I project(I x, const Param& w) {
    DotDimensionNumbers dn;
    dn.lhsContracting = {2};
    dn.rhsContracting = {0};
    return b_.dot(x, w.compute, dn, ct_);
  }

  I layerForward(I x, const LayerParams& p, LayerSaved& s) {
    s.xIn = x;
    {
      JaxHloBuilder::Scope scope(b_, "attention_norm");
      s.h1 = rmsNormForward(x, p.attentionNorm->compute, s.n1);
    }
    {
      JaxHloBuilder::Scope scope(b_, "attention");
      x = b_.binary(HloOpcode::Add, x, attentionForward(s.h1, p, s));
    }
    s.xMid = x;
    {
      JaxHloBuilder::Scope scope(b_, "ffn_norm");
      s.h2 = rmsNormForward(x, p.ffnNorm->compute, s.n2);
    }
    JaxHloBuilder::Scope scope(b_, "feed_forward");
    s.gate = project(s.h2, *p.w1);
    s.up = project(s.h2, *p.w3);
    s.sig = b_.unary(HloOpcode::Logistic, s.gate);
    s.silu = b_.binary(HloOpcode::Multiply, s.gate, s.sig);
    s.hidden = b_.binary(HloOpcode::Multiply, s.silu, s.up);
    return b_.binary(HloOpcode::Add, x, project(s.hidden, *p.w2));
  }

  I heads(I x) {  // [B, S, D] -> [B, H, S, hd]
    return b_.transpose(b_.reshape(x, {B_, S_, H_, hd_}), {0, 2, 1, 3});
  }

  I attentionForward(I h, const LayerParams& p, LayerSaved& s) {
    I q = b_.reshape(project(h, *p.wq), {B_, S_, H_, hd_});
    I k = b_.reshape(project(h, *p.wk), {B_, S_, H_, hd_});
    I v = project(h, *p.wv);
    if (cos_) {
      q = rotate(q, false);
      k = rotate(k, false);
    }
    s.qt = b_.transpose(q, {0, 2, 1, 3});
    s.kt = b_.transpose(k, {0, 2, 1, 3});
    s.vt = heads(v);
    DotDimensionNumbers qk;
    qk.lhsBatch = qk.rhsBatch = {0, 1};
    qk.lhsContracting = {3};
    qk.rhsContracting = {3};
    I scores = b_.dot(s.qt, s.kt, qk, F32);  // [B, H, S, S]
    const Dims sd = scores->shape().dims;
    scores = b_.binary(HloOpcode::Multiply, scores, b_.splat(F32, scale(), sd));
    I visible = b_.broadcast(mask_, sd, {2, 3});
    scores =
        b_.select(visible, scores, b_.splat(F32, double(std::numeric_limits<float>::lowest()), sd));
    const Dims rows{B_, H_, S_};
    I max = b_.reduce(scores, {3}, Reducer::Max);
    I e = b_.unary(HloOpcode::Exp,
                   b_.binary(HloOpcode::Subtract, scores, b_.broadcast(max, sd, {0, 1, 2})));
    I sum = b_.reduce(e, {3}, Reducer::Sum);
    s.probs = b_.binary(HloOpcode::Divide, e, b_.broadcast(sum, sd, {0, 1, 2}));
    s.probsC = b_.convert(s.probs, ct_);
    DotDimensionNumbers pv;
    pv.lhsBatch = pv.rhsBatch = {0, 1};
    pv.lhsContracting = {3};
    pv.rhsContracting = {2};
    I o = b_.dot(s.probsC, s.vt, pv, ct_);  // [B, H, S, hd]
    s.attnFlat = b_.reshape(b_.transpose(o, {0, 2, 1, 3}), {B_, S_, D_});
    return project(s.attnFlat, *p.wo);
  }

  double scale() const { return 1.0 / std::sqrt(double(hd_)); }

  // Mean cross-entropy of positions 0..S-2 predicting tokens 1..S-1; keeps
  // what the backward needs.
  I crossEntropy(I logits) {
    const int64_t n = S_ - 1;
    const Dims ld{B_, n, V_};
    I ls = b_.sliceDim(logits, 1, 0, n);
    I labels = b_.sliceDim(tokens_, 1, 1, S_);
    I max = b_.reduce(ls, {2}, Reducer::Max);
    I shifted = b_.binary(HloOpcode::Subtract, ls, b_.broadcast(max, ld, {0, 1}));
    I e = b_.unary(HloOpcode::Exp, shifted);
    sumExp_ = b_.reduce(e, {2}, Reducer::Sum);
    I lse = b_.unary(HloOpcode::Log, sumExp_);
    I logp = b_.binary(HloOpcode::Subtract, shifted, b_.broadcast(lse, ld, {0, 1}));
    I classes = b_.iota(S32, ld, 2);
    I match = b_.compare(b_.broadcast(labels, ld, {0, 1}), classes, ComparisonDirection::EQ);
    labelsHot_ = b_.convert(match, F32);
    expShifted_ = e;
    I picked = b_.reduce(b_.binary(HloOpcode::Multiply, labelsHot_, logp), {0, 1, 2}, Reducer::Sum);
    return b_.binary(HloOpcode::Multiply, picked, b_.constant(F32, -1.0 / double(Bg_ * n)));
  }

  // ---- backward ----------------------------------------------------------

  // d(loss)/d(logits): (softmax - one_hot) / N at positions 0..S-2, zero at
  // the last (the transpose of the slice is a pad), in the compute type.
  I crossEntropyBackward() {
    const int64_t n = S_ - 1;
    const Dims ld{B_, n, V_};
    I probs = b_.binary(HloOpcode::Divide, expShifted_, b_.broadcast(sumExp_, ld, {0, 1}));
    I diff = b_.binary(HloOpcode::Subtract, probs, labelsHot_);
    I dls = b_.binary(HloOpcode::Multiply, diff, b_.splat(F32, 1.0 / double(Bg_ * n), ld));
    return b_.convert(b_.padHigh(dls, 1, 1), ct_);
  }

  void addGrad(Param& p, I g) {
    g = b_.convert(g, F32);
    p.grad = p.grad ? b_.binary(HloOpcode::Add, p.grad, g) : g;
  }

  // y = x[B, S, K] @ W[K, N]: returns dx and adds dW = x^T dy to W's gradient.
  I projectBackward(I x, Param& w, I dy) {
    DotDimensionNumbers dxDims;
    dxDims.lhsContracting = {2};
    dxDims.rhsContracting = {1};
    I dx = b_.dot(dy, w.compute, dxDims, ct_);
    DotDimensionNumbers dwDims;
    dwDims.lhsContracting = {0, 1};
    dwDims.rhsContracting = {0, 1};
    addGrad(w, b_.dot(x, dy, dwDims, ct_));
    return dx;
  }

  // y = normed * w with normed = x * rsqrt(mean(x^2) + eps):
  //   dw = sum_rows(dy * normed)
  //   dx = inv * dn - x * inv^3 * mean(dn * x),  dn = dy * w   (in f32)
  I rmsNormBackward(I dy, Param& w, const NormSaved& s) {
    const Dims dims{B_, S_, D_};
    const Dims rows{B_, S_};
    I dwRows = b_.convert(b_.binary(HloOpcode::Multiply, dy, s.normed), F32);
    addGrad(w, b_.reduce(dwRows, {0, 1}, Reducer::Sum));
    I dn = b_.convert(b_.binary(HloOpcode::Multiply, dy, b_.broadcast(w.compute, dims, {2})), F32);
    I direct = b_.binary(HloOpcode::Multiply, dn, b_.broadcast(s.inv, dims, {0, 1}));
    I dot = b_.reduce(b_.binary(HloOpcode::Multiply, dn, s.xf), {2}, Reducer::Sum);
    I inv2 = b_.binary(HloOpcode::Multiply, s.inv, s.inv);
    I inv3 = b_.binary(HloOpcode::Multiply, inv2, s.inv);
    I dotInv3 = b_.binary(HloOpcode::Multiply, dot, inv3);
    I coef = b_.binary(HloOpcode::Multiply, dotInv3, b_.splat(F32, 1.0 / double(D_), rows));
    I through = b_.binary(HloOpcode::Multiply, s.xf, b_.broadcast(coef, dims, {0, 1}));
    return b_.convert(b_.binary(HloOpcode::Subtract, direct, through), ct_);
  }

  I layerBackward(I dx, const LayerParams& p, const LayerSaved& s) {
    I dh;
    {
      JaxHloBuilder::Scope scope(b_, "feed_forward");
      dh = feedForwardBackward(dx, p, s);
    }
    {
      JaxHloBuilder::Scope scope(b_, "ffn_norm");
      dx = b_.binary(HloOpcode::Add, dx, rmsNormBackward(dh, *p.ffnNorm, s.n2));
    }
    {
      JaxHloBuilder::Scope scope(b_, "attention");
      dh = attentionBackward(dx, p, s);
    }
    JaxHloBuilder::Scope scope(b_, "attention_norm");
    return b_.binary(HloOpcode::Add, dx, rmsNormBackward(dh, *p.attentionNorm, s.n1));
  }

  // hidden = silu(gate) * up, silu(g) = g * sigmoid(g):
  //   dgate = dhidden * up * sigmoid(g) * (1 + g * (1 - sigmoid(g)))
  I feedForwardBackward(I dy, const LayerParams& p, const LayerSaved& s) {
    I dHidden = projectBackward(s.hidden, *p.w2, dy);
    const Dims fd = s.gate->shape().dims;
    I dSilu = b_.binary(HloOpcode::Multiply, dHidden, s.up);
    I dUp = b_.binary(HloOpcode::Multiply, dHidden, s.silu);
    I one = b_.splat(ct_, 1.0, fd);
    I oneMinus = b_.binary(HloOpcode::Subtract, one, s.sig);
    I gateOneMinus = b_.binary(HloOpcode::Multiply, s.gate, oneMinus);
    I inner = b_.binary(HloOpcode::Add, b_.splat(ct_, 1.0, fd), gateOneMinus);
    I dGate = b_.binary(HloOpcode::Multiply, dSilu, b_.binary(HloOpcode::Multiply, s.sig, inner));
    I dm1 = projectBackward(s.h2, *p.w1, dGate);
    I dm3 = projectBackward(s.h2, *p.w3, dUp);
    return b_.binary(HloOpcode::Add, dm1, dm3);
  }

  // P = softmax(mask(scale * q k^T)), o = P v:
  //   dv = P^T do, dP = do v^T, dS = P * (dP - rowsum(dP * P)) (zero where masked),
  //   dq = scale * dS k, dk = scale * dS^T q
  I attentionBackward(I dy, const LayerParams& p, const LayerSaved& s) {
    I dFlat = projectBackward(s.attnFlat, *p.wo, dy);
    I dOt = heads(dFlat);  // [B, H, S, hd]
    DotDimensionNumbers dpDims;
    dpDims.lhsBatch = dpDims.rhsBatch = {0, 1};
    dpDims.lhsContracting = {3};
    dpDims.rhsContracting = {3};
    I dP = b_.convert(b_.dot(dOt, s.vt, dpDims, ct_), F32);  // [B, H, S, S]
    DotDimensionNumbers tDims;                               // contract the query positions
    tDims.lhsBatch = tDims.rhsBatch = {0, 1};
    tDims.lhsContracting = {2};
    tDims.rhsContracting = {2};
    I dvt = b_.dot(s.probsC, dOt, tDims, ct_);  // [B, H, S, hd]
    const Dims sd = dP->shape().dims;
    I rowsum = b_.reduce(b_.binary(HloOpcode::Multiply, dP, s.probs), {3}, Reducer::Sum);
    I centered = b_.binary(HloOpcode::Subtract, dP, b_.broadcast(rowsum, sd, {0, 1, 2}));
    I dS = b_.binary(HloOpcode::Multiply, s.probs, centered);
    I visible = b_.broadcast(mask_, sd, {2, 3});
    dS = b_.select(visible, dS, b_.splat(F32, 0.0, sd));
    dS = b_.binary(HloOpcode::Multiply, dS, b_.splat(F32, scale(), sd));
    I dSc = b_.convert(dS, ct_);
    DotDimensionNumbers dqDims;
    dqDims.lhsBatch = dqDims.rhsBatch = {0, 1};
    dqDims.lhsContracting = {3};
    dqDims.rhsContracting = {2};
    I dqt = b_.dot(dSc, s.kt, dqDims, ct_);
    I dkt = b_.dot(dSc, s.qt, tDims, ct_);
    I dq = b_.transpose(dqt, {0, 2, 1, 3});  // [B, S, H, hd]
    I dk = b_.transpose(dkt, {0, 2, 1, 3});
    I dv = b_.transpose(dvt, {0, 2, 1, 3});
    if (cos_) {
      dq = rotate(dq, true);
      dk = rotate(dk, true);
    }
    I dh = projectBackward(s.h1, *p.wq, b_.reshape(dq, {B_, S_, D_}));
    I dhk = projectBackward(s.h1, *p.wk, b_.reshape(dk, {B_, S_, D_}));
    I dhv = projectBackward(s.h1, *p.wv, b_.reshape(dv, {B_, S_, D_}));
    dh = b_.binary(HloOpcode::Add, dh, dhk);
    return b_.binary(HloOpcode::Add, dh, dhv);
  }

  // The token table's gradient: each position's row added at its token id
  // (scatter-add, the transpose of the gather) or one_hot^T @ dx; the learned
  // position table's: the sum over the batch.
  void embedBackward(I dx, I ids) {
    I dxf = b_.convert(dx, F32);
    if (c_.embedding == Embedding::Gather) {
      addGrad(*embed_, b_.scatterAddRows({V_, D_}, b_.reshape(ids, {B_, S_, 1}), dxf));
    } else {
      DotDimensionNumbers dn;
      dn.lhsContracting = {0, 1};
      dn.rhsContracting = {0, 1};
      addGrad(*embed_, b_.dot(oneHotIds(ids), dx, dn, ct_));
    }
    if (posEmbed_) addGrad(*posEmbed_, b_.reduce(dxf, {0}, Reducer::Sum));
  }

  // ---- optimizer ---------------------------------------------------------

  // optax.adamw: scale_by_adam (moments, bias correction with the
  // incremented count), add_decayed_weights, scale_by_learning_rate; then
  // optax.apply_updates and the TrainState's step + 1.
  void adamw() {
    I one = b_.constant(S32, 1.0);
    newStep_ = b_.binary(HloOpcode::Add, step_, one);
    I one2 = b_.constant(S32, 1.0);
    newCount_ = b_.binary(HloOpcode::Add, count_, one2);
    I countF = b_.convert(newCount_, F32);
    auto correction = [&](double beta) {  // 1 - beta^count
      I pw = b_.binary(HloOpcode::Power, b_.constant(F32, beta), countF);
      return b_.binary(HloOpcode::Subtract, b_.constant(F32, 1.0), pw);
    };
    I bc1 = correction(c_.adamB1);
    I bc2 = correction(c_.adamB2);
    for (Param& p : params_) {
      const Dims& d = p.dims;
      I g = p.grad;
      if (!g)
        throw std::logic_error("tpu-tracegen internal error: no gradient for params" + p.path);
      I mu = movingAverage(p.mu, g, c_.adamB1, d);
      I nu = movingAverage(p.nu, b_.binary(HloOpcode::Multiply, g, g), c_.adamB2, d);
      I muHat = b_.binary(HloOpcode::Divide, mu, b_.broadcast(bc1, d, {}));
      I nuHat = b_.binary(HloOpcode::Divide, nu, b_.broadcast(bc2, d, {}));
      I root = b_.unary(HloOpcode::Sqrt, nuHat);
      I denom = b_.binary(HloOpcode::Add, root, b_.splat(F32, c_.adamEps, d));
      I update = b_.binary(HloOpcode::Divide, muHat, denom);
      I decay = b_.binary(HloOpcode::Multiply, b_.splat(F32, c_.weightDecay, d), p.master);
      update = b_.binary(HloOpcode::Add, update, decay);
      I scaled = b_.binary(HloOpcode::Multiply, b_.splat(F32, -c_.learningRate, d), update);
      newMaster_[&p] = b_.binary(HloOpcode::Add, p.master, scaled);
      newMu_[&p] = mu;
      newNu_[&p] = nu;
    }
  }

  // optax's update_moment: (1 - decay) * value + decay * moment.
  I movingAverage(I moment, I value, double decay, const Dims& d) {
    I fresh = b_.binary(HloOpcode::Multiply, b_.splat(F32, 1 - decay, d), value);
    I kept = b_.binary(HloOpcode::Multiply, b_.splat(F32, decay, d), moment);
    return b_.binary(HloOpcode::Add, fresh, kept);
  }

  // --dp: each device's loss and gradients cover its share of the batch, divided by the whole
  // step's token count (Bg_), so their sums over the devices are the step's. Returns the
  // summed loss. (Below the single-device graph code: the traces record source lines.)
  I syncGradients(I loss) {
    JaxHloBuilder::Scope scope(b_, "grad_sync");
    for (Param& p : params_)
      if (p.grad) p.grad = b_.psum(p.grad, c_.dp, "dp");
    return b_.psum(loss, c_.dp, "dp");
  }

  // A parameter's sharding= as JAX's SPMD-partitioned dumps have it: with
  // --dp the tokens' batch is split over the devices (the iota tile
  // assignment), the parameters and optimizer state are replicated.
  std::string sharding(const Dims& dims, const std::string& name) const {
    if (c_.dp == 1) return "";
    if (name != "tokens" || dims.empty()) return "{replicated}";
    std::vector<int64_t> tiles(dims.size(), 1);
    tiles[0] = c_.dp;
    return fmt::format("{{devices=[{}]<=[{}]}}", fmt::join(tiles, ","), c_.dp);
  }

  const LlamaConfig& c_;
  TrainOutputs outputs_;
  JaxHloBuilder b_;
  PrimitiveType ct_;
  int64_t B_, S_, D_, H_, hd_, V_;
  const int64_t Bg_ = c_.batch;  // the whole step's batch (B_ is this device's share)
  LlamaTrace trace_;
  std::vector<Param> params_;
  Param *embed_ = nullptr, *norm_ = nullptr, *output_ = nullptr, *posEmbed_ = nullptr;
  std::vector<LayerParams> layers_;
  I step_ = nullptr, count_ = nullptr, tokens_ = nullptr;
  I cos_ = nullptr, sin_ = nullptr, mask_ = nullptr;
  I sumExp_ = nullptr, expShifted_ = nullptr, labelsHot_ = nullptr;
  I newStep_ = nullptr, newCount_ = nullptr;
  std::map<const Param*, I> newMaster_, newMu_, newNu_;
};

}  // namespace

LlamaTrace buildLlamaTrain(const LlamaConfig& config, const std::string& sourceFile,
                           TrainOutputs outputs) {
  if (config.phase != Phase::Train)
    throw std::logic_error("tpu-tracegen internal error: buildLlamaTrain needs --phase=train");
  return LlamaTrainGraph(config, sourceFile, outputs).build();
}

}  // namespace tpusim::traces
