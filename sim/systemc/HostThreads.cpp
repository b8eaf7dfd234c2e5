#include "sim/systemc/HostThreads.h"

#include <ctime>
#include <stdexcept>
#include <string>

namespace tpusim::sim {

double threadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

HostThreads::HostThreads(sc_core::sc_module_name name, int threads) : sc_core::sc_module(name) {
  if (threads < 1)
    throw std::invalid_argument("host threads: " + std::to_string(threads) +
                                " (expected at least 1)");
  SC_METHOD(join);
  sensitive << batchReady_;
  dont_initialize();
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

HostThreads::~HostThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void HostThreads::run(HostJob& job) {
  batch_.push_back(&job);
  batchReady_.notify(sc_core::SC_ZERO_TIME);
  sc_core::wait(job.done);
  if (job.error) {
    std::exception_ptr e = job.error;
    job.error = nullptr;
    std::rethrow_exception(e);
  }
}

void HostThreads::execute(HostJob& job) {
  try {
    job.work();
  } catch (...) {
    job.error = std::current_exception();
  }
}

void HostThreads::join() {
  std::vector<HostJob*> jobs;
  jobs.swap(batch_);
  ++batches_;
  jobs_ += jobs.size();
  if (workers_.empty() || jobs.size() == 1) {
    for (HostJob* j : jobs) execute(*j);
  } else {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.assign(jobs.begin(), jobs.end());
      pending_ = jobs.size();
    }
    work_.notify_all();
    // This thread takes jobs too, then waits for those the workers took.
    while (true) {
      HostJob* j;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (queue_.empty()) break;
        j = queue_.front();
        queue_.pop_front();
      }
      execute(*j);
      std::lock_guard<std::mutex> lock(mutex_);
      --pending_;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [this] { return pending_ == 0; });
  }
  // In hand-over order, whichever thread ran which job.
  for (HostJob* j : jobs) j->done.notify();
}

void HostThreads::workerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    HostJob* j = queue_.front();
    queue_.pop_front();
    lock.unlock();
    execute(*j);
    lock.lock();
    if (--pending_ == 0) finished_.notify_one();
  }
}

}  // namespace tpusim::sim
