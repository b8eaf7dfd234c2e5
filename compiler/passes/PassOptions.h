// Options of the target-dependent passes (layout-assignment, fusion), set by the
// tools from their command lines (tpu-opt --chip, --fusion-report) before the
// pipeline runs. Passes created by name (PassRegistry.h) read them when they
// run; unit tests may construct a pass with explicit options instead.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "isa/target/ChipConfig.h"

namespace tpusim::passes {

struct PassOptions {
  // The chip preset (name or path, TargetDescription.h) the passes compile for.
  std::string chip = "v5e";
  // The chip itself, when the caller has it loaded (overrides applied): it
  // wins over `chip`, so the passes see exactly the chip the program is for.
  std::shared_ptr<const target::ChipConfig> chipConfig;
  // Print the fusion pass's decisions (fused, refused and why) on stderr.
  bool fusionReport = false;
  // The fusion cost model's limits (Fusion.h: FusionConfig).
  int64_t fusionMaxDuplication = 3;
  double fusionVmemFraction = 1.0;
  // Sibling dots sharing an LHS fused with their element-wise combiner
  // (SiblingDots.h; tpuc --sibling-dots). On by default: the tiny prefill
  // (v5e, v6e) and the 7B layer prefill are faster with it, the decodes
  // unchanged (docs/performance.md, branch `tinyrope`).
  bool fusionSiblingDots = true;
  // A dot whose result is split into 128-lane heads (FusionRules.h
  // isDotLaneSplit) takes the element-wise work and lane shuffles on them as
  // its epilogue (RoPE of q and k in the projections' kernels; tpuc
  // --head-epilogues). On by default (docs/performance.md, branch `roperfuse`).
  bool fusionHeadEpilogues = true;
  // Dot kernels and their element-wise consumer in one kernel with several
  // outputs (DotEpilogueOutputs.h, run by multi-output-fusion; tpuc
  // --dot-epilogue-outputs). On by default (docs/performance.md, branch
  // `trainmo`).
  bool fusionDotEpilogueOutputs = true;
  // dot-canonicalize transposes a dot's [N, K] weights once through HBM where
  // the M rows would load them transposed often enough (DotCanonicalizer.cpp
  // transposeWeightsOnce; tpuc --transpose-weights-once). Off by default
  // until the step is measured with the transposes at its start
  // (docs/performance.md, branch `trainmxu`).
  bool transposeWeightsOnce = false;
  // dot-scale-to-output also where it changes the rounding (a scale that is
  // not a constant power of two): floats treated as reals, as XLA's
  // enable_scalar_multiply_reduction / floats-are-real options. Off by
  // default: the kernels then scale the int8 weights in registers exactly as
  // the HLO rounds (docs/compiler.md, "int8 weights").
  bool reassociateDequantScales = false;
};

// The process-wide options (tools set them once at start-up).
PassOptions& passOptions();

}  // namespace tpusim::passes
