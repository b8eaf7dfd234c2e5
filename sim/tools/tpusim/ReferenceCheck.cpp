#include "sim/tools/tpusim/ReferenceCheck.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "isa/support/Numerics.h"

namespace tpusim::sim {

using isa::DType;

npy::Array bytesToNpy(const isa::BufferDesc& buffer, const std::vector<uint8_t>& bytes) {
  npy::DType t = npy::DType::F32;
  switch (buffer.dtype) {
    case DType::F32:
      t = npy::DType::F32;
      break;
    case DType::Bf16:
    case DType::U16:
      t = npy::DType::U16;
      break;
    case DType::S32:
      t = npy::DType::S32;
      break;
    case DType::S8:
      t = npy::DType::S8;
      break;
    case DType::U8:
      t = npy::DType::U8;
      break;
    case DType::S16:
      t = npy::DType::S16;
      break;
    case DType::Pred:
      t = npy::DType::Bool;
      break;
    case DType::F16:
      t = npy::DType::F16;
      break;
    case DType::U32:
      t = npy::DType::U32;
      break;
    case DType::S64:
      t = npy::DType::S64;
      break;
    case DType::U64:
      t = npy::DType::U64;
      break;
  }
  npy::Array a = npy::makeArray(t, buffer.shape);
  if (a.data.size() != bytes.size())
    throw std::runtime_error(fmt::format("input '{}': {} bytes for {} expected", buffer.name,
                                         bytes.size(), a.data.size()));
  std::memcpy(a.data.data(), bytes.data(), bytes.size());
  return a;
}

namespace {

// Element i of an output array as a double (bf16: the uint16 bits decoded).
double valueAt(const npy::Array& a, int64_t i, bool bf16) {
  switch (a.dtype) {
    case npy::DType::F32:
      return a.as<float>()[i];
    case npy::DType::F64:
      return a.as<double>()[i];
    case npy::DType::U16:
      return bf16 ? double(bf16BitsToF32(a.as<uint16_t>()[i])) : double(a.as<uint16_t>()[i]);
    case npy::DType::S32:
      return a.as<int32_t>()[i];
    case npy::DType::S8:
      return a.as<int8_t>()[i];
    case npy::DType::U8:
    case npy::DType::Bool:
      return a.as<uint8_t>()[i];
    case npy::DType::S16:
      return a.as<int16_t>()[i];
    case npy::DType::S64:
      return double(a.as<int64_t>()[i]);
    case npy::DType::U32:
      return a.as<uint32_t>()[i];
    case npy::DType::U64:
      return double(a.as<uint64_t>()[i]);
    case npy::DType::F16:
      return f16BitsToF32(a.as<uint16_t>()[i]);
    default:
      return NAN;
  }
}

std::string typeText(const isa::BufferDesc& b) {
  std::string dims;
  for (size_t i = 0; i < b.shape.size(); ++i) dims += (i ? "," : "") + std::to_string(b.shape[i]);
  return fmt::format("{}[{}]", isa::dtypeName(b.dtype), dims);
}

}  // namespace

std::string OutputCheck::line() const {
  if (!problem.empty()) return fmt::format("{} {}: {}", name, type, problem);
  std::string verdict = mismatches == 0
                            ? "ok"
                            : fmt::format("{}{} of {} elements out of tolerance",
                                          ok() ? "" : "MISMATCH: ", mismatches, elements);
  if (roundingJudged)
    verdict += fmt::format(
        "; rms error against the module in f32: {:.3e}, the evaluator's {:.3e} (limit {:.3e}): {}",
        simRmsError, evalRmsError, roundingLimit, roundingOk ? "ok, bf16 rounding" : "MISMATCH");
  std::string worst =
      worstIndex >= 0 && !ok()
          ? fmt::format("; worst at element {}: {:.8g} vs {:.8g}", worstIndex, worstSim, worstRef)
          : "";
  return fmt::format(
      "{} {}: max abs error {:.3e}, max rel error {:.3e} (rtol {:.1e}, atol {:.2e}){}: {}", name,
      type, maxAbsError, maxRelError, rtol, atol, worst, verdict);
}

OutputCheck compareOutput(const isa::BufferDesc& buffer, const npy::Array& sim,
                          const npy::Array& ref, double rtolOverride) {
  OutputCheck c;
  c.name = buffer.name;
  c.type = typeText(buffer);
  c.elements = sim.numElements();
  if (ref.shape != buffer.shape) {
    c.problem = fmt::format("the reference result has shape {} but the program's output is {}",
                            npy::shapeString(ref.shape), npy::shapeString(buffer.shape));
    return c;
  }
  if (ref.numElements() != sim.numElements()) {
    c.problem = "element counts differ";
    return c;
  }
  const bool bf16 = buffer.dtype == DType::Bf16;
  const bool exact = !(buffer.dtype == DType::F32 || buffer.dtype == DType::F16 || bf16);
  // 64-bit integers do not fit a double: compare their bits.
  const bool wide = npy::dtypeSize(sim.dtype) == 8 && npy::dtypeSize(ref.dtype) == 8 &&
                    sim.dtype != npy::DType::F64 && ref.dtype != npy::DType::F64;
  c.rtol = exact ? 0 : rtolOverride >= 0 ? rtolOverride : bf16 ? 3e-2 : 2e-2;
  double sumSquares = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < c.elements; ++i) {
    double r = valueAt(ref, i, bf16);
    if (std::isfinite(r)) {
      sumSquares += r * r;
      ++finite;
    }
  }
  double rms = finite ? std::sqrt(sumSquares / double(finite)) : 0;
  c.atol = c.rtol * rms;
  double worstExcess = -1;
  for (int64_t i = 0; i < c.elements; ++i) {
    double s = valueAt(sim, i, bf16), r = valueAt(ref, i, bf16);
    bool bad;
    double diff = 0;
    if (std::isnan(s) || std::isnan(r)) {
      bad = std::isnan(s) != std::isnan(r);
      diff = bad ? INFINITY : 0;
    } else if (std::isinf(s) || std::isinf(r)) {
      bad = s != r;
      diff = bad ? INFINITY : 0;
    } else {
      diff = std::fabs(s - r);
      bad = diff > c.atol + c.rtol * std::fabs(r);
    }
    if (wide && sim.as<uint64_t>()[i] != ref.as<uint64_t>()[i]) {
      bad = true;
      diff = std::max(diff, 1.0);
    }
    double rel = diff == 0 ? 0 : diff / std::max(std::fabs(r), 1e-30);
    c.maxAbsError = std::max(c.maxAbsError, diff);
    c.maxRelError = std::max(c.maxRelError, rel);
    double excess = diff - (c.atol + c.rtol * std::fabs(r));
    if (excess > worstExcess || (std::isnan(excess) && worstExcess < 0)) {
      worstExcess = std::isnan(excess) ? INFINITY : excess;
      c.worstIndex = i;
      c.worstSim = s;
      c.worstRef = r;
    }
    if (bad) ++c.mismatches;
    if (bad && !std::isfinite(diff)) ++c.nonFiniteMismatches;
  }
  return c;
}

