#include "compiler/passes/FusionCostModel.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "compiler/lower/ShapeBytes.h"
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

VmemEstimate estimateFusionVmem(const hlo::HloComputation& body,
                                const lower::TargetDescription& target) {
  VmemEstimate e;
  const HloInstruction* root = body.root();
  if (!root || !root->shape().isArray()) return e;
  const HloInstruction* hero = fusionHero(body);
  const int64_t vmem = std::max<int64_t>(target.vmemBytes, 1);

  if (hero && hero->opcode() == HloOpcode::Dot && hero->operandCount() == 2) {
    const Shape& lhs = hero->operand(0)->shape();
    const Shape& rhs = hero->operand(1)->shape();
    const hlo::DotDimensionNumbers& d = hero->attrs().dot;
    int64_t k = product(lhs.dims, d.lhsContracting);
    int64_t lhsElems = lhs.elementCount(), rhsElems = rhs.elementCount();
    int64_t batch = product(lhs.dims, d.lhsBatch);
    int64_t m = std::max<int64_t>(1, lhsElems / std::max<int64_t>(1, k * batch));
    int64_t n = std::max<int64_t>(1, rhsElems / std::max<int64_t>(1, k * batch));
    int64_t pref = std::max<int64_t>(128, 4 * target.mxuSize);
    int64_t bm = std::min(roundUp(m, 8), pref), bn = std::min(roundUp(n, 128), pref),
            bk = std::min(roundUp(k, 128), pref);
    auto core = [&] { return (bm * bk + bk * bn) * 4 + bm * bn * 4; };
    while (core() > vmem / 8 && (bm > 8 || bn > 128 || bk > 128)) {
      if (bk >= bn && bk >= bm && bk > 128)
        bk /= 2;
      else if (bn >= bm && bn > 128)
        bn /= 2;
      else if (bm > 8)
        bm /= 2;
      else if (bk > 128)
        bk /= 2;
      else
        bn /= 2;
    }
    e.block = fmt::format("bm={} bn={} bk={}", bm, bn, bk);
    auto lhsCone = cone(hero->operand(0));
    auto rhsCone = cone(hero->operand(1));
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
      else if (!isFreeView(*i) && i.get() != hero)
        e.intermediateBytes += blockOf(i.get());
    }
    e.accumulatorBytes = bm * bn * 4;
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

}  // namespace tpusim::passes
