// A plain C++ Llama decoder (double precision, loops only) written from the
// model's definition, independent of the trace generator: the answer the
// generated HLO, run by the reference evaluator, must reproduce.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/tracegen/LlamaConfig.h"

namespace tracetest {

// Tensors by the generator's parameter names ("params['layers'][0]['wq']"),
// row-major, as f64 values.
using Tensors = std::map<std::string, std::vector<double>>;

struct ReferenceResult {
  std::vector<double> out;             // logits [B,S,V], or x [B,S,D] for layersOnly
  std::vector<std::vector<double>> k;  // per layer [B,S,KV,hd], after the rotary embedding
  std::vector<std::vector<double>> v;  // per layer [B,S,KV,hd]
};

// Which KV head query head h reads. Llama's grouped-query attention: h / (H/KV).
// Tests also run the deliberately wrong h % KV to show they can tell them apart.
enum class KvHeadMap { Grouped, Interleaved };

// Prefill of `tokens` [B,S] (or of the hidden state "x" in `w` when
// layersOnly), every position attending to positions <= itself.
ReferenceResult referencePrefill(const tpusim::traces::LlamaConfig& c, const Tensors& w,
                                 const std::vector<int64_t>& tokens,
                                 KvHeadMap map = KvHeadMap::Grouped);

}  // namespace tracetest
