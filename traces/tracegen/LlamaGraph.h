// The HLO of one step of a Llama-style decoder, as JAX would trace it:
//
//   prefill(tokens[B,S], params) -> (logits f32[B,S,V], k_0, v_0, ..., k_L-1, v_L-1)
//   decode(tokens[B,1], pos, k_0, v_0, ..., params)
//                               -> (logits f32[B,1,V], k_0', v_0', ...)
//
// With layersOnly the first input is the hidden state x[B,S,D] and the first
// output the hidden state after the last layer. K/V entries are [B,T,KV,hd]
// after the rotary embedding; decode writes the new token's K/V at `pos` with
// dynamic-update-slice, attends to cache positions 0..pos and donates the
// caches (input_output_alias). Every weight is a parameter, so the text holds
// shapes only.
//
// Per layer: x += Wo·attention(rope(Wq·n), rope(Wk·n), Wv·n) with
// n = rms_norm(x), then x += W2·(silu(W1·m) * W3·m) with m = rms_norm(x).
// RMSNorm and softmax run in f32; RoPE rotates the two halves of each head
// (the GPT-NeoX / Hugging Face convention) in f32; attention is causal.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"
#include "traces/tracegen/LlamaConfig.h"

namespace tpusim::traces {

struct LlamaTrace {
  std::unique_ptr<hlo::HloModule> module;
  // Entry parameter i's argument name: "tokens", "pos", "cache['k'][0]",
  // "params['layers'][0]['wq']", "params['layers'][0]['wq_scale']" (int8) ...
  std::vector<std::string> parameterNames;
  // Output i's name: "logits" (or "x"), "cache['k'][0]", "cache['v'][0]", ...
  std::vector<std::string> outputNames;
};

// Builds the trace of a valid configuration (see validate()). `sourceFile` is
// written as every instruction's metadata source_file.
LlamaTrace buildLlama(const LlamaConfig& config,
                      const std::string& sourceFile = "traces/tracegen/LlamaGraph.cpp");

}  // namespace tpusim::traces
