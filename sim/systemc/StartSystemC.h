// sc_start for every tpusim run: the same call, plus, in an AddressSanitizer
// build, ASan's record of the calling thread's stack set back to that
// thread's own stack when SystemC returns (or throws).
//
// Why: libsystemc 2.3.4 tells ASan about some coroutine switches and not
// others, so after sc_start ASan can still believe the main thread runs on
// the last coroutine's stack. That stack is freed with its process when the
// chip is destroyed, and LeakSanitizer's exit-time scan of the main thread
// then reads unmapped memory and dies ("Tracer caught signal 11"): seen on
// core_fault_test's --strict fault, one run in four.
#pragma once

#include <systemc>

namespace tpusim::sim {

// sc_core::sc_start() / sc_core::sc_start(duration).
void startSystemC();
void startSystemC(const sc_core::sc_time& duration);

}  // namespace tpusim::sim
