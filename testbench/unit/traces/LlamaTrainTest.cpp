// The generated train step computes real training, checked through the
// reference evaluator after a print/parse round trip:
// - its loss is the cross-entropy of the plain C++ decoder's logits;
// - every gradient of the backward pass matches a central finite difference
//   of the loss along a random direction (per parameter, so a wrong term
//   names its parameter);
// - the AdamW update follows optax's formulas from those gradients, the state
//   is donated (aliased) and step/count advance;
// - a few steps on one batch lower the loss;
// - mixed precision (bf16 compute) gives gradients close to f32's.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cmath>

#include "LlamaReference.h"
#include "TraceTestData.h"
#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloPrinter.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/hlo/eval/Evaluator.h"
#include "traces/tracegen/LlamaTrainGraph.h"

using namespace tpusim;
using namespace tpusim::traces;
using namespace tracetest;
namespace ev = tpusim::hlo::eval;

namespace {

struct Generated {
  std::unique_ptr<hlo::HloModule> module;
  std::vector<std::string> params, outputs;
};

Generated generate(const LlamaConfig& c, TrainOutputs outputs) {
  REQUIRE(validate(c).empty());
  LlamaTrace trace = buildLlamaTrain(c, "traces/tracegen/LlamaTrainGraph.cpp", outputs);
  auto module = roundTrip(*trace.module, "train.hlo");
  REQUIRE(ev::unsupportedInstructions(*module).empty());
  return {std::move(module), trace.parameterNames, trace.outputNames};
}

LlamaConfig microTrain(PosEmbedding pos, Embedding embedding) {
  LlamaConfig c = *presetConfig("micro");
  c.phase = Phase::Train;
  c.batch = 2;
  c.posEmbedding = pos;
  c.embedding = embedding;
  return c;
}

bool isParam(const std::string& name) { return name.rfind("params[", 0) == 0; }

// Master weights as a model initializer would set them: matrices by
// 1/sqrt(fan-in), norm weights near 1, embeddings O(1).
Tensors randomParams(const Generated& g, uint64_t seed) {
  Random rng{seed};
  Tensors w;
  auto params = g.module->entry()->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = g.params[i];
    if (!isParam(name)) continue;
    const hlo::Shape& s = params[i]->shape();
    std::vector<double> values(static_cast<size_t>(s.elementCount()));
    bool norm = name.find("norm']") != std::string::npos;
    bool table = name.find("embed']") != std::string::npos;
    for (double& v : values) {
      double u = rng.uniform();
      v = norm ? 1.0 + 0.25 * u : (s.rank() == 2 && !table) ? u * std::sqrt(3.0 / s.dims[0]) : u;
    }
    w[name] = std::move(values);
  }
  return w;
}

ev::Literal literalOf(const hlo::Shape& s, const std::vector<double>& values) {
  ev::ElemType t = s.type == hlo::PrimitiveType::S32 ? ev::ElemType::S32 : ev::ElemType::F32;
  ev::Literal l = ev::Literal::array(t, s.dims);
  REQUIRE(static_cast<int64_t>(values.size()) == l.numElements());
  for (size_t i = 0; i < values.size(); ++i) l.setDouble(static_cast<int64_t>(i), values[i]);
  return l;
}

// Runs a module whose parameters are named tensors of `w` (every name must be
// there) plus "tokens"; returns the outputs by name.
Tensors run(const Generated& g, const Tensors& w, const std::vector<int64_t>& tokens) {
  std::vector<ev::Literal> args;
  auto params = g.module->entry()->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = g.params[i];
    if (name == "tokens")
      args.push_back(
          literalOf(params[i]->shape(), std::vector<double>(tokens.begin(), tokens.end())));
    else
      args.push_back(literalOf(params[i]->shape(), w.at(name)));
  }
  ev::Literal out = ev::evaluate(*g.module, args);
  REQUIRE(out.isTuple());
  Tensors result;
  for (size_t i = 0; i < g.outputs.size(); ++i) result[g.outputs[i]] = values(out.elements()[i]);
  return result;
}

// Mean cross-entropy of positions 0..S-2 against the next token, from logits [B,S,V].
double referenceLoss(const LlamaConfig& c, const std::vector<double>& logits,
                     const std::vector<int64_t>& tokens) {
  double total = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t t = 0; t + 1 < c.seq; ++t) {
      const double* row = &logits[static_cast<size_t>((b * c.seq + t) * c.vocab)];
      double max = row[0];
      for (int64_t v = 1; v < c.vocab; ++v) max = std::max(max, row[v]);
      double sum = 0;
      for (int64_t v = 0; v < c.vocab; ++v) sum += std::exp(row[v] - max);
      total += std::log(sum) + max - row[tokens[static_cast<size_t>(b * c.seq + t + 1)]];
    }
  return total / double(c.batch * (c.seq - 1));
}

