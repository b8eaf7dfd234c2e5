// The memory viewer: HBM usage over the program's order from the buffer
// assignment's live ranges (XProf's "memory viewer"): bytes live at each
// step, the peak, and the buffers live at the peak by kind.
#pragma once

#include "sim/prof/Profile.h"

namespace tpusim::prof {

// Given m.steps, m.buffers and m.capacityBytes: fills liveBytes, the peak
// (first step with the most live bytes), heapPeakBytes, atPeak, atPeakByKind.
void finishMemory(MemoryProfile& m);

}  // namespace tpusim::prof
