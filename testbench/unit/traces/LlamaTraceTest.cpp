// The generated Llama traces compute a real decoder: evaluated by the reference
// evaluator (after a print/parse round trip, the path a trace file takes),
// they match the plain C++ model of LlamaReference.cpp; the causal mask masks;
// grouped-query heads share their KV head; a decode step equals the prefill at
// its position; int8 weights are dequantized per output column; the one-hot
// embedding equals the gather.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "LlamaReference.h"
#include "TraceTestData.h"
#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloPrinter.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/hlo/eval/Evaluator.h"
#include "isa/support/Numerics.h"
#include "traces/tracegen/LlamaGraph.h"

using namespace tpusim;
using namespace tpusim::traces;
using namespace tracetest;
namespace ev = tpusim::hlo::eval;

namespace {

// A generated trace as a parsed, verified module plus its parameter names.
struct Generated {
  std::unique_ptr<hlo::HloModule> module;
  std::vector<std::string> params;
};

Generated generate(const LlamaConfig& c) {
  REQUIRE(validate(c).empty());
  LlamaTrace trace = buildLlama(c);
  auto module = roundTrip(*trace.module, "generated.hlo");
  return {std::move(module), trace.parameterNames};
}

bool isWeight(const std::string& name) { return name.rfind("params[", 0) == 0; }

// Weights scaled so activations stay O(1): matrices by 1/sqrt(fan-in), norm
// weights near 1, int8 matrices as integers in [-127, 127] with small scales.
Tensors randomWeights(const Generated& g, uint64_t seed) {
  Random rng{seed};
  Tensors w;
  auto params = g.module->entry()->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = g.params[i];
    if (!isWeight(name) && name != "x") continue;
    const hlo::Shape& s = params[i]->shape();
    std::vector<double> values(static_cast<size_t>(s.elementCount()));
    bool scale = name.find("_scale']") != std::string::npos;
    bool norm = name.find("norm']") != std::string::npos;
    for (double& v : values) {
      double u = rng.uniform();
      if (s.type == hlo::PrimitiveType::S8)
        v = std::round(u * 127);
      else if (scale)
        v = (1.0 + 0.25 * u) * 0.12 / 127.0;  // |q * scale| up to ~0.15, like the bf16 weights
      else if (norm)
        v = 1.0 + 0.25 * u;
      else if (s.rank() == 2 && name != "params['embed']")
        v = u * std::sqrt(3.0 / double(s.dims[0]));
      else
        v = u;
    }
    w[name] = std::move(values);
  }
  return w;
}

ev::ElemType elemType(hlo::PrimitiveType t) {
  switch (t) {
    case hlo::PrimitiveType::F32:
      return ev::ElemType::F32;
    case hlo::PrimitiveType::BF16:
      return ev::ElemType::BF16;
    case hlo::PrimitiveType::S8:
      return ev::ElemType::S8;
    case hlo::PrimitiveType::S32:
      return ev::ElemType::S32;
    default:
      FAIL("unexpected parameter type");
      return ev::ElemType::F32;
  }
}

ev::Literal literalOf(const hlo::Shape& s, const std::vector<double>& values) {
  ev::Literal l = ev::Literal::array(elemType(s.type), s.dims);
  REQUIRE(static_cast<int64_t>(values.size()) == l.numElements());
  for (size_t i = 0; i < values.size(); ++i) l.setDouble(static_cast<int64_t>(i), values[i]);
  return l;
}

// Runs the trace: weights (and "x", caches) from `w`, tokens and pos given.
std::vector<ev::Literal> run(const Generated& g, const Tensors& w,
                             const std::vector<int64_t>& tokens, int64_t pos = 0) {
  std::vector<ev::Literal> args;
  auto params = g.module->entry()->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = g.params[i];
    const hlo::Shape& s = params[i]->shape();
    if (name == "tokens")
      args.push_back(literalOf(s, std::vector<double>(tokens.begin(), tokens.end())));
    else if (name == "pos")
      args.push_back(literalOf(s, {double(pos)}));
    else
      args.push_back(literalOf(s, w.at(name)));
  }
  ev::Literal out = ev::evaluate(*g.module, args);
  REQUIRE(out.isTuple());
  return out.elements();
}

// Largest |got - want| / (1 + |want|).
double worstError(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double e = std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i]));
    if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
  }
  return worst;
}

