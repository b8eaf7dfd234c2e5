// How the cases of one tpusim-batch command are spread over processes. Alone
// (the usual case) this process runs every case. Launched by mpirun in a build
// with MPI, rank r runs the cases i with i % ranks == r (each with its own -j
// children) and rank 0 gathers every result, in manifest order, and writes
// the table; each case's result depends only on the case, so the table is the
// same as a local run's.
#pragma once

#include <cstddef>
#include <vector>

#include "sim/tools/tpusim-batch/CaseResult.h"

namespace tpusim::batch {

class Distribution {
 public:
  // Starts MPI when this process was launched by mpirun (and the build has MPI).
  // Throws when launched by mpirun with several ranks in a build without MPI.
  static Distribution start(int* argc, char*** argv);
  static bool built();  // whether this build has MPI

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  bool root() const { return rank_ == 0; }
  // The indices (of `count` cases) this rank runs.
  std::vector<size_t> mine(size_t count) const;
  // At the root: every result in index order (`mine` are this rank's, in the
  // order of mine(count)); elsewhere an empty vector.
  std::vector<CaseResult> gather(const std::vector<CaseResult>& mine, size_t count) const;
  // The root's exit status, given to every rank; ends MPI.
  int finish(int status) const;
  // After an error on this rank: ends every rank (MPI_Abort), so none waits
  // for results that will not come. Alone: returns the status.
  int abortAll(int status) const;

 private:
  int rank_ = 0, ranks_ = 1;
  bool mpi_ = false;
};

}  // namespace tpusim::batch
