#include "sim/mxu/MxuStagingRules.h"

#include <fmt/format.h>

namespace tpusim::sim {

const char* mxuDtypeName(MxuDtype d) {
  switch (d) {
    case MxuDtype::Bf16:
      return "bf16";
    case MxuDtype::S8:
      return "s8";
    case MxuDtype::S8x2:
      return "s8x2";
  }
  return "?";
}

std::string MxuStagingRules::checkPacked(MxuDtype dtype, const char* what) const {
  if (dtype == MxuDtype::S8x2 && !packedInt8_)
    return fmt::format(
        "MXU {}.s8x2: this chip's MXU has no packed int8 mode (mxu.int8_rate is 1: int8 runs at "
        "the bf16 rate; use {}.s8)",
        what, what);
  return {};
}

std::string MxuStagingRules::checkPush(MxuDtype dtype) const {
  if (std::string f = checkPacked(dtype, "wpush"); !f.empty()) return f;
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
  if (std::string f = checkPacked(dtype, "mm"); !f.empty()) return f;
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
