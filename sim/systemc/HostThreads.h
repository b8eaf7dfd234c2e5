// Runs plain-C++ work of several SystemC processes on several host threads,
// with exactly the results of one thread.
//
// SystemC's kernel runs one process at a time. A process about to do a long
// stretch of work that touches only its own state (a TensorCore's bundles up
// to its next synchronisation, a chip's DMA and HBM advance) hands the stretch
// here with run(job) and waits for it. Jobs handed over in one delta cycle
// form a batch; in the next delta cycle a joiner method runs the batch on the
// pool, the kernel's own thread taking part and the kernel waiting, then
// notifies each job's process in the order the jobs were handed over.
//
// Why the cycles cannot depend on the thread count: the SystemC schedule
// (which process runs in which delta of which time, what it notifies) is the
// same for any number of threads, 1 included, since a job's process always
// waits for the joiner; and the jobs of a batch touch disjoint state, so the
// order they run in on the host changes nothing. Nothing else runs while a
// batch does (the kernel is blocked in the joiner).
#pragma once

#include <systemc>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tpusim::sim {

// CPU seconds the calling host thread has used (SystemC's thread: the part of
// a run that did not go to the pool, the bound on its wall time).
double threadCpuSeconds();

// One process's job, owned and reused by that process.
struct HostJob {
  std::function<void()> work;  // runs on some host thread; may throw
  sc_core::sc_event done;      // notified by the joiner when work has returned
  std::exception_ptr error;    // what work threw, rethrown by run()
};

class HostThreads : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(HostThreads);
  // `threads` >= 1 host threads in all (the kernel's thread is one of them).
  HostThreads(sc_core::sc_module_name name, int threads);
  ~HostThreads() override;

  int threads() const { return int(workers_.size()) + 1; }
  // From an SC_THREAD: runs job.work on the pool, returns when it has run
  // (after at least one delta cycle) and rethrows what it threw.
  void run(HostJob& job);

  // Batches run and jobs in them (a batch of one runs on the kernel's thread).
  uint64_t batches() const { return batches_; }
  uint64_t jobs() const { return jobs_; }

 private:
  void join();
  void workerLoop();
  void execute(HostJob& job);

  std::vector<HostJob*> batch_;  // handed over, waiting for the joiner
  sc_core::sc_event batchReady_;
  uint64_t batches_ = 0, jobs_ = 0;

  // The pool: jobs of the running batch not yet taken, and not yet finished.
  std::mutex mutex_;
  std::condition_variable work_, finished_;
  std::deque<HostJob*> queue_;
  size_t pending_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tpusim::sim
