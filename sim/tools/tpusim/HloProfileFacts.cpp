#include "sim/tools/tpusim/HloProfileFacts.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloOpcode.h"

namespace tpusim::sim {
namespace {

void addFusedOpcodes(const hlo::HloInstruction& inst, std::vector<std::string>* out) {
  for (const hlo::HloComputation* c : inst.calledComputations()) {
    if (!c) continue;
    for (const auto& member : c->instructions()) {
      if (member->opcode() == hlo::HloOpcode::Fusion) {
        addFusedOpcodes(*member, out);
        continue;
      }
      if (member->opcode() == hlo::HloOpcode::Parameter) continue;
      out->push_back(std::string(hlo::opcodeName(member->opcode())));
    }
  }
}

// The collective a custom call of the SPMD lowering implements
// (compiler/lower/collectives/CollectiveLowering.h), so the profile counts it
// as a collective rather than a library kernel; "" for any other target.
std::string collectiveOfCustomCall(const hlo::HloInstruction& inst) {
  if (inst.opcode() != hlo::HloOpcode::CustomCall) return "";
  const std::string target = inst.attrs().customCallTarget.value_or("");
  static const std::pair<const char*, const char*> kCollectives[] = {
      {"tpusim$permute-start", "collective-permute-start"},
      {"tpusim$permute-done", "collective-permute-done"},
      {"tpusim$ring-permute", "collective-permute"},
      {"tpusim$ring-permute-start", "collective-permute-start"},
      {"tpusim$all-gather-start", "all-gather-start"},
      {"tpusim$all-gather-done", "all-gather-done"},
      {"tpusim$grid-reduce-scatter", "reduce-scatter"}};
  for (const auto& [t, op] : kCollectives)
    if (target == t) return op;
  return "";
}

}  // namespace

void addHloProfileFacts(const driver::CompileResult& compiled, prof::ProfileInputs* inputs) {
  if (!compiled.module) return;
  for (const auto& comp : compiled.module->computations())
    for (const auto& inst : comp->instructions()) {
      prof::HloOpFacts facts;
      facts.opcode = std::string(hlo::opcodeName(inst->opcode()));
      if (std::string c = collectiveOfCustomCall(*inst); !c.empty()) facts.opcode = c;
      if (inst->opcode() == hlo::HloOpcode::Fusion) addFusedOpcodes(*inst, &facts.fusedOpcodes);
      inputs->hloOps.emplace(inst->name(), std::move(facts));
    }

  const lower::BufferAssignment& a = compiled.lowered.buffers;
  prof::MemoryProfile& m = inputs->memory;
  m.present = true;
  m.capacityBytes = a.hbmCapacity;
  for (const hlo::HloInstruction* inst : a.schedule) m.steps.push_back(inst->name());
  for (const lower::HbmBuffer& b : a.buffers) {
    if (b.sharesBufferOf >= 0) continue;  // an in-place update: its operand's bytes
    prof::MemoryBuffer mb;
    mb.name = b.instruction ? b.instruction->name() : fmt::format("b{}", b.id);
    if (!b.tupleIndex.empty()) mb.name += fmt::format("{{{}}}", fmt::join(b.tupleIndex, ","));
    mb.kind = lower::bufferKindName(b.kind);
    mb.shape = b.kind == lower::HbmBuffer::Kind::Scratch ? "(temporaries of called computations)"
                                                         : b.shape.toString(false);
    mb.bytes = b.allocatedBytes;
    mb.offset = b.offset;
    mb.defineStep = b.defineStep;
    mb.lastUseStep = b.lastUseStep;
    m.buffers.push_back(mb);
  }
}

}  // namespace tpusim::sim
