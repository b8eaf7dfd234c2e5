// Semantics of the cross-lane unit (slot "xlu" in isa/Opcodes.def):
// rotates, lane gather, lane reductions (the fixed pairwise tree of
// isa/README.md) and the 128x128 transpose unit. No timing here: the core
// applies the XLU occupancy rules (see "VPU and XLU timing" in isa/README.md).
#pragma once

#include <cstdint>
#include <string>

#include "isa/Isa.h"
#include "sim/common/Vreg.h"

namespace tpusim::sim {

// Rotates, gather and reductions. `a` and `b` are the first and second vector
// sources, `scalar` the scalar source, `imm` the Uimm8. Returns false if `op`
// is not one of these XLU opcodes (the transpose ops go to TransposeUnit).
bool executeXluPermuteOrReduce(isa::Opcode op, const VregData& a, const VregData& b,
                               uint32_t scalar, uint32_t imm, VregData& d);

// The transpose unit: 16 pushes of 8 rows fill a 128x128 block, then 16 pops
// return the rows of its transpose, 8 at a time. Misuse is a fault that the
// caller reports (push into a full block, pop before the block is complete).
class TransposeUnit {
 public:
  static constexpr int kPushes = isa::kLanes / isa::kSublanes;  // 16

  // In timing-only mode the data is not stored, only the counters advance.
  explicit TransposeUnit(bool keepData) : keepData_(keepData) {}

  // Returns false and sets *error on misuse.
  bool push(const VregData& rows, std::string* error);
  bool pop(VregData& rows, std::string* error);
  int pushed() const { return pushed_; }
  int popped() const { return popped_; }

 private:
  bool keepData_;
  int pushed_ = 0, popped_ = 0;
  // block_[r][c] for r = 8 * push + sublane, c = lane.
  std::array<uint32_t, isa::kLanes * isa::kLanes> block_{};
};

}  // namespace tpusim::sim
