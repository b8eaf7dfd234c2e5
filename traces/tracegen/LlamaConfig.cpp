#include "traces/tracegen/LlamaConfig.h"

#include <fmt/format.h>

#include <cmath>

namespace tpusim::traces {

std::string LlamaConfig::functionName() const {
  if (phase == Phase::Train) return "train_step";
  return fmt::format("llama{}_{}", layersOnly ? "_layers" : "",
                     phase == Phase::Prefill ? "prefill" : "decode");
}

std::string weightTypeName(WeightType w) {
  switch (w) {
    case WeightType::BF16:
      return "bf16";
    case WeightType::F32:
      return "f32";
    case WeightType::Int8:
      return "int8";
  }
  return "bf16";
}

std::vector<std::string> validate(const LlamaConfig& c) {
  std::vector<std::string> errors;
  if (c.int8Activations && c.weights != WeightType::Int8)
    errors.push_back("--int8-activations needs --dtype=int8 (s8 weights with column scales)");
  // Dimensions only become shapes in text, but a shape beyond 2^24 per
  // dimension is certainly a typo, and keeps every product inside int64.
  constexpr int64_t kMax = int64_t{1} << 24;
  auto positive = [&](const char* option, int64_t v) {
    if (v < 1 || v > kMax)
      errors.push_back(fmt::format("--{} ({}) must be between 1 and {}", option, v, kMax));
    return v >= 1 && v <= kMax;
  };
  bool ok = positive("d-model", c.dModel) & positive("n-heads", c.nHeads) &
            positive("n-kv-heads", c.nKvHeads);
  positive("d-ff", c.dFf);
  positive("n-layers", c.nLayers);
  positive("batch", c.batch);
  if (!c.layersOnly) positive("vocab", c.vocab);
  if (c.phase == Phase::Decode)
    positive("kv-len", c.kvLen);
  else
    positive("seq", c.seq);
  if (c.phase == Phase::Train) {
    // What the train step's generator supports; each names the option to change.
    if (c.seq < 2)
      errors.push_back(fmt::format(
          "--phase=train needs --seq of at least 2 (the loss predicts token t+1 from t), not {}",
          c.seq));
    if (c.weights == WeightType::Int8)
      errors.push_back(
          "--phase=train trains bf16 (mixed precision) or f32 weights, not --dtype=int8");
    if (c.int8Activations)
      errors.push_back("--int8-activations applies to inference (prefill, decode) only");
    if (c.layersOnly) errors.push_back("--phase=train needs the whole model (no --layers-only)");
    if (c.nKvHeads != c.nHeads)
      errors.push_back(fmt::format(
          "--phase=train supports multi-head attention only: --n-kv-heads ({}) must equal "
          "--n-heads ({})",
          c.nKvHeads, c.nHeads));
    if (!(c.learningRate > 0) || !std::isfinite(c.learningRate))
      errors.push_back(
          fmt::format("--learning-rate ({}) must be a positive number", c.learningRate));
    if (!(c.weightDecay >= 0) || !std::isfinite(c.weightDecay))
      errors.push_back(fmt::format("--weight-decay ({}) must be a number >= 0", c.weightDecay));
  } else if (c.posEmbedding == PosEmbedding::Learned) {
    errors.push_back("--pos-embedding=learned is supported for --phase=train only");
  }
  if (c.tp < 1 || c.tp > 4096)
    errors.push_back(fmt::format("--tp ({}) must be between 1 and 4096", c.tp));
  else if (ok && (c.nKvHeads % c.tp || c.dFf % c.tp))
    errors.push_back(fmt::format(
        "--tp ({}) must divide --n-kv-heads ({}) and --d-ff ({}): each device holds whole heads",
        c.tp, c.nKvHeads, c.dFf));
  if (c.dp < 1 || c.dp > 4096)
    errors.push_back(fmt::format("--dp ({}) must be between 1 and 4096", c.dp));
  else if (c.batch >= 1 && c.batch % c.dp)
    errors.push_back(fmt::format(
        "--dp ({}) must divide --batch ({}): each device takes whole sequences", c.dp, c.batch));
  if (c.tp > 1 && c.dp > 1)
    errors.push_back(
        "--tp and --dp together are not generated (the module would need two replica-group "
        "axes); use one of them");
  if (c.phase == Phase::Train && c.tp != 1)
    errors.push_back("--tp applies to --phase=prefill and decode (the train step is one device's)");
  if (ok) {
    if (c.dModel % c.nHeads)
      errors.push_back(
          fmt::format("--d-model ({}) must be a multiple of --n-heads ({})", c.dModel, c.nHeads));
    else if (c.headDim() % 2 && c.posEmbedding == PosEmbedding::Rope)
      errors.push_back(fmt::format(
          "the head dimension --d-model / --n-heads ({}) must be even for rotary embeddings",
          c.headDim()));
    if (c.nHeads % c.nKvHeads)
      errors.push_back(fmt::format("--n-heads ({}) must be a multiple of --n-kv-heads ({})",
                                   c.nHeads, c.nKvHeads));
  }
  if (!(c.normEps > 0) || !std::isfinite(c.normEps))
    errors.push_back(fmt::format("--norm-eps ({}) must be a positive number", c.normEps));
  if (!(c.ropeTheta > 1) || !std::isfinite(c.ropeTheta))
    errors.push_back(fmt::format("--rope-theta ({}) must be a number above 1", c.ropeTheta));
  return errors;
}

std::optional<LlamaConfig> presetConfig(const std::string& name) {
  LlamaConfig c;  // the defaults are the tiny model
  if (name == "tiny") return c;
  if (name == "llama2-7b") {
    c.dModel = 4096;
    c.nHeads = c.nKvHeads = 32;
    c.dFf = 11008;
    c.nLayers = 32;
    c.vocab = 32000;
    c.seq = c.kvLen = 2048;
    return c;
  }
  if (name == "llama2-13b") {
    c.dModel = 5120;
    c.nHeads = c.nKvHeads = 40;
    c.dFf = 13824;
    c.nLayers = 40;
    c.vocab = 32000;
    c.seq = c.kvLen = 2048;
    return c;
  }
  if (name == "llama2-70b") {
    // Llama 2 70B (grouped-query attention, 8 KV heads): the model of the
    // Cloud TPU v5e int8 inference workload, which runs it on 8 chips.
    c.dModel = 8192;
    c.nHeads = 64;
    c.nKvHeads = 8;
    c.dFf = 28672;
    c.nLayers = 80;
    c.vocab = 32000;
    c.seq = c.kvLen = 2048;
    return c;
  }
  if (name == "llama3-8b") {
    c.dModel = 4096;
    c.nHeads = 32;
    c.nKvHeads = 8;
    c.dFf = 14336;
    c.nLayers = 32;
    c.vocab = 128256;
    c.seq = c.kvLen = 2048;
    c.ropeTheta = 500000.0;
    return c;
  }
  if (name == "micro") {
    c.dModel = 128;
    c.nHeads = c.nKvHeads = 2;
    c.dFf = 256;
    c.nLayers = 1;
    c.vocab = 64;
    c.seq = c.kvLen = 8;
    c.weights = WeightType::F32;
    return c;
  }
  if (name == "tiny-train") {
    // The tiny Llama pre-training workload on v6e: the tiny model with learned
    // position embeddings, batch 256 of 256 tokens, mixed precision.
    c.posEmbedding = PosEmbedding::Learned;
    c.batch = 256;
    c.phase = Phase::Train;
    return c;
  }
  return std::nullopt;
}

std::vector<std::string> presetNames() {
  return {"tiny", "tiny-train", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "micro"};
}

}  // namespace tpusim::traces
