// The fast MXU model: ready cycles computed from a handful of timestamps (never
// stepped per cycle), results computed when an mm issues and made visible to
// pops at the cycle isa/README.md gives. Cosimulated against hw/mxu.
#pragma once

#include <deque>
#include <vector>

#include "sim/mxu/MxuStagingRules.h"
#include "sim/mxu/MxuUnit.h"

namespace tpusim::sim {

class MxuModel final : public MxuUnit {
 public:
  // packedInt8: the packed int8 mode (s8x2) exists (mxu.int8_rate 2).
  MxuModel(int n, int slots, bool functional, bool packedInt8 = false);

  int size() const override { return n_; }
  int slots() const override { return slots_; }
  bool functional() const override { return functional_; }
  const char* kindName() const override { return "model"; }

  uint64_t weightPushReadyAt(bool transposed) override;
  uint64_t latchReadyAt() override;
  uint64_t matmulReadyAt() override;
  uint64_t popReadyAt(int slot) override;

  MxuStatus weightPush(uint64_t cycle, VregIn rows, bool transposed, MxuDtype dtype) override;
  MxuStatus latch(uint64_t cycle) override;
  MxuStatus matmul(uint64_t cycle, VregIn lhs, MxuDtype dtype, int slot, bool accumulate) override;
  MxuStatus pop(uint64_t cycle, int slot, VregOut out) override;
  void finish(uint64_t) override {}

  const MxuStats& stats() const override { return stats_; }
  void setResultObserver(MxuResultObserver observer) override { observer_ = std::move(observer); }

 private:
  // A slot's contents after an mm issued at `issue`; pops at cycles > issue see it.
  struct Pending {
    int64_t issue;
    std::vector<uint32_t> values;
  };
  struct Slot {
    std::vector<uint32_t> committed;  // 8 x N, what a pop reads once nothing is pending
    std::deque<Pending> pending;
    int64_t lastIssue;    // issue cycle of the last mm to this slot
    int64_t readyAt;      // ready cycle of that mm
    int64_t prevReadyAt;  // ready cycle of the mm before it
  };

  int64_t now() const { return lastIssue_; }
  void checkReady(const char* what, uint64_t cycle, int64_t readyAt) const;
  void noteIssue(uint64_t cycle);
  uint32_t lane(VregIn v, int sublane, int element) const;
  void prepareActive();
  void buildF32View();
  void buildS32View();
  void computeRows(VregIn lhs, MxuDtype dtype, std::vector<uint32_t>& result);

  int n_, slots_;
  bool functional_;
  MxuStagingRules rules_;
  MxuStats stats_;
  MxuResultObserver observer_;

  int64_t lastIssue_;
  int64_t lastPush_, lastLatch_, lastMm_, lastPop_;
  std::vector<Slot> slotState_;
  std::vector<std::vector<uint32_t>> spare_;  // retired slot buffers, reused by mm

  std::vector<uint16_t> staging_, active_;  // raw 16-bit weights, [k][n]
  std::vector<float> activeF32_;            // active weights as f32 (bf16 view)
  std::vector<int32_t> activeS32_;          // active weights as s32 (int8 view, low byte)
  std::vector<int32_t> activeHiS32_;        // the high byte as s32 (packed int8 view)
  bool f32View_ = false, s32View_ = false;  // the views below match active_
  std::vector<uint8_t> weightRowFinite_;    // per K row: no inf/NaN in the active weights
  std::vector<int> terms_;                  // K indices one LHS row adds (MxuRowKernels.h)
  std::vector<float> rowF32_, outF32_;
  std::vector<int32_t> rowS32_, rowHiS32_;
  std::vector<uint32_t> outHiS32_;
  std::vector<uint32_t> outS32_;
};

}  // namespace tpusim::sim
