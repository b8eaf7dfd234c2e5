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

std::string MxuStatus::fault() const {
  const char* what = matmul ? "mm" : "wpush";
  switch (kind) {
    case MxuFaultKind::None:
      return {};
    case MxuFaultKind::NoPackedInt8:
      return fmt::format(
          "MXU {}.s8x2: this chip's MXU has no packed int8 mode (mxu.int8_rate is 1: int8 runs at "
          "the bf16 rate; use {}.s8)",
          what, what);
    case MxuFaultKind::StagingOverflow:
      return fmt::format(
          "MXU staging overflow: wpush number {} since the last latch, but an {}x{} array holds {} "
          "(ceil(N/8))",
          count, n, n, MxuStagingRules::pushesPerTile(n));
    case MxuFaultKind::PushDtype:
      return fmt::format(
          "MXU dtype mismatch: wpush.{} into a staging buffer that already holds {} weights",
          mxuDtypeName(dtype), mxuDtypeName(held));
    case MxuFaultKind::MatmulDtype:
      return fmt::format("MXU dtype mismatch: mm.{} against active {} weights", mxuDtypeName(dtype),
                         mxuDtypeName(held));
  }
  return "MXU fault";
}

}  // namespace tpusim::sim
