// Packed int8 weights in HBM (LowerOptions::packedWeights): the layout
// assignment of entry parameters. On the chip int8 weights live in HBM in the
// tiled layout the MXU consumes; here that is the s8x2 layout
// (isa::BufferDesc::pairRows): rows k and k + S of each 2S-row chunk side by
// side, so the copy of a paired weight block (kernels/codegen/PairPack.h) is
// one sequential HBM stream instead of two streams S rows apart, which the
// HBM's banks serve worse (docs/performance.md, branch `int8pack`).
//
// The same layout serves the dequantized bf16 x s8 dots, which widen each
// weight in registers: a VMEM word then holds the two weights of rows k and
// k + S, and each push unpacks its byte (docs/performance.md, `int8pack2`).
//
// The rule (no shape or name cases): an entry parameter that is one s8 array,
// not donated to an output, whose every user is an instruction lowered to a
// kernel that reads it only through inputs the code generator can read
// packed (codegen::packedLayoutFits). Anything else that reads the bytes (a
// DMA op, a bitcast, the root, a collective, a call) keeps it row-major. The
// host converts at the boundary (tpusim's --input, random inputs, outputs).
#include <fmt/format.h>

#include "compiler/lower/CannotLower.h"
#include "compiler/lower/buffers/InputOutputAlias.h"
#include "compiler/lower/module/ModuleLowerer.h"
#include "kernels/codegen/PairPack.h"

namespace tpusim::lower {

using hlo::HloInstruction;

void ModuleLowerer::choosePackedLayouts() {
  const hlo::HloComputation* entry = module_.entry();
  std::vector<InputOutputAlias> aliases;
  try {
    aliases = inputOutputAliases(module_);
  } catch (const std::invalid_argument&) {
    return;  // reported by finishEntry
  }
  for (int64_t n = 0; n < entry->parameterCount(); ++n) {
    const HloInstruction* p = entry->parameter(n);
    if (!p || !p->shape().isArray() || p->shape().type != hlo::PrimitiveType::S8 ||
        p->shape().dims.size() != 2 || p->users().empty())
      continue;
    bool donated = false;
    for (const InputOutputAlias& a : aliases) donated |= a.parameter == n;
    if (donated || p == entry->root()) continue;
    // Every kernel input that reads p, and whether all of them can read it packed.
    std::vector<std::pair<kernels::llo::Kernel*, size_t>> reads;
    bool fits = true;
    for (const HloInstruction* u : p->users()) {
      if (!fits) break;
      if (!isKernelInstruction(*u)) {
        fits = false;
        break;
      }
      auto it = prepared_.find(u);
      if (it == prepared_.end()) {
        try {
          it = prepared_.emplace(u, lowerToKernel(*u, cg_)).first;
        } catch (const CannotLower&) {
          fits = false;  // reported when its turn comes
          break;
        }
      }
      LoweredKernel& lk = it->second;
      for (size_t i = 0; i < lk.inputOperand.size(); ++i) {
        if (u->operand(lk.inputOperand[i]) != p) continue;
        if (!kernels::codegen::packedLayoutFits(*lk.kernel, int(i), cg_)) fits = false;
        reads.emplace_back(lk.kernel.get(), i);
      }
    }
    if (!fits || reads.empty()) continue;
    for (auto& [k, i] : reads) k->inputs[i].pairRows = cg_.mxuSize;
    packedParams_[p] = cg_.mxuSize;
  }
}

}  // namespace tpusim::lower
