#include "compiler/passes/FusionCostModel.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "compiler/lower/buffers/ShapeBytes.h"
#include "compiler/passes/FusionRules.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

int64_t roundUp(int64_t x, int64_t m) { return (std::max<int64_t>(x, 1) + m - 1) / m * m; }

int64_t product(const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
  int64_t p = 1;
  for (int64_t d : which)
    if (d >= 0 && d < static_cast<int64_t>(dims.size())) p *= dims[static_cast<size_t>(d)];
  return p;
}

bool isFreeView(const HloInstruction& i) {
  switch (i.opcode()) {
    case HloOpcode::Bitcast:
    case HloOpcode::Reshape:
    case HloOpcode::Broadcast:
    case HloOpcode::Constant:
    case HloOpcode::Iota:
    case HloOpcode::Parameter:
      return true;
    default:
      return false;
  }
}

// Instructions from which `from` is computed inside the body (including it).
std::unordered_set<const HloInstruction*> cone(const HloInstruction* from) {
  std::unordered_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack{from};
  while (!stack.empty()) {
    const HloInstruction* i = stack.back();
    stack.pop_back();
    if (!seen.insert(i).second) continue;
    for (const HloInstruction* op : i->operands()) stack.push_back(op);
  }
  return seen;
}

// A block of `elems` elements of `s`'s type, but never more than `s` itself.
int64_t valueBlock(const Shape& s, int64_t elems) {
  int64_t whole = lower::shapeBytes(s);
  return std::min(whole, elems * std::max<int64_t>(1, lower::elementBytes(s.type)));
}

}  // namespace

DotBlocks dotBlocks(const HloInstruction& dot, const lower::TargetDescription& target) {
  DotBlocks b;
  if (dot.operandCount() != 2) return b;
  const Shape& lhs = dot.operand(0)->shape();
  const Shape& rhs = dot.operand(1)->shape();
  const hlo::DotDimensionNumbers& d = dot.attrs().dot;
  b.k = product(lhs.dims, d.lhsContracting);
  b.batch = product(lhs.dims, d.lhsBatch);
  int64_t perBatch = std::max<int64_t>(1, b.k * b.batch);
  b.m = std::max<int64_t>(1, lhs.elementCount() / perBatch);
  b.n = std::max<int64_t>(1, rhs.elementCount() / perBatch);
  const int64_t vmem = std::max<int64_t>(target.vmemBytes, 1);
  int64_t pref = std::max<int64_t>(128, 4 * target.mxuSize);
  b.bm = std::min(roundUp(b.m, 8), pref);
  b.bn = std::min(roundUp(b.n, 128), pref);
  b.bk = std::min(roundUp(b.k, 128), pref);
  auto core = [&] { return (b.bm * b.bk + b.bk * b.bn) * 4 + b.bm * b.bn * 4; };
  while (core() > vmem / 8 && (b.bm > 8 || b.bn > 128 || b.bk > 128)) {
    if (b.bk >= b.bn && b.bk >= b.bm && b.bk > 128)
      b.bk /= 2;
    else if (b.bn >= b.bm && b.bn > 128)
      b.bn /= 2;
    else if (b.bm > 8)
      b.bm /= 2;
    else if (b.bk > 128)
      b.bk /= 2;
    else
      b.bn /= 2;
  }
  return b;
}