LlamaConfig micro() { return *presetConfig("micro"); }

// What JAX dumps look like: names unique in the whole module, every traced
// operation with op_name "jit(<fn>)/jit(main)/..." and a source line,
// constants without metadata, parameters named by their argument.
void checkJaxStyle(const hlo::HloModule& m, const LlamaConfig& c) {
  std::set<std::string> names;
  const std::string prefix = "jit(" + c.functionName() + ")/jit(main)/";
  for (const auto& comp : m.computations()) {
    REQUIRE(names.insert(comp->name()).second);
    for (const auto& inst : comp->instructions()) {
      INFO(inst->name());
      REQUIRE(names.insert(inst->name()).second);
      const hlo::OpMetadata& md = inst->attrs().metadata;
      switch (inst->opcode()) {
        case hlo::HloOpcode::Constant:
          CHECK(md.empty());
          break;
        case hlo::HloOpcode::Parameter:
          CHECK((comp.get() != m.entry() || !md.opName.empty()));
          break;
        case hlo::HloOpcode::Tuple:
          break;
        default:
          CHECK(md.opName.rfind(prefix, 0) == 0);
          CHECK(md.sourceFile == "traces/tracegen/LlamaGraph.cpp");
          CHECK(md.sourceLine.value_or(0) > 0);
      }
    }
  }
  auto layout = m.headerAttribute("entry_computation_layout");
  REQUIRE(layout);
  CHECK(layout->front() == '{');
  CHECK(m.name() == "jit_" + c.functionName());
  CHECK(m.entry()->name().rfind("main.", 0) == 0);
}

// f32 evaluation against the f64 reference.
constexpr double kTolerance = 1e-4;

}  // namespace

TEST_CASE("micro prefill computes the reference Llama decoder", "[traces]") {
  LlamaConfig c = micro();
  c.batch = 2;
  Generated g = generate(c);
  Tensors w = randomWeights(g, 1);
  std::vector<int64_t> tokens = randomTokens(c, 2);
  tokens[3] = -1;  // wraps to the last row, as table[-1] does
  std::vector<ev::Literal> out = run(g, w, tokens);
  ReferenceResult ref = referencePrefill(c, w, tokens);
  REQUIRE(out.size() == 3);
  CHECK(out[0].dims() == std::vector<int64_t>{2, 8, 64});
  CHECK(worstError(values(out[0]), ref.out) < kTolerance);
  CHECK(worstError(values(out[1]), ref.k[0]) < kTolerance);
  CHECK(worstError(values(out[2]), ref.v[0]) < kTolerance);
}

TEST_CASE("grouped-query attention: the query heads of a group share one KV head", "[traces]") {
  LlamaConfig c = micro();
  c.nHeads = 4;
  c.nKvHeads = 2;
  c.nLayers = 2;
  Generated g = generate(c);
  Tensors w = randomWeights(g, 3);
  std::vector<int64_t> tokens = randomTokens(c, 4);
  std::vector<ev::Literal> out = run(g, w, tokens);
  REQUIRE(out.size() == 5);
  CHECK(out[1].dims() == std::vector<int64_t>{1, 8, 2, 32});  // K holds only the KV heads
  std::vector<double> logits = values(out[0]);
  CHECK(worstError(logits, referencePrefill(c, w, tokens).out) < kTolerance);
  CHECK(worstError(values(out[3]), referencePrefill(c, w, tokens).k[1]) < kTolerance);
  // The test can tell the grouping apart: heads 0,1 -> KV 0 is not heads 0,2 -> KV 0.
  CHECK(worstError(logits, referencePrefill(c, w, tokens, KvHeadMap::Interleaved).out) >
        100 * kTolerance);
}

TEST_CASE("causal mask: changing a later token leaves earlier outputs unchanged", "[traces]") {
  LlamaConfig c = micro();
  c.nLayers = 2;
  Generated g = generate(c);
  Tensors w = randomWeights(g, 5);
  std::vector<int64_t> tokens = randomTokens(c, 6);
  std::vector<int64_t> changed = tokens;
  const int64_t at = 5;
  changed[at] = (tokens[at] + 17) % c.vocab;
  std::vector<ev::Literal> a = run(g, w, tokens), b = run(g, w, changed);
  for (size_t o = 0; o < a.size(); ++o) {
    const int64_t perPosition = a[o].numElements() / c.seq;
    const float* x = a[o].data<float>();
    const float* y = b[o].data<float>();
    for (int64_t i = 0; i < at * perPosition; ++i) REQUIRE(bitsOf(x[i]) == bitsOf(y[i]));
    bool later = false;
    for (int64_t i = at * perPosition; i < a[o].numElements(); ++i) later |= x[i] != y[i];
    CHECK(later);  // the change does reach its own and later positions
  }
}

