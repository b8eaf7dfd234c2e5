#include "sim/mxu/MxuStagingRules.h"

#include <fmt/format.h>

namespace tpusim::sim {

const char* mxuDtypeName(MxuDtype d) { return d == MxuDtype::Bf16 ? "bf16" : "s8"; }

std::string MxuStagingRules::checkPush(MxuDtype dtype) const {
  if (pushes_ >= pushesPerTile(n_))
    return fmt::format(
        "MXU staging overflow: wpush number {} since the last latch, but an {}x{} array holds {} "
        "(ceil(N/8))",
        pushes_ + 1, n_, n_, pushesPerTile(n_));
  if (staging_ && *staging_ != dtype)
    return fmt::format(
        "MXU dtype mismatch: wpush.{} into a staging buffer that already holds {} weights",
        mxuDtypeName(dtype), mxuDtypeName(*staging_));
  return {};
}

std::string MxuStagingRules::checkMatmul(MxuDtype dtype) const {
  if (active_ && *active_ != dtype)
    return fmt::format("MXU dtype mismatch: mm.{} against active {} weights", mxuDtypeName(dtype),
                       mxuDtypeName(*active_));
  return {};
}

void MxuStagingRules::onPush(MxuDtype dtype) {
  ++pushes_;
  staging_ = dtype;
}

void MxuStagingRules::onLatch() {
  pushes_ = 0;
  active_ = staging_;
  staging_.reset();
}

}  // namespace tpusim::sim
