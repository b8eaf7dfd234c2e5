// The HLO of one pre-training step of a Llama-style model, as JAX traces
//
//   @jax.jit
//   def train_step(state, tokens):
//     loss, grads = jax.value_and_grad(loss_fn)(state.params, tokens)
//     return state.apply_gradients(grads=grads), loss      # optax.adamw
//
// with loss_fn = mean softmax cross-entropy of the logits at positions
// 0..S-2 against the tokens at 1..S-1 (the one-hot form of
// optax.softmax_cross_entropy_with_integer_labels).
//
// Entry parameters, in jax.tree_util order (dict keys sorted):
//   step s32[], params[...] (f32 master weights), opt_state.count s32[],
//   opt_state.mu[...], opt_state.nu[...] (f32, one per parameter), tokens s32[B,S].
// Outputs: the new step, params, count, mu, nu (each aliased to its input:
// the state is donated) and the loss f32[].
//
// Precision: --dtype=bf16 computes in bf16 (parameters converted at use, as a
// Flax model with param_dtype=f32, dtype=bf16 does) with RMSNorm, softmax, the
// loss and the optimizer in f32; --dtype=f32 computes everything in f32.
//
// The backward pass is written out as autodiff produces it (the transposed
// dots, the broadcast/reduce pairs, pad for the slice, scatter-add for the
// embedding gather) under the scope "transpose(jvp(loss_fn))"; the forward
// pass is under "jvp(loss_fn)" and the update under "adamw", so a profile
// splits the step by op_name.
#pragma once

#include <string>

#include "traces/tracegen/LlamaConfig.h"
#include "traces/tracegen/LlamaGraph.h"

namespace tpusim::traces {

enum class TrainOutputs {
  Step,       // the whole train_step (the new state and the loss)
  Gradients,  // value_and_grad(loss_fn)(params, tokens): the loss, then one gradient per
              // parameter (f32, named "grad[...]"); for tests of the backward pass
};

// `config.phase` must be Phase::Train and the configuration valid (validate()).
LlamaTrace buildLlamaTrain(const LlamaConfig& config,
                           const std::string& sourceFile = "traces/tracegen/LlamaTrainGraph.cpp",
                           TrainOutputs outputs = TrainOutputs::Step);

}  // namespace tpusim::traces
