// Where MxuUnit implementations come from. The fast model is built in; RTL
// models register themselves here per array size (hw/mxu_wrapper does so from
// a static initializer, kept by linking tpusim_rtl_mxu_registered), so sim/
// never depends on hw/ at link time.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "sim/mxu/MxuUnit.h"

namespace tpusim::sim {

using RtlMxuFactory =
    std::function<std::unique_ptr<MxuUnit>(const target::MxuConfig&, bool functional)>;

// Makes RTL MXUs of size n, built with `slots` result slots, available to
// makeMxu() for presets with at most that many; a later registration of the
// same size replaces the earlier one.
void registerRtlMxuFactory(int n, int slots, RtlMxuFactory factory);

// The sizes registered so far, ascending.
std::vector<int> registeredRtlMxuSizes();

}  // namespace tpusim::sim
