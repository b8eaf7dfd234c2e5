// Test harness of fusion lowering: evaluates every instruction of a module's
// entry with the reference evaluator on seeded random parameters, lowers each
// compute instruction to a kernel, runs the kernel in interpret mode on the
// evaluated operands and compares its output with the evaluated result.
#pragma once

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloModule.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/eval/Evaluator.h"
#include "compiler/lower/fusion/FusionLowering.h"
#include "compiler/passes/PassPipeline.h"
#include "kernels/codegen/Compile.h"
#include "kernels/codegen/RegAlloc.h"
#include "kernels/dsl/HostArrayIo.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/Trace.h"
#include "testbench/unit/HloTestUtil.h"

namespace lowertest {

using namespace tpusim;
using hlo::eval::Literal;

inline std::string chipsDir() { return testing::presetsDir(); }
inline const kernels::codegen::TargetInfo& v5e() {
  static kernels::codegen::TargetInfo t = kernels::codegen::loadTargetByName("v5e", chipsDir());
  return t;
}

inline std::unique_ptr<hlo::HloModule> parse(const std::string& text) {
  return testing::parseHlo(text);
}
inline std::unique_ptr<hlo::HloModule> parseFile(const std::string& path) {
  return testing::parseHloFileModule(path);
}

inline void runPasses(hlo::HloModule& m, const std::string& passes) {
  passes::PassPipeline p;
  std::string err;
  REQUIRE(p.addPasses(passes, &err));
  INFO(err);
  REQUIRE(p.run(m, &err));
}

// The value of every array-shaped entry instruction (the module is changed;
// lowering ignores users).
inline std::map<const hlo::HloInstruction*, Literal> evaluateAll(hlo::HloModule& m, uint64_t seed) {
  return testing::evaluateEveryValue(m, seed);
}

inline kernels::dsl::HostArray toHost(const Literal& l, const kernels::llo::ArrayOperand& a) {
  kernels::dsl::HostArray h;
  h.shape = a.bufferShape();  // the operand's buffer (a strided view reads it in place)
  h.dtype = a.dtype;
  REQUIRE(l.numElements() == h.size());
  h.words.resize(static_cast<size_t>(l.numElements()));
  for (int64_t i = 0; i < l.numElements(); ++i) {
    uint32_t w = 0;
    switch (l.type()) {
      case hlo::eval::ElemType::F32: {
        float f = l.data<float>()[i];
        std::memcpy(&w, &f, 4);
        break;
      }
      case hlo::eval::ElemType::BF16:
        w = l.data<uint16_t>()[i];
        break;
      case hlo::eval::ElemType::S8:
        w = static_cast<uint8_t>(l.data<int8_t>()[i]);
        break;
      default:
        w = static_cast<uint32_t>(static_cast<int32_t>(l.getInt(i)));
        if (a.dtype == kernels::llo::DType::S8) w &= 0xFF;
    }
    h.words[static_cast<size_t>(i)] = w;
  }
  return h;
}

struct Tolerance {
  double rtol = 0, atolScale = 0;  // |got - want| <= atol + rtol |want|, atol = atolScale x rms
};

inline bool containsDot(const hlo::HloInstruction& inst) {
  if (inst.opcode() == hlo::HloOpcode::Dot) return true;
  if (inst.opcode() != hlo::HloOpcode::Fusion) return false;
  for (const auto& i : inst.calledComputation("calls")->instructions())
    if (i->opcode() == hlo::HloOpcode::Dot) return true;
  return false;
}

// By dtype: f32 a few ulps (the VPU's reciprocal, exp ...), bf16 two bf16
// ulps, integers exact; kernels with a dot round f32 operands to bf16 on the
// MXU, so their error is relative to the output's magnitude.
// A bf16 reduce accumulates in f32 in the kernel (as XLA on TPU does) but in
// bf16 in the evaluator, whose error grows with the reduced length.
inline Tolerance toleranceFor(const hlo::HloInstruction& inst) {
  if (containsDot(inst)) return {2e-2, 2e-2};
  bool reduce = inst.opcode() == hlo::HloOpcode::Reduce ||
                (inst.opcode() == hlo::HloOpcode::Fusion &&
                 inst.calledComputation("calls")->root()->opcode() == hlo::HloOpcode::Reduce);
  if (reduce && inst.shape().type == hlo::PrimitiveType::BF16) return {5e-2, 5e-2};
  switch (inst.shape().type) {
    case hlo::PrimitiveType::F32:
      return {3e-6, 1e-6};
    case hlo::PrimitiveType::BF16:
      return {1.6e-2, 1e-3};
    default:
      return {0, 0};
  }
}

struct CheckResult {
  bool lowered = false;
  std::string error;  // CannotLower message
  double worst = 0;   // worst |got - want| / (atol + rtol |want|)
  std::string kernelName;
};

// Lowers `inst`, runs it in interpret mode on its operands' values, compares.
inline CheckResult checkInstruction(const hlo::HloInstruction& inst,
                                    const std::map<const hlo::HloInstruction*, Literal>& values,
                                    uint64_t seed = 1) {
  CheckResult r;
  lower::LoweredKernel k;
  try {
    k = lower::lowerToKernel(inst, v5e());
  } catch (const lower::CannotLower& e) {
    r.error = e.what();
    return r;
  }
  r.lowered = true;
  REQUIRE(k.kernel);
  r.kernelName = k.kernel->name;
  REQUIRE(k.kernel->name == inst.name());
  REQUIRE(k.inputOperand.size() == k.kernel->inputs.size());
  REQUIRE(k.outputIndex.size() == k.kernel->outputs.size());
  std::vector<kernels::dsl::HostArray> inputs;
  for (size_t i = 0; i < k.inputOperand.size(); ++i)
    inputs.push_back(toHost(values.at(inst.operand(k.inputOperand[i])), k.kernel->inputs[i]));
  kernels::dsl::InterpretOptions opt;
  opt.seed = seed;
  kernels::dsl::InterpretResult run = kernels::dsl::interpret(*k.kernel, inputs, opt);
  INFO(inst.name());
  REQUIRE(run.races.empty());
  const Literal& want = values.at(&inst);
  const kernels::dsl::HostArray& got = run.outputs.at(0);
  REQUIRE(got.size() == want.numElements());
  Tolerance tol = toleranceFor(inst);
  double rms = 0;
  for (int64_t i = 0; i < want.numElements(); ++i) rms += want.getDouble(i) * want.getDouble(i);
  rms = std::sqrt(rms / std::max<int64_t>(1, want.numElements()));
  double atol = tol.atolScale * std::max(rms, 1e-30);
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double w = want.getDouble(i), gv = kernels::dsl::valueAt(got, i);
    if (std::isnan(w) && std::isnan(gv)) continue;
    double err = std::abs(gv - w);
    double bound = atol + tol.rtol * std::abs(w);
    double ratio = err == 0 ? 0 : (bound == 0 ? INFINITY : err / bound);
    if (!(ratio <= r.worst)) r.worst = ratio;
    if (!(ratio <= 1)) {
      FAIL_CHECK(fmt::format("{}: element {} is {} but the evaluator says {} (bound {})",
                             inst.name(), i, gv, w, bound));
      return r;
    }
  }
  return r;
}

// Every compute instruction of the entry: lowered and checked; returns the
// CannotLower messages of the ones that are refused.
inline std::vector<std::string> checkModule(hlo::HloModule& m, uint64_t seed = 7,
                                            int* checked = nullptr) {
  auto values = evaluateAll(m, seed);
  std::vector<std::string> refused;
  int n = 0;
  for (hlo::HloInstruction* i : m.entry()->postOrder()) {
    if (!lower::isComputeInstruction(*i)) continue;
    CheckResult r = checkInstruction(*i, values, seed);
    if (!r.lowered)
      refused.push_back(r.error);
    else
      ++n;
  }
  if (checked) *checked = n;
  return refused;
}

// Compiles a lowered instruction for v5e; "" on success, else the error.
inline std::string compileFor(const hlo::HloInstruction& inst) {
  try {
    lower::LoweredKernel k = lower::lowerToKernel(inst, v5e());
    kernels::codegen::compileKernel(*k.kernel, v5e());
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace lowertest
