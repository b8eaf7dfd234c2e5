// The program-error rules of the MXU that do not depend on timing (isa/README.md,
// "MXU"): how many wpushes fit between latches and which dtypes may meet.
// Shared by MxuModel and the RTL wrapper so both report the same faults.
#pragma once

#include <optional>
#include <string>

#include "sim/mxu/MxuUnit.h"

namespace tpusim::sim {

class MxuStagingRules {
 public:
  // packedInt8: the MXU has the packed int8 mode (mxu.int8_rate 2).
  MxuStagingRules(int n, bool packedInt8) : n_(n), packedInt8_(packedInt8) {}

  static int pushesPerTile(int n) { return (n + 7) / 8; }

  // The index p of the next wpush since the last latch.
  int pushIndex() const { return pushes_; }

  // Empty string = the command is legal; otherwise the fault message.
  std::string checkPush(MxuDtype dtype) const;
  std::string checkMatmul(MxuDtype dtype) const;

  void onPush(MxuDtype dtype);
  void onLatch();

  // The dtype of the active weights; empty before the first latch of pushed
  // weights (all-zero weights match either dtype).
  std::optional<MxuDtype> activeDtype() const { return active_; }

 private:
  std::string checkPacked(MxuDtype dtype, const char* what) const;

  int n_;
  bool packedInt8_;
  int pushes_ = 0;
  std::optional<MxuDtype> staging_;
  std::optional<MxuDtype> active_;
};

}  // namespace tpusim::sim
