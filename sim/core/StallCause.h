// Why a bundle could not issue. Every stalled cycle is counted under exactly
// one cause: that of the first blocking op in slot order (isa/README.md).
#pragma once

#include <cstdint>

namespace tpusim::sim {

enum class StallCause : uint8_t {
  OperandNotReady,    // a source (or WAW destination) register, or a VMEM row just stored
  MxuResultNotReady,  // mxu.pop of a slot whose last mm/mma has not finished
  MxuBusy,            // MXU weight or LHS port still occupied
  XluBusy,            // every XLU (or the transpose unit) occupied
  VpuBusy,            // the transcendental path (EUP) occupied
  SyncWait,           // sync.wait on a flag below its value, fence, halt waiting for DMAs
  VmemBankConflict,   // k rows of one bank in one bundle: k - 1 extra cycles
  DmaQueueFull,       // the DMA queue holds its preset limit of descriptors
  Branch,             // taken-branch penalty
};
constexpr int kNumStallCauses = 9;

// Stable snake_case names used in stats JSON, the summary and --strict errors.
inline const char* stallCauseName(StallCause c) {
  switch (c) {
    case StallCause::OperandNotReady:
      return "operand_not_ready";
    case StallCause::MxuResultNotReady:
      return "mxu_result_not_ready";
    case StallCause::MxuBusy:
      return "mxu_busy";
    case StallCause::XluBusy:
      return "xlu_busy";
    case StallCause::VpuBusy:
      return "vpu_busy";
    case StallCause::SyncWait:
      return "sync_wait";
    case StallCause::VmemBankConflict:
      return "vmem_bank_conflict";
    case StallCause::DmaQueueFull:
      return "dma_queue_full";
    case StallCause::Branch:
      return "branch";
  }
  return "?";
}

// Hazards --strict reports as errors: the compiler should have scheduled around them.
inline bool isStrictHazard(StallCause c) {
  return c == StallCause::OperandNotReady || c == StallCause::MxuResultNotReady ||
         c == StallCause::MxuBusy || c == StallCause::XluBusy ||
         c == StallCause::VmemBankConflict || c == StallCause::VpuBusy;
}

}  // namespace tpusim::sim
