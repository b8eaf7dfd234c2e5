// Interpret mode of an SPMD kernel on several devices. Each device's grid run
// has its own host thread, but only the device holding the turn runs: the
// others sleep in DeviceLink::block. The turn passes only when a device waits
// for a semaphore that is short, or ends, to the next device in id order that
// can run, so the interleaving (and every result) depends on the kernel alone,
// never on host scheduling.
#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "kernels/dsl/GridRunner.h"

namespace tpusim::kernels::dsl {

namespace {

// Thrown into a sleeping device when another device ended the run.
struct Aborted {};

class Devices {
 public:
  Devices(const llo::Kernel& k, const std::vector<std::vector<HostArray>>& inputs,
          const InterpretOptions& o) {
    int n = int(inputs.size());
    for (int d = 0; d < n; ++d) {
      runs_.push_back(makeGridRunner(k, inputs[size_t(d)], o));
      links_.push_back(std::make_unique<Link>(this, d));
      runs_.back()->setDeviceLink(links_.back().get());
      state_.push_back(State{});
    }
    for (int d = 0; d < n; ++d) {
      std::vector<llo::Buffer*> b = runs_[size_t(d)]->buffers();
      for (size_t i = 0; i < b.size(); ++i) index_[b[i]] = i;
      buffers_.push_back(std::move(b));
    }
  }

  std::vector<InterpretResult> run() {
    const size_t n = runs_.size();
    std::vector<InterpretResult> results(n);
    std::vector<std::thread> threads;
    for (size_t d = 0; d < n; ++d)
      threads.emplace_back([this, d, &results] { deviceMain(int(d), results[d]); });
    {
      std::lock_guard<std::mutex> lock(m_);
      turn_ = 0;
    }
    cv_.notify_all();
    for (auto& t : threads) t.join();
    if (error_) throw llo::InterpretError(*error_);
    return results;
  }

 private:
  enum class Status { Ready, Waiting, Done };
  struct State {
    Status status = Status::Ready;
    llo::Buffer* sem = nullptr;
    int64_t index = 0, value = 0;
    std::string what;
  };

  class Link : public llo::DeviceLink {
   public:
    Link(Devices* all, int id) : all_(all), id_(id) {}
    int deviceId() const override { return id_; }
    int deviceCount() const override { return int(all_->runs_.size()); }
    llo::Buffer* peer(llo::Buffer* local, int device) override {
      auto it = all_->index_.find(local);
      if (it == all_->index_.end()) return nullptr;
      return all_->buffers_.at(size_t(device)).at(it->second);
    }
    void block(llo::Buffer* sem, int64_t index, int64_t value, const std::string& what) override {
      all_->block(id_, sem, index, value, what);
    }

   private:
    Devices* all_;
    int id_;
  };

  std::vector<std::unique_ptr<GridRunner>> runs_;
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<std::vector<llo::Buffer*>> buffers_;
  std::unordered_map<llo::Buffer*, size_t> index_;  // every device's buffers
  std::vector<State> state_;
  std::mutex m_;
  std::condition_variable cv_;
  int turn_ = -1;
  bool stop_ = false;
  std::optional<std::string> error_;

  bool canRun(int d) const {
    const State& s = state_[size_t(d)];
    return s.status == Status::Ready ||
           (s.status == Status::Waiting && s.sem->semaphores[size_t(s.index)] >= s.value);
  }

  // Passes the turn on from `from` (which waits or has ended); m_ held.
  void handOff(int from) {
    const int n = int(runs_.size());
    for (int k = 1; k <= n; ++k) {
      int d = (from + k) % n;
      if (canRun(d)) {
        turn_ = d;
        cv_.notify_all();
        return;
      }
    }
    bool allDone = true;
    for (const State& s : state_) allDone = allDone && s.status == Status::Done;
    if (!allDone) fail(deadlockReport());
    turn_ = -1;
    cv_.notify_all();
  }

  void fail(std::string message) {
    if (!error_) error_ = std::move(message);
    stop_ = true;
    cv_.notify_all();
  }

  std::string deadlockReport() const {
    std::string s =
        "deadlock: every device that has not finished waits for a semaphore that no device can "
        "signal any more (interpret mode completes copies at once, so nothing is in flight):";
    for (size_t d = 0; d < state_.size(); ++d) {
      const State& st = state_[d];
      if (st.status == Status::Done)
        s += fmt::format("\n  device {}: finished", d);
      else
        s += fmt::format("\n  device {}: waits for semaphore {} to reach {} (it holds {})", d,
                         st.what, st.value, st.sem->semaphores[size_t(st.index)]);
    }
    return s;
  }

  // Sleeps until device `d` has the turn; throws Aborted when the run stopped.
  void awaitTurn(std::unique_lock<std::mutex>& lock, int d) {
    cv_.wait(lock, [&] { return stop_ || turn_ == d; });
    if (stop_) throw Aborted{};
  }

  void block(int d, llo::Buffer* sem, int64_t index, int64_t value, const std::string& what) {
    std::unique_lock<std::mutex> lock(m_);
    state_[size_t(d)] = State{Status::Waiting, sem, index, value, what};
    handOff(d);
    awaitTurn(lock, d);
    state_[size_t(d)].status = Status::Ready;
  }

  void deviceMain(int d, InterpretResult& out) {
    try {
      {
        std::unique_lock<std::mutex> lock(m_);
        awaitTurn(lock, d);
      }
      out = runs_[size_t(d)]->run();
      std::lock_guard<std::mutex> lock(m_);
      state_[size_t(d)].status = Status::Done;
      handOff(d);
    } catch (const Aborted&) {
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(m_);
      fail(fmt::format("device {}: {}", d, e.what()));
    }
  }
};

}  // namespace

std::vector<InterpretResult> interpretDevices(const llo::Kernel& kernel,
                                              const std::vector<std::vector<HostArray>>& inputs,
                                              const InterpretOptions& options) {
  if (inputs.empty()) throw llo::InterpretError("interpretDevices: no devices");
  Devices devices(kernel, inputs, options);
  return devices.run();
}

}  // namespace tpusim::kernels::dsl
