// tpu-tracegen: writes the HLO text of one step of a Llama-style decoder, the
// way jax.jit(step).lower(...).compiler_ir('hlo').as_hlo_text() prints it.
//
//   tpu-tracegen --preset=tiny --phase=decode -o tiny_decode.hlo
//   tpu-tracegen --preset=llama2-7b --n-layers=1 --layers-only --seq=2048
//
// A preset sets every dimension; options given on the command line override it.
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include <exception>
#include <fstream>

#include "compiler/hlo/HloPrinter.h"
#include "compiler/hlo/HloVerifier.h"
#include "isa/support/ParseCommandLine.h"
#include "traces/tracegen/LlamaGraph.h"
#include "traces/tracegen/LlamaTrainGraph.h"
#include "traces/tracegen/TraceSummary.h"

namespace cl = llvm::cl;
using namespace tpusim;
using namespace tpusim::traces;

static cl::OptionCategory Cat("tpu-tracegen options");
static cl::opt<std::string> Preset(
    "preset",
    cl::desc("Starting configuration: tiny (default), tiny-train (the tiny pre-training "
             "workload: --phase=train --batch=256 --pos-embedding=learned), llama2-7b, "
             "llama2-13b, llama2-70b, llama3-8b, micro"),
    cl::init("tiny"), cl::cat(Cat));
static cl::opt<int64_t> DModel("d-model", cl::desc("Model (hidden) width"), cl::cat(Cat));
static cl::opt<int64_t> NHeads("n-heads", cl::desc("Query heads"), cl::cat(Cat));
static cl::opt<int64_t> NKvHeads("n-kv-heads",
                                 cl::desc("Key/value heads (fewer than --n-heads: grouped-query "
                                          "attention); default: --n-heads"),
                                 cl::cat(Cat));
static cl::opt<int64_t> DFf("d-ff", cl::desc("Feed-forward (SwiGLU) width"), cl::cat(Cat));
static cl::opt<int64_t> Tp("tp",
                           cl::desc("Tensor parallelism over N devices (Megatron): each device's "
                                    "module holds 1/N of the heads and of d_ff, with an all-reduce "
                                    "after the attention output and the FFN down projections "
                                    "(num_partitions=N)"),
                           cl::value_desc("N"), cl::cat(Cat));
static cl::opt<int64_t> Dp("dp",
                           cl::desc("Data parallelism over N devices: each device's module takes "
                                    "1/N of --batch and all the weights; the train step "
                                    "all-reduces the gradients and the loss (num_partitions=N)"),
                           cl::value_desc("N"), cl::cat(Cat));
static cl::opt<int64_t> NLayers("n-layers", cl::desc("Decoder layers"), cl::cat(Cat));
static cl::opt<int64_t> Vocab("vocab", cl::desc("Vocabulary size"), cl::cat(Cat));
static cl::opt<int64_t> Seq("seq", cl::desc("Prefill: prompt tokens"), cl::cat(Cat));
static cl::opt<int64_t> KvLen("kv-len",
                              cl::desc("Decode: KV cache capacity in tokens (default: --seq)"),
                              cl::cat(Cat));
static cl::opt<int64_t> Batch("batch", cl::desc("Sequences per step"), cl::cat(Cat));
static cl::opt<WeightType> Dtype(
    "dtype", cl::desc("Weight type"),
    cl::values(clEnumValN(WeightType::BF16, "bf16", "bf16 weights and activations"),
               clEnumValN(WeightType::F32, "f32", "f32 weights and activations"),
               clEnumValN(WeightType::Int8, "int8",
                          "s8 weights with a bf16 scale per output column, dequantized in the "
                          "graph; bf16 activations")),
    cl::cat(Cat));
static cl::opt<Phase> PhaseOpt(
    "phase", cl::desc("Which step"),
    cl::values(clEnumValN(Phase::Prefill, "prefill", "the whole prompt at once (default)"),
               clEnumValN(Phase::Decode, "decode", "one new token against the KV cache"),
               clEnumValN(Phase::Train, "train",
                          "one training step: forward, cross-entropy loss, backward, AdamW")),
    cl::init(Phase::Prefill), cl::cat(Cat));
static cl::opt<PosEmbedding> PosEmbeddingOpt(
    "pos-embedding", cl::desc("Position information"),
    cl::values(clEnumValN(PosEmbedding::Rope, "rope", "rotary embeddings of q and k (default)"),
               clEnumValN(PosEmbedding::Learned, "learned",
                          "a learned table of --seq position vectors added to the token "
                          "embedding (--phase=train)")),
    cl::cat(Cat));
static cl::opt<double> LearningRate("learning-rate",
                                    cl::desc("--phase=train: AdamW learning rate (default 1e-4)"),
                                    cl::cat(Cat));
static cl::opt<double> WeightDecay(
    "weight-decay", cl::desc("--phase=train: AdamW weight decay (default 1e-4, optax's)"),
    cl::cat(Cat));
static cl::opt<Embedding> EmbeddingOpt(
    "embedding", cl::desc("Embedding lookup"),
    cl::values(clEnumValN(Embedding::Gather, "gather", "gather of table rows (default)"),
               clEnumValN(Embedding::OneHot, "one-hot", "one-hot matrix times the table")),
    cl::init(Embedding::Gather), cl::cat(Cat));
static cl::opt<bool> LayersOnly("layers-only",
                                cl::desc("Only the decoder layers: hidden state in and out, no "
                                         "embedding, final norm or vocabulary projection"),
                                cl::cat(Cat));
static cl::opt<bool> Int8Activations(
    "int8-activations",
    cl::desc("With --dtype=int8: quantize each projection's input per row to s8 (AQT-style, "
             "scale = max |x| / 127) and run s8 x s8 -> s32 dots rescaled by the row and column "
             "scales, instead of dequantizing the weights"),
    cl::cat(Cat));
