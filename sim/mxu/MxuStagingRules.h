// The program-error rules of the MXU that do not depend on timing (isa/README.md,
// "MXU"): how many wpushes fit between latches and which dtypes may meet.
// Shared by MxuModel and the RTL wrapper so both report the same faults.
#pragma once

#include <optional>

#include "sim/mxu/MxuUnit.h"

namespace tpusim::sim {

class MxuStagingRules {
 public:
  // packedInt8: the MXU has the packed int8 mode (mxu.int8_rate 2).
  MxuStagingRules(int n, bool packedInt8) : n_(n), packedInt8_(packedInt8) {}

  static int pushesPerTile(int n) { return (n + 7) / 8; }

  // The index p of the next wpush since the last latch.
  int pushIndex() const { return pushes_; }

  // ok() = the command is legal; otherwise the fault (inline: once per command).
  MxuStatus checkPush(MxuDtype dtype) const {
    if (dtype == MxuDtype::S8x2 && !packedInt8_) return {MxuFaultKind::NoPackedInt8, false, dtype};
    if (pushes_ >= pushesPerTile(n_))
      return {MxuFaultKind::StagingOverflow, false, dtype, dtype, pushes_ + 1, n_};
    if (staging_ && *staging_ != dtype) return {MxuFaultKind::PushDtype, false, dtype, *staging_};
    return {};
  }
  MxuStatus checkMatmul(MxuDtype dtype) const {
    if (dtype == MxuDtype::S8x2 && !packedInt8_) return {MxuFaultKind::NoPackedInt8, true, dtype};
    if (active_ && *active_ != dtype) return {MxuFaultKind::MatmulDtype, true, dtype, *active_};
    return {};
  }

  void onPush(MxuDtype dtype) {
    ++pushes_;
    staging_ = dtype;
  }
  void onLatch() {
    pushes_ = 0;
    active_ = staging_;
    staging_.reset();
  }

  // The dtype of the active weights; empty before the first latch of pushed
  // weights (all-zero weights match either dtype).
  std::optional<MxuDtype> activeDtype() const { return active_; }

 private:
  int n_;
  bool packedInt8_;
  int pushes_ = 0;
  std::optional<MxuDtype> staging_;
  std::optional<MxuDtype> active_;
};

}  // namespace tpusim::sim