VmemEstimate estimateFusionVmem(const hlo::HloComputation& body,
                                const lower::TargetDescription& target) {
  VmemEstimate e;
  const HloInstruction* root = body.root();
  if (!root || !root->shape().isArray()) return e;
  const HloInstruction* hero = fusionHero(body);
  const int64_t vmem = std::max<int64_t>(target.vmemBytes, 1);

  if (hero && hero->opcode() == HloOpcode::Dot && hero->operandCount() == 2) {
    DotBlocks b = dotBlocks(*hero, target);
    const int64_t bm = b.bm, bn = b.bn, bk = b.bk;
    // Sibling dots (SiblingDots.h) share the LHS: an RHS block and an
    // accumulator each.
    std::vector<const HloInstruction*> dots;
    for (const auto& i : body.instructions())
      if (i->opcode() == HloOpcode::Dot && i->operandCount() == 2) dots.push_back(i.get());
    e.block = fmt::format("bm={} bn={} bk={}{}", bm, bn, bk,
                          dots.size() > 1 ? fmt::format(", {} sibling dots", dots.size()) : "");
    std::unordered_set<const HloInstruction*> lhsCone, rhsCone;
    for (const HloInstruction* d : dots) {
      for (const HloInstruction* i : cone(d->operand(0))) lhsCone.insert(i);
      for (const HloInstruction* i : cone(d->operand(1))) rhsCone.insert(i);
    }
    auto isDot = [&](const HloInstruction* i) {
      return std::find(dots.begin(), dots.end(), i) != dots.end();
    };
    auto blockOf = [&](const HloInstruction* i) {
      if (lhsCone.count(i)) return valueBlock(i->shape(), bm * bk);
      if (rhsCone.count(i)) return valueBlock(i->shape(), bk * bn);
      return valueBlock(i->shape(), bm * bn);
    };
    for (const auto& i : body.instructions()) {
      if (i->opcode() == HloOpcode::Parameter)
        e.inputBytes += 2 * blockOf(i.get());
      else if (i.get() == root)
        e.outputBytes += 2 * valueBlock(i->shape(), bm * bn);
      else if (!isFreeView(*i) && !isDot(i.get()))
        e.intermediateBytes += blockOf(i.get());
    }
    e.accumulatorBytes = static_cast<int64_t>(dots.size()) * bm * bn * 4;
  } else {
    // The index space the kernel walks: the reduce's input, else the output.
    const Shape& space = hero && hero->opcode() == HloOpcode::Reduce
                             ? hero->operand(0)->shape()
                             : (hero ? hero->shape() : root->shape());
    int64_t r = space.rank();
    int64_t lanes = r >= 1 ? space.dims[static_cast<size_t>(r - 1)] : 1;
    int64_t rows = r >= 2 ? space.dims[static_cast<size_t>(r - 2)] : 1;
    bool wholeRow = false;
    if (hero && hero->opcode() == HloOpcode::Reduce && r >= 1) {
      const auto& dims = hero->dimensions();
      wholeRow = std::find(dims.begin(), dims.end(), r - 1) != dims.end();
    }
    int64_t bl = wholeRow ? roundUp(lanes, 128) : std::min(roundUp(lanes, 128), int64_t{1024});
    int64_t br = std::min(roundUp(rows, 8), int64_t{512});
    while (br * bl * 4 > vmem / 32 && br > 8) br /= 2;
    while (!wholeRow && br * bl * 4 > vmem / 32 && bl > 128) bl /= 2;
    e.block = fmt::format("{}x{}{}", br, bl, wholeRow ? " (whole rows)" : "");
    int64_t elems = br * bl;
    for (const auto& i : body.instructions()) {
      if (i->opcode() == HloOpcode::Parameter)
        e.inputBytes += 2 * valueBlock(i->shape(), elems);
      else if (i.get() == root)
        e.outputBytes += 2 * valueBlock(i->shape(), elems);
      else if (!isFreeView(*i))
        e.intermediateBytes += valueBlock(i->shape(), elems);
    }
  }
  e.bytes = e.inputBytes + e.outputBytes + e.intermediateBytes + e.accumulatorBytes;
  return e;
}

// Elements the VPU touches for an array of shape s: it computes whole (8, 128)
// tiles, so a [1, K] row (decode) costs 8 rows.
static double paddedTileElements(const Shape& s) {
  double tiles = 1;
  for (int64_t d = 0; d < s.rank(); ++d) {
    int64_t n = s.dims[static_cast<size_t>(d)];
    if (d == s.rank() - 1) n = roundUp(n, 128);
    if (d == s.rank() - 2) n = roundUp(n, 8);
    tiles *= static_cast<double>(n);
  }
  return tiles;
}

bool recomputeBeatsHbmRoundTrip(const HloInstruction& producer, int64_t weight, int64_t copies,
                                bool resultStaysInHbm, const lower::TargetDescription& target) {
  const Shape& s = producer.shape();
  if (!s.isArray() || target.clockHz <= 0 || target.hbmBytesPerSecond <= 0) return false;
  const double tiles = paddedTileElements(s);
  const double elements = static_cast<double>(s.elementCount());
  const double lanesPerCycle =
      static_cast<double>(std::max<int64_t>(1, target.chip.core.valu_slots)) * 1024.0;
  const double recomputeCycles = static_cast<double>(weight * copies) * tiles / lanesPerCycle;
  const double bytes = elements * static_cast<double>(std::max(1, hlo::bitWidth(s.type) / 8));
  const double hbmBytesPerCycle = target.hbmBytesPerSecond / target.clockHz;
  const double roundTripCycles = (resultStaysInHbm ? 1.0 : 2.0) * bytes / hbmBytesPerCycle;
  return recomputeCycles <= roundTripCycles;
}

bool prologueConvertBeatsHbmRoundTrip(const HloInstruction& convert, int64_t copies,
                                      const lower::TargetDescription& target) {
  const Shape& s = convert.shape();
  if (!s.isArray() || target.clockHz <= 0 || target.hbmBytesPerSecond <= 0) return true;
  const double tiles = paddedTileElements(s);
  const double storesPerCycle =
      static_cast<double>(std::max<int64_t>(1, target.chip.core.vst_slots)) * 1024.0;
  const double copyCycles = static_cast<double>(copies) * tiles / storesPerCycle;
  const double bytes = static_cast<double>(s.elementCount()) *
                       static_cast<double>(std::max(1, hlo::bitWidth(s.type) / 8));
  // A kernel of its own also costs its exposed first read and last write and
  // the dot's wait for it: a decode row's convert measured 200-320 cycles as a
  // kernel on v5e, and splitting 24 of them off their norms cost 1.2% of the
  // tiny decode step.
  constexpr double kSeparateKernelCycles = 1000;
  const double roundTripCycles =
      2.0 * bytes / (target.hbmBytesPerSecond / target.clockHz) + kSeparateKernelCycles;
  return copyCycles <= roundTripCycles;
}

}  // namespace tpusim::passes
