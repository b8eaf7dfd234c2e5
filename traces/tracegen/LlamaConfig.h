// The shape of a Llama-style decoder model and the step to trace (prefill or
// one decode token), as tpu-tracegen's options set it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpusim::traces {

// Element type of the weights. Int8 keeps activations, norms, the embedding
// table and the KV cache in bf16; every projection matrix is an s8 parameter
// with a bf16 scale per output column, dequantized in the graph.
enum class WeightType { BF16, F32, Int8 };
// Train: one jax.jit train_step (forward, softmax cross-entropy loss, backward,
// AdamW) over `seq` tokens per sequence; see LlamaTrainGraph.h.
enum class Phase { Prefill, Decode, Train };
// Position information: rotary embeddings applied to q and k (Llama), or a
// learned table of `seq` position vectors added to the token embedding (GPT-2
// style, the tiny pre-training workload's choice).
enum class PosEmbedding { Rope, Learned };
// Embedding lookup: a gather of table rows (what jnp.take / table[tokens]
// lowers to), or a one-hot matrix times the table (the MXU-friendly form some
// TPU code bases use for small vocabularies).
enum class Embedding { Gather, OneHot };

struct LlamaConfig {
  int64_t dModel = 1024;
  int64_t nHeads = 8;
  int64_t nKvHeads = 8;  // < nHeads: grouped-query attention
  int64_t dFf = 2048;
  int64_t nLayers = 8;
  int64_t vocab = 4096;
  int64_t seq = 256;    // prefill: tokens in the prompt
  int64_t kvLen = 256;  // decode: KV cache capacity (positions 0 .. kvLen-1)
  int64_t batch = 1;
  WeightType weights = WeightType::BF16;
  Phase phase = Phase::Prefill;
  Embedding embedding = Embedding::Gather;
  PosEmbedding posEmbedding = PosEmbedding::Rope;
  // Only the decoder layers: the input is the hidden state, the output the
  // hidden state after the last layer (no embedding, final norm or vocabulary
  // projection; vocab is unused).
  bool layersOnly = false;
  // Int8 only (AQT-style, as the v5e inference workload runs): each
  // projection's input is quantized per row to s8 (scale = max |x| / 127),
  // the dot is s8 x s8 -> s32, and the result is rescaled by the row's and
  // the column's scale; otherwise the s8 weights are dequantized to bf16.
  bool int8Activations = false;
  double normEps = 1e-5;
  double ropeTheta = 10000.0;
  // Train only: optax.adamw's hyper-parameters (b1, b2, eps are optax's defaults).
  double learningRate = 1e-4;
  double weightDecay = 1e-4;
  double adamB1 = 0.9, adamB2 = 0.999, adamEps = 1e-8;

  // Tensor parallelism (Megatron): heads, KV heads and d_ff split over tp
  // devices (column-parallel wq/wk/wv/w1/w3, row-parallel wo/w2), one psum
  // after the attention output projection and one after the FFN's down
  // projection; the module is one device's program (num_partitions=tp).
  int64_t tp = 1;
  // Data parallelism: the batch split over dp devices, every device holding
  // all the weights; the train step sums the gradients and the loss over the
  // devices (psum, as GSPMD partitions a jitted step over a batch-sharded
  // input); inference has no collective. The module is one device's program
  // (num_partitions=dp).
  int64_t dp = 1;

  int64_t headDim() const { return dModel / nHeads; }
  int64_t groupSize() const { return nHeads / nKvHeads; }
  // One device's share under tensor parallelism.
  int64_t localHeads() const { return nHeads / tp; }
  int64_t localKvHeads() const { return nKvHeads / tp; }
  int64_t localFf() const { return dFf / tp; }
  int64_t localBatch() const { return batch / dp; }
  // Query positions in this step: seq for prefill and train, 1 for decode.
  int64_t queryLen() const { return phase == Phase::Decode ? 1 : seq; }
  // Key positions attended to: seq for prefill and train, the cache for decode.
  int64_t keyLen() const { return phase == Phase::Decode ? kvLen : seq; }
  // The jitted function's name: llama_prefill, llama_layers_decode, llama_train_step ...
  std::string functionName() const;
};

// Problems with a configuration, each naming the option ("--n-heads (12) must
// be a multiple of --n-kv-heads (5)"); empty when it is valid.
std::vector<std::string> validate(const LlamaConfig& c);

// Named starting points: "tiny" (the project's default workload), "llama2-7b",
// "llama3-8b" (GQA: 8 KV heads), "micro" (small enough to evaluate in tests).
std::optional<LlamaConfig> presetConfig(const std::string& name);
std::vector<std::string> presetNames();

std::string weightTypeName(WeightType w);  // "bf16", "f32", "int8"

}  // namespace tpusim::traces
