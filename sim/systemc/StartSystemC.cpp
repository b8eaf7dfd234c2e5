#include "sim/systemc/StartSystemC.h"

#if defined(__SANITIZE_ADDRESS__)
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace tpusim::sim {

namespace {

#if defined(__SANITIZE_ADDRESS__)
// An annotated "switch" from the stack ASan has on record to the thread's own
// stack, made while already running on it: start and finish back to back.
void resyncSanitizerStack() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* bottom = nullptr;
  size_t size = 0;
  const bool ok = pthread_attr_getstack(&attr, &bottom, &size) == 0;
  pthread_attr_destroy(&attr);
  if (!ok || !bottom || !size) return;
  void* fakeStack = nullptr;
  __sanitizer_start_switch_fiber(&fakeStack, bottom, size);
  __sanitizer_finish_switch_fiber(fakeStack, nullptr, nullptr);
}
#else
void resyncSanitizerStack() {}
#endif

// Resyncs on the way out, normal or by exception.
struct StackResync {
  ~StackResync() { resyncSanitizerStack(); }
};

}  // namespace

void startSystemC() {
  StackResync resync;
  sc_core::sc_start();
}

void startSystemC(const sc_core::sc_time& duration) {
  StackResync resync;
  sc_core::sc_start(duration);
}

}  // namespace tpusim::sim
