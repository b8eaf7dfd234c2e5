#include "kernels/codegen/PairPack.h"

#include <fmt/format.h>

#include "isa/Program.h"
#include "kernels/codegen/CopyPlan.h"
#include "kernels/codegen/RegAlloc.h"

namespace tpusim::kernels::codegen {

namespace {

// Whether every use of `ref` in `b` (and its regions) is the right-hand side
// of a matmul LowerMatmul packs (s8 x s8 with int8 rate 2) or widens (bf16 x
// s8: each push unpacks its byte of the pair), deeper than one MXU tile, at a
// constant row that is a multiple of 2S; `uses` counts them.
bool onlyPackedRhs(const llo::Block& b, const llo::Value* ref, int64_t S, int int8Rate, int* uses) {
  for (const auto& op : b.ops) {
    for (const llo::Block& r : op->regions)
      if (!onlyPackedRhs(r, ref, S, int8Rate, uses)) return false;
    bool used = false;
    for (const llo::Value* v : op->operands) used |= v == ref;
    if (!used) continue;
    if (op->kind != llo::OpKind::Matmul) return false;
    auto views = llo::opViews(*op);
    if (views[0].ref == ref || views[1].ref == ref || views[2].ref != ref) return false;
    const bool s8 = views[1].ref->type.dtype == llo::DType::S8;
    const bool widened = views[1].ref->type.dtype == llo::DType::Bf16;  // LowerMatmul's widenRhs
    if (!(s8 ? int8Rate >= 2 : widened) || op->ints[4] != 0 || op->ints[2] <= S) return false;
    const llo::Value* row = views[2].indices.at(0);
    if (!row->def || row->def->kind != llo::OpKind::SConst || row->def->ints.at(0) % (2 * S))
      return false;
    ++*uses;
  }
  return true;
}

// The rule above, for the array as the body reads it (whatever its layout).
int64_t ruleRows(const llo::Kernel& k, int input, const TargetInfo& t) {
  const int64_t S = t.mxuSize;
  if (input < k.numScalarPrefetch || !k.body) return 0;
  const llo::ArrayOperand& a = k.inputs.at(size_t(input));
  const llo::BlockMapping& m = k.inMaps.at(size_t(input - k.numScalarPrefetch));
  if (a.dtype != llo::DType::S8 || m.space != llo::MemSpace::Vmem || m.blockShape.size() != 2)
    return 0;
  // The pair offset (S rows of the HBM array) is a 32-bit descriptor word.
  const int64_t offset = S * elementStrides(a.hbmType()).at(0);
  if (offset <= 0 || offset > int64_t(UINT32_MAX)) return 0;
  const llo::Value* arg = k.body->body.args.at(size_t(input));
  int uses = 0;
  return onlyPackedRhs(k.body->body, arg, S, t.int8Rate, &uses) && uses > 0 ? S : 0;
}

}  // namespace

bool packedLayoutFits(const llo::Kernel& k, int input, const TargetInfo& t) {
  const int64_t S = t.mxuSize;
  if (input < k.numScalarPrefetch || input >= int64_t(k.inputs.size())) return false;
  const llo::ArrayOperand& a = k.inputs.at(size_t(input));
  const llo::BlockMapping& m = k.inMaps.at(size_t(input - k.numScalarPrefetch));
  if (!a.strides.empty() || a.shape.size() != 2 || a.shape[0] % (2 * S) ||
      a.shape[1] % int64_t(isa::kPairLayoutLanes) || m.blockShape.size() != 2 ||
      m.blockShape[0] % (2 * S) || m.blockShape[1] % int64_t(isa::kPairLayoutLanes) ||
      int64_t(isa::kPairLayoutLanes) != llo::kLanes)
    return false;
  return ruleRows(k, input, t) == S;
}

int64_t pairedRows(const llo::Kernel& k, int input, const TargetInfo& t) {
  const int64_t S = t.mxuSize;
  const int64_t packed = input < int64_t(k.inputs.size()) ? k.inputs.at(size_t(input)).pairRows : 0;
  if (packed) {
    // Stored packed (tpuc's layout choice, packedLayoutFits): the body must
    // read it paired, in blocks of whole chunks, or the bytes mean nothing.
    if (!packedLayoutFits(k, input, t) || packed != S)
      throw CodegenError(fmt::format(
          "input '{}' is stored in the packed s8x2 layout (pair rows {}), but kernel '{}' "
          "does not read it as paired s8 weights in blocks of whole {}-row chunks",
          k.inputs.at(size_t(input)).name, packed, k.name, 2 * S));
    return S;
  }
  return ruleRows(k, input, t);
}

}  // namespace tpusim::kernels::codegen
