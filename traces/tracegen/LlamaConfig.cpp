#include "traces/tracegen/LlamaConfig.h"

#include <fmt/format.h>

#include <cmath>

namespace tpusim::traces {

std::string LlamaConfig::functionName() const {
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
  if (c.phase == Phase::Prefill)
    positive("seq", c.seq);
  else
    positive("kv-len", c.kvLen);
  if (c.tp < 1 || c.tp > 4096)
    errors.push_back(fmt::format("--tp ({}) must be between 1 and 4096", c.tp));
  else if (ok && (c.nKvHeads % c.tp || c.dFf % c.tp))
    errors.push_back(fmt::format(
        "--tp ({}) must divide --n-kv-heads ({}) and --d-ff ({}): each device holds whole heads",
        c.tp, c.nKvHeads, c.dFf));
  if (ok) {
    if (c.dModel % c.nHeads)
      errors.push_back(
          fmt::format("--d-model ({}) must be a multiple of --n-heads ({})", c.dModel, c.nHeads));
    else if (c.headDim() % 2)
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
  return std::nullopt;
}

std::vector<std::string> presetNames() {
  return {"tiny", "llama2-7b", "llama2-13b", "llama3-8b", "micro"};
}

}  // namespace tpusim::traces