static cl::opt<double> NormEps("norm-eps", cl::desc("RMSNorm epsilon"), cl::cat(Cat));
static cl::opt<double> RopeTheta("rope-theta", cl::desc("Rotary embedding base"), cl::cat(Cat));
static cl::opt<std::string> Output("o", cl::desc("Output file (default: stdout)"),
                                   cl::value_desc("OUT.hlo"), cl::cat(Cat));
static cl::opt<bool> PrintSignature(
    "print-signature",
    cl::desc("Print the entry parameters and outputs (number, name, shape) instead of the HLO"),
    cl::cat(Cat));
static cl::opt<bool> PrintSummary(
    "print-summary",
    cl::desc("Print instruction and dot counts, dot FLOPs and the bytes of weights, KV caches, "
             "inputs and outputs instead of the HLO"),
    cl::cat(Cat));

static int error(const std::string& message) {
  fmt::print(stderr, "tpu-tracegen: error: {}\n", message);
  return 1;
}

template <typename T>
static void applyOption(T& field, const cl::opt<T>& option) {
  if (option.getNumOccurrences()) field = option.getValue();
}

int main(int argc, char** argv) {
  for (auto& entry : cl::getRegisteredOptions())
    for (cl::OptionCategory* c : entry.second->Categories)
      if (c == &cl::getGeneralCategory()) entry.second->setHiddenFlag(cl::ReallyHidden);
  tpusim::support::parseCommandLineOrExit(
      argc, argv,
      "tpu-tracegen: HLO text of Llama-style decoder steps, as JAX "
      "dumps it\n");

  std::optional<LlamaConfig> preset = presetConfig(Preset);
  if (!preset)
    return error(fmt::format("unknown --preset '{}' (known: {})", Preset.getValue(),
                             fmt::join(presetNames(), ", ")));
  LlamaConfig c = *preset;
  applyOption(c.dModel, DModel);
  applyOption(c.nHeads, NHeads);
  c.nKvHeads = NKvHeads.getNumOccurrences() ? NKvHeads.getValue()
               : NHeads.getNumOccurrences() ? c.nHeads
                                            : c.nKvHeads;
  applyOption(c.dFf, DFf);
  applyOption(c.nLayers, NLayers);
  applyOption(c.vocab, Vocab);
  applyOption(c.seq, Seq);
  if (KvLen.getNumOccurrences())
    c.kvLen = KvLen;
  else if (Seq.getNumOccurrences())
    c.kvLen = c.seq;
  applyOption(c.batch, Batch);
  applyOption(c.weights, Dtype);
  if (PhaseOpt.getNumOccurrences()) c.phase = PhaseOpt;
  applyOption(c.posEmbedding, PosEmbeddingOpt);
  applyOption(c.learningRate, LearningRate);
  applyOption(c.weightDecay, WeightDecay);
  c.embedding = EmbeddingOpt;
  c.layersOnly = LayersOnly;
  c.int8Activations = Int8Activations;
  applyOption(c.normEps, NormEps);
  applyOption(c.ropeTheta, RopeTheta);
  applyOption(c.tp, Tp);
  applyOption(c.dp, Dp);
  // An option the chosen step ignores is a mistake worth reporting.
  if (c.layersOnly && EmbeddingOpt.getNumOccurrences())
    return error("--embedding has no effect with --layers-only");
  if (c.layersOnly && Vocab.getNumOccurrences())
    return error("--vocab has no effect with --layers-only");
  if (c.phase != Phase::Decode && KvLen.getNumOccurrences())
    return error(
        "--kv-len applies to --phase=decode only (prefill and train attend over --seq tokens)");
  if (c.phase != Phase::Train &&
      (LearningRate.getNumOccurrences() || WeightDecay.getNumOccurrences()))
    return error("--learning-rate and --weight-decay apply to --phase=train only");

  std::vector<std::string> problems = validate(c);
  if (!problems.empty())
    return error(fmt::format("{}", fmt::join(problems, "\ntpu-tracegen: error: ")));

  LlamaTrace trace;
  try {
    trace = c.phase == Phase::Train ? buildLlamaTrain(c) : buildLlama(c);
  } catch (const std::exception& e) {  // a generator bug, reported rather than aborting
    return error(e.what());
  }
  // The generator's own check: what it writes must verify.
  hlo::VerifierResult verified = hlo::verifyModule(*trace.module);
  if (!verified.ok()) return error("the generated module does not verify:\n" + verified.message());

  if (PrintSignature && PrintSummary)
    return error("--print-signature and --print-summary cannot be combined");
  std::string text;
  if (PrintSignature) {
    const auto params = trace.module->entry()->parameters();
    for (size_t i = 0; i < params.size(); ++i)
      text += fmt::format("parameter {} {} {}\n", i, trace.parameterNames[i],
                          params[i]->shape().toString(false));
    const hlo::Shape& root = trace.module->entry()->root()->shape();
    for (size_t i = 0; i < trace.outputNames.size(); ++i)
      text += fmt::format("output {} {} {}\n", i, trace.outputNames[i],
                          (root.isTuple() ? root.tupleShapes[i] : root).toString(false));
  } else if (PrintSummary) {
    text = formatSummary(summarize(trace));
  } else {
    text = hlo::printModule(*trace.module);
  }
  if (Output.empty() || Output == "-") {
    fmt::print("{}", text);
    return 0;
  }
  std::ofstream out(Output, std::ios::binary);
  out << text;
  out.close();
  if (!out) return error(fmt::format("cannot write '{}'", Output.getValue()));
  return 0;
}
