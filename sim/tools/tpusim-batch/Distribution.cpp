#include "sim/tools/tpusim-batch/Distribution.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#ifdef TPUSIM_BATCH_MPI
// The C API only: OpenMPI's deprecated C++ bindings need a library we do not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace tpusim::batch {

namespace {

// The world size mpirun (OpenMPI, or a PMI launcher) gives its processes; 0 when not launched so.
int launcherRanks() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

}  // namespace

bool Distribution::built() {
#ifdef TPUSIM_BATCH_MPI
  return true;
#else
  return false;
#endif
}

Distribution Distribution::start(int* argc, char*** argv) {
  Distribution d;
  int launched = launcherRanks();
  if (launched == 0) return d;
#ifdef TPUSIM_BATCH_MPI
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &d.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &d.ranks_);
  d.mpi_ = true;
#else
  if (launched > 1)
    throw std::runtime_error(
        "launched by mpirun with several ranks, but this tpusim-batch was built without MPI "
        "(install libopenmpi-dev, reconfigure, rebuild); every rank would run every case");
#endif
  return d;
}

std::vector<size_t> Distribution::mine(size_t count) const {
  std::vector<size_t> out;
  for (size_t i = size_t(rank_); i < count; i += size_t(ranks_)) out.push_back(i);
  return out;
}

std::vector<CaseResult> Distribution::gather(const std::vector<CaseResult>& mine,
                                             size_t count) const {
  std::vector<CaseResult> all(count);
  if (!mpi_) {
    std::vector<size_t> idx = this->mine(count);
    for (size_t k = 0; k < idx.size(); ++k) all[idx[k]] = mine[k];
    return all;
  }
#ifdef TPUSIM_BATCH_MPI
  // Each rank sends its results as one JSON text; the root places them by index.
  nlohmann::json j = nlohmann::json::array();
  for (const CaseResult& r : mine) j.push_back(resultToJson(r));
  std::string text = j.dump();
  int length = int(text.size());
  std::vector<int> lengths(static_cast<size_t>(ranks_)), offsets(static_cast<size_t>(ranks_));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string received;
  if (root()) {
    int total = 0;
    for (int r = 0; r < ranks_; ++r) {
      offsets[size_t(r)] = total;
      total += lengths[size_t(r)];
    }
    received.resize(size_t(total));
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, received.data(), lengths.data(), offsets.data(),
              MPI_CHAR, 0, MPI_COMM_WORLD);
  if (!root()) return {};
  for (int r = 0; r < ranks_; ++r) {
    nlohmann::json part = nlohmann::json::parse(
        received.substr(size_t(offsets[size_t(r)]), size_t(lengths[size_t(r)])));
    size_t k = 0;
    for (size_t i = size_t(r); i < count; i += size_t(ranks_))
      all[i] = resultFromJson(part.at(k++));
  }
#endif
  return all;
}

int Distribution::finish(int status) const {
#ifdef TPUSIM_BATCH_MPI
  if (mpi_) {
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
  }
#endif
  return status;
}

int Distribution::abortAll(int status) const {
#ifdef TPUSIM_BATCH_MPI
  if (mpi_ && ranks_ > 1) MPI_Abort(MPI_COMM_WORLD, status);
  if (mpi_) MPI_Finalize();
#endif
  return status;
}

}  // namespace tpusim::batch