double dotProduct(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

TEST_CASE("the train step's loss is the cross-entropy of the decoder's logits", "[traces][train]") {
  for (Embedding e : {Embedding::Gather, Embedding::OneHot}) {
    LlamaConfig c = microTrain(PosEmbedding::Rope, e);
    Generated g = generate(c, TrainOutputs::Gradients);
    Tensors w = randomParams(g, 11);
    std::vector<int64_t> tokens = randomTokens(c, 5);
    tokens[0] = -1;  // an input only (never a label): wraps to the last row
    double loss = run(g, w, tokens).at("loss").at(0);
    LlamaConfig prefill = c;
    prefill.phase = Phase::Prefill;
    double want = referenceLoss(c, referencePrefill(prefill, w, tokens).out, tokens);
    INFO("embedding " << int(e));
    CHECK(loss == Approx(want).epsilon(1e-4));
  }
}

TEST_CASE("every gradient matches a finite difference of the loss", "[traces][train]") {
  for (auto [pos, emb] : {std::pair{PosEmbedding::Learned, Embedding::Gather},
                          std::pair{PosEmbedding::Rope, Embedding::OneHot}}) {
    LlamaConfig c = microTrain(pos, emb);
    Generated g = generate(c, TrainOutputs::Gradients);
    Tensors w = randomParams(g, 3);
    const std::vector<int64_t> tokens = randomTokens(c, 9);
    Tensors at = run(g, w, tokens);
    Random rng{17};
    int checked = 0;
    for (const auto& [name, p] : w) {
      // The directional derivative along u, against (L(p + hu) - L(p - hu)) / 2h.
      std::vector<double> u(p.size());
      for (double& x : u) x = rng.uniform();
      const double h = 2e-3;
      Tensors plus = w, minus = w;
      for (size_t i = 0; i < p.size(); ++i) {
        plus[name][i] += h * u[i];
        minus[name][i] -= h * u[i];
      }
      double numeric =
          (run(g, plus, tokens).at("loss")[0] - run(g, minus, tokens).at("loss")[0]) / (2 * h);
      double analytic = dotProduct(at.at("grad" + name.substr(6)), u);
      INFO(name << " (pos " << int(pos) << ", embedding " << int(emb) << "): analytic " << analytic
                << " numeric " << numeric);
      CHECK(std::fabs(analytic) > 1e-4);  // the direction sees the parameter at all
      CHECK(analytic == Approx(numeric).epsilon(0.03).margin(2e-4));
      ++checked;
    }
    CHECK(checked == static_cast<int>(3 + 9 * c.nLayers + (pos == PosEmbedding::Learned)));
  }
}

TEST_CASE("the AdamW update follows optax from the gradients, and the state is donated",
          "[traces][train]") {
  LlamaConfig c = microTrain(PosEmbedding::Learned, Embedding::Gather);
  Generated grads = generate(c, TrainOutputs::Gradients);
  Generated step = generate(c, TrainOutputs::Step);
  // Every state output is aliased to its input; the loss and the tokens are not.
  auto alias = step.module->headerAttribute("input_output_alias");
  REQUIRE(alias);
  for (size_t i = 0; i + 1 < step.outputs.size(); ++i) {
    INFO(step.outputs[i]);
    CHECK(step.outputs[i] == step.params[i]);
    CHECK(alias->find(fmt::format("{{{}}}: ({}, {{}}, may-alias)", i, i)) != std::string::npos);
  }
  CHECK(step.outputs.back() == "loss");
  CHECK(step.params.back() == "tokens");

  Tensors state = randomParams(step, 21);
  const std::vector<int64_t> tokens = randomTokens(c, 4);
  Random rng{8};
  const int64_t count = 4;  // a state a few steps in: moments non-zero
  state["step"] = {double(count)};
  state["opt_state.count"] = {double(count)};
  for (const std::string& name : step.params) {
    if (!isParam(name)) continue;
    auto& mu = state["opt_state.mu" + name.substr(6)];
    auto& nu = state["opt_state.nu" + name.substr(6)];
    for (size_t i = 0; i < state[name].size(); ++i) {
      mu.push_back(1e-3 * rng.uniform());
      nu.push_back(1e-6 * (rng.uniform() + 1.0));
    }
  }
  Tensors out = run(step, state, tokens);
  Tensors g = run(grads, state, tokens);
  CHECK(out.at("loss")[0] == g.at("loss")[0]);
  CHECK(out.at("step")[0] == count + 1);
  CHECK(out.at("opt_state.count")[0] == count + 1);
  const double b1 = c.adamB1, b2 = c.adamB2, t = double(count + 1);
  double worst = 0;
  for (const std::string& name : step.params) {
    if (!isParam(name)) continue;
    const std::string leaf = name.substr(6);
    const auto& p = state.at(name);
    const auto& gr = g.at("grad" + leaf);
    for (size_t i = 0; i < p.size(); ++i) {
      double mu = (1 - b1) * gr[i] + b1 * state.at("opt_state.mu" + leaf)[i];
      double nu = (1 - b2) * gr[i] * gr[i] + b2 * state.at("opt_state.nu" + leaf)[i];
      double update =
          (mu / (1 - std::pow(b1, t))) / (std::sqrt(nu / (1 - std::pow(b2, t))) + c.adamEps);
      double want = p[i] - c.learningRate * (update + c.weightDecay * p[i]);
      // f32 against f64: relative to the value (the parameter moves by ~lr).
      worst = std::max(worst, std::fabs(out.at(name)[i] - want) / (1e-2 + std::fabs(want)));
      // The moments relative to their terms' sizes (the sum may cancel).
      const double muOld = state.at("opt_state.mu" + leaf)[i],
                   nuOld = state.at("opt_state.nu" + leaf)[i];
      const double muScale = (1 - b1) * std::fabs(gr[i]) + b1 * std::fabs(muOld);
      const double nuScale = (1 - b2) * gr[i] * gr[i] + b2 * nuOld;
      worst = std::max(worst, std::fabs(out.at("opt_state.mu" + leaf)[i] - mu) / muScale);
      worst = std::max(worst, std::fabs(out.at("opt_state.nu" + leaf)[i] - nu) / nuScale);
    }
  }
  CHECK(worst < 1e-5);
}

TEST_CASE("steps fed back lower the loss on one batch", "[traces][train]") {
  LlamaConfig c = microTrain(PosEmbedding::Learned, Embedding::Gather);
  c.learningRate = 1e-2;
  Generated step = generate(c, TrainOutputs::Step);
  Tensors state = randomParams(step, 2);
  state["step"] = {0};
  state["opt_state.count"] = {0};
  for (const std::string& name : step.params)
    if (isParam(name)) {
      state["opt_state.mu" + name.substr(6)].assign(state[name].size(), 0.0);
      state["opt_state.nu" + name.substr(6)].assign(state[name].size(), 0.0);
    }
  const std::vector<int64_t> tokens = randomTokens(c, 6);
  std::vector<double> losses;
  for (int s = 0; s < 4; ++s) {
    Tensors out = run(step, state, tokens);
    losses.push_back(out.at("loss")[0]);
    for (auto& [name, value] : out)  // the outputs are the next step's inputs
      if (name != "loss") state[name] = value;
  }
  INFO(losses[0] << " " << losses[1] << " " << losses[2] << " " << losses[3]);
  for (size_t s = 1; s < losses.size(); ++s) CHECK(losses[s] < losses[s - 1]);
  CHECK(state.at("step")[0] == 4);
}

TEST_CASE("mixed precision gradients stay close to f32's", "[traces][train]") {
  LlamaConfig f32 = microTrain(PosEmbedding::Learned, Embedding::Gather);
  LlamaConfig bf16 = f32;
  bf16.weights = WeightType::BF16;
  Generated gf = generate(f32, TrainOutputs::Gradients);
  Generated gb = generate(bf16, TrainOutputs::Gradients);
  // Same signature: master weights are f32 either way.
  CHECK(gf.params == gb.params);
  Tensors w = randomParams(gf, 13);
  const std::vector<int64_t> tokens = randomTokens(f32, 1);
  Tensors rf = run(gf, w, tokens), rb = run(gb, w, tokens);
  CHECK(rb.at("loss")[0] == Approx(rf.at("loss")[0]).epsilon(0.02));
  for (const auto& [name, grad] : rf) {
    if (name == "loss") continue;
    const auto& other = rb.at(name);
    double cosine =
        dotProduct(grad, other) / std::sqrt(dotProduct(grad, grad) * dotProduct(other, other));
    INFO(name);
    CHECK(cosine > 0.98);
  }
}

TEST_CASE("train configurations are validated, naming the option", "[traces][train]") {
  LlamaConfig c = microTrain(PosEmbedding::Rope, Embedding::Gather);
  c.seq = 1;
  CHECK(validate(c).at(0).find("--seq") != std::string::npos);
  c = microTrain(PosEmbedding::Rope, Embedding::Gather);
  c.nKvHeads = 1;
  CHECK(validate(c).at(0).find("--n-kv-heads") != std::string::npos);
  c = microTrain(PosEmbedding::Rope, Embedding::Gather);
  c.weights = WeightType::Int8;
  CHECK(validate(c).at(0).find("--dtype=int8") != std::string::npos);
  c = *presetConfig("micro");
  c.posEmbedding = PosEmbedding::Learned;
  CHECK(validate(c).at(0).find("--pos-embedding") != std::string::npos);
}