TEST_CASE("a decode step equals the prefill at its position", "[traces]") {
  for (int64_t kvHeads : {2, 1}) {
    LlamaConfig pc = micro();
    pc.nHeads = 2;
    pc.nKvHeads = kvHeads;
    pc.batch = 2;
    Generated prefill = generate(pc);
    Tensors w = randomWeights(prefill, 7);
    std::vector<int64_t> tokens = randomTokens(pc, 8);
    std::vector<ev::Literal> full = run(prefill, w, tokens);
    std::vector<double> fullLogits = values(full[0]), fullK = values(full[1]),
                        fullV = values(full[2]);

    LlamaConfig dc = pc;
    dc.phase = Phase::Decode;
    dc.kvLen = 12;  // capacity beyond the prompt: unused entries must not matter
    Generated decode = generate(dc);
    const int64_t S = pc.seq, T = dc.kvLen, row = kvHeads * pc.headDim(), V = pc.vocab;
    for (int64_t pos : {0, 3, 7}) {
      INFO("kv heads " << kvHeads << ", position " << pos);
      // Cache: the prefill's K/V before pos, garbage from pos on.
      Random junk{99};
      Tensors dw = w;
      std::vector<double> k(static_cast<size_t>(pc.batch * T * row)), v(k.size());
      for (int64_t b = 0; b < pc.batch; ++b)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t i = 0; i < row; ++i) {
            size_t at = static_cast<size_t>((b * T + t) * row + i);
            bool known = t < pos;
            k[at] = known ? fullK[(b * S + t) * row + i] : 50 * junk.uniform();
            v[at] = known ? fullV[(b * S + t) * row + i] : 50 * junk.uniform();
          }
      dw["cache['k'][0]"] = k;
      dw["cache['v'][0]"] = v;
      std::vector<int64_t> step{tokens[pos], tokens[S + pos]};
      std::vector<ev::Literal> out = run(decode, dw, step, pos);
      REQUIRE(out.size() == 3);
      std::vector<double> logits = values(out[0]), want;
      for (int64_t b = 0; b < pc.batch; ++b)
        want.insert(want.end(), fullLogits.begin() + (b * S + pos) * V,
                    fullLogits.begin() + (b * S + pos + 1) * V);
      CHECK(worstError(logits, want) < kTolerance);
      // The new K/V landed at pos; every other entry is the input's.
      std::vector<double> newK = values(out[1]), newV = values(out[2]);
      for (int64_t b = 0; b < pc.batch; ++b)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t i = 0; i < row; ++i) {
            size_t at = static_cast<size_t>((b * T + t) * row + i);
            if (t == pos) {
              REQUIRE(std::fabs(newK[at] - fullK[(b * S + t) * row + i]) < kTolerance);
              REQUIRE(std::fabs(newV[at] - fullV[(b * S + t) * row + i]) < kTolerance);
            } else {
              REQUIRE(newK[at] == float(k[at]));
              REQUIRE(newV[at] == float(v[at]));
            }
          }
    }
  }
}