void judgeBf16Rounding(OutputCheck& c, const isa::BufferDesc& buffer, const npy::Array& sim,
                       const npy::Array& ref, const npy::Array& exact) {
  if (!c.wantsRoundingJudgement() || exact.numElements() != c.elements) return;
  const bool bf16 = buffer.dtype == DType::Bf16;
  double simSq = 0, evalSq = 0, exactSq = 0;
  for (int64_t i = 0; i < c.elements; ++i) {
    double e = valueAt(exact, i, false);
    double s = valueAt(sim, i, bf16) - e, r = valueAt(ref, i, bf16) - e;
    if (!std::isfinite(e) || !std::isfinite(s) || !std::isfinite(r)) return;
    simSq += s * s;
    evalSq += r * r;
    exactSq += e * e;
  }
  double n = double(std::max<int64_t>(c.elements, 1));
  c.evalRmsError = std::sqrt(evalSq / n);
  // No bf16 on the evaluator's path to this output: nothing to judge.
  if (c.evalRmsError == 0) return;
  c.roundingJudged = true;
  c.simRmsError = std::sqrt(simSq / n);
  c.roundingLimit = 1.5 * c.evalRmsError + std::ldexp(std::sqrt(exactSq / n), -9);
  c.roundingOk = c.simRmsError <= c.roundingLimit;
}

std::map<std::string, npy::Array> evaluateReference(
    const std::string& hloPath, const std::map<int64_t, driver::ParameterArray>& parameters,
    const std::vector<std::string>& outputNames, const std::string& passes, bool mxuDots) {
  driver::EvaluateOptions options;
  options.mxuDotPrecision = mxuDots;
  driver::EvaluateFileResult r = driver::evaluateHloFile(hloPath, parameters, passes, options);
  if (!r.ok()) {
    fmt::print(stderr, "{}\n", r.error);
    throw std::runtime_error(fmt::format("the reference evaluator{} failed on {} (errors above)",
                                         passes.empty() ? "" : " (after passes " + passes + ")",
                                         hloPath));
  }
  std::map<std::string, npy::Array> out;
  for (const std::string& name : outputNames) {
    auto it = std::find_if(r.outputs.begin(), r.outputs.end(),
                           [&](const auto& o) { return o.first == name; });
    if (it == r.outputs.end())
      throw std::runtime_error(
          fmt::format("the reference evaluator computed no result '{}' for {}", name, hloPath));
    out[name] = std::move(it->second);
  }
  return out;
}

}  // namespace tpusim::sim
