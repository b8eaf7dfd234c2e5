// Collectives across replicas. Every replica runs the module in its own thread
// with its own Interpreter; at each collective the replicas meet in a
// Rendezvous, hand over their operands, and each computes its own result from
// all of them with XLA's semantics (replica_groups honoured; an empty group
// list means one group of all replicas). Device ids in replica_groups and
// source_target_pairs are replica indices, whatever channel_id /
// use_global_device_ids say: the evaluator runs N devices, each both replica
// and partition N.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

class Rendezvous {
 public:
  explicit Rendezvous(int64_t replicas) : replicas_(replicas) {}

  // Replica `replica` contributes `value` to its `seq`-th collective (named
  // `key`, the instruction name) and waits for every replica; returns all
  // contributions indexed by replica, one copy shared by every replica (64
  // replicas each copying 64 operands took 10 GB). Throws EvalError if the
  // replicas reach different instructions or another replica failed.
  std::shared_ptr<const std::vector<Literal>> exchange(int64_t seq, int64_t replica,
                                                       const std::string& key, Literal value);
  // Wakes every waiting replica with an error (a replica failed).
  void abort(const std::string& why);

 private:
  struct Slot {
    std::string key;
    std::shared_ptr<std::vector<Literal>> values;
    int64_t deposited = 0, taken = 0;
  };
  int64_t replicas_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Slot> slots_;
  bool aborted_ = false;
  std::string why_;
};

}  // namespace tpusim::hlo::eval