TEST_CASE("int8 weights: s8 times a per-column scale, dequantized in the graph", "[traces]") {
  LlamaConfig qc = micro();
  qc.weights = WeightType::Int8;
  Generated quantized = generate(qc);
  Tensors qw = randomWeights(quantized, 11);
  std::vector<int64_t> tokens = randomTokens(qc, 12);

  // The same model in bf16 with the dequantized weights, rounded to bf16 as
  // the graph's bf16 multiply rounds them.
  LlamaConfig bc = qc;
  bc.weights = WeightType::BF16;
  Generated plain = generate(bc);
  Tensors bw;
  for (const auto& [name, v] : qw) {
    if (name.find("_scale']") != std::string::npos) continue;
    std::string scaleName = name;
    scaleName.insert(scaleName.size() - 2, "_scale");
    auto scale = qw.find(scaleName);
    std::vector<double> deq = v;
    if (scale != qw.end()) {
      const std::vector<double>& s = scale->second;
      for (size_t i = 0; i < deq.size(); ++i)
        deq[i] = roundToBf16(float(deq[i] * double(roundToBf16(float(s[i % s.size()])))));
    }
    bw[name] = std::move(deq);
  }
  std::vector<ev::Literal> a = run(quantized, qw, tokens), b = run(plain, bw, tokens);
  REQUIRE(a.size() == b.size());
  for (size_t o = 0; o < a.size(); ++o) CHECK(a[o] == b[o]);  // bit for bit

  // And bf16 is a close approximation of the f64 model with those weights.
  for (auto& [name, v] : bw)
    for (double& x : v) x = roundToBf16(float(x));
  ReferenceResult ref = referencePrefill(bc, bw, tokens);
  double scale = 0;
  for (double x : ref.out) scale = std::max(scale, std::fabs(x));
  double worst = 0;
  std::vector<double> got = values(a[0]);
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - ref.out[i]));
  CHECK(worst < 0.05 * scale);
}

TEST_CASE("one-hot embedding computes what the gather does", "[traces]") {
  LlamaConfig c = micro();
  Generated gather = generate(c);
  c.embedding = Embedding::OneHot;
  Generated oneHot = generate(c);
  Tensors w = randomWeights(gather, 13);
  std::vector<int64_t> tokens = randomTokens(c, 14);
  tokens[0] = -3;
  std::vector<ev::Literal> a = run(gather, w, tokens), b = run(oneHot, w, tokens);
  for (size_t o = 0; o < a.size(); ++o) CHECK(a[o] == b[o]);
}

TEST_CASE("a layers-only trace computes the decoder layers on the hidden state", "[traces]") {
  LlamaConfig c = micro();
  c.layersOnly = true;
  c.nLayers = 2;
  Generated g = generate(c);
  REQUIRE(g.params[0] == "x");
  Tensors w = randomWeights(g, 15);
  std::vector<ev::Literal> out = run(g, w, {});
  ReferenceResult ref = referencePrefill(c, w, {});
  CHECK(out[0].dims() == std::vector<int64_t>{1, 8, 128});
  CHECK(worstError(values(out[0]), ref.out) < kTolerance);
  CHECK(worstError(values(out[3]), ref.k[1]) < kTolerance);
}

TEST_CASE("every option combination generates a module that verifies and round-trips", "[traces]") {
  int count = 0;
  for (WeightType wt : {WeightType::BF16, WeightType::F32, WeightType::Int8})
    for (Phase phase : {Phase::Prefill, Phase::Decode})
      for (int64_t kvHeads : {4, 2, 1})
        for (bool layersOnly : {false, true})
          for (Embedding e : {Embedding::Gather, Embedding::OneHot}) {
            if (layersOnly && e == Embedding::OneHot) continue;
            LlamaConfig c = micro();
            c.nHeads = 4;
            c.nKvHeads = kvHeads;
            c.nLayers = 2;
            c.weights = wt;
            c.phase = phase;
            c.layersOnly = layersOnly;
            c.embedding = e;
            Generated g = generate(c);  // verifies and round-trips
            CHECK(ev::unsupportedInstructions(*g.module).empty());
            checkJaxStyle(*g.module, c);
            ++count;
          }
  CHECK(count == 54);
}

TEST_CASE("invalid configurations are rejected naming the option", "[traces]") {
  LlamaConfig c = micro();
  CHECK(validate(c).empty());
  c.nHeads = 3;
  CHECK(validate(c).at(0) == "--d-model (128) must be a multiple of --n-heads (3)");
  c = micro();
  c.nHeads = 4;
  c.nKvHeads = 3;
  CHECK(validate(c).at(0) == "--n-heads (4) must be a multiple of --n-kv-heads (3)");
  c = micro();
  c.dModel = 6;
  c.nHeads = c.nKvHeads = 2;
  CHECK(validate(c).at(0).find("must be even") != std::string::npos);
  c = micro();
  c.seq = 0;
  CHECK(validate(c).at(0) == "--seq (0) must be between 1 and 16777216");
  c = micro();
  c.normEps = 0;
  CHECK(validate(c).at(0).find("--norm-eps") == 0);
}
