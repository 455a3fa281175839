#include "sim/cli/mpi_world.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "sim/cli/commands.h"

#ifdef CLUSTERSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace cs::cli {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

namespace {

// Launched by mpirun (Open MPI sets OMPI_*, PMIx-based launchers PMIX_RANK, others PMI_SIZE)?
bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_SIZE");
}

}  // namespace

World::World(bool join_mpi) {
  if (!join_mpi || !launched_by_mpi()) return;
#ifdef CLUSTERSIM_HAVE_MPI
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  active_ = true;
#else
  if (env_int("OMPI_COMM_WORLD_SIZE", 1) > 1)
    throw UsageError("launched by mpirun, but this clustersim was built without MPI");
#endif
}

World::~World() {
#ifdef CLUSTERSIM_HAVE_MPI
  if (active_) MPI_Finalize();
#endif
}

int World::local_jobs() const {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1)));
}

std::vector<std::string> World::gather(const std::string& mine) const {
  if (size_ == 1) return {mine};
  std::vector<std::string> all;
#ifdef CLUSTERSIM_HAVE_MPI
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(static_cast<std::size_t>(size_), 0);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string buffer(rank_ == 0 ? static_cast<std::size_t>(total) : 0, '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, buffer.data(), lengths.data(), offsets.data(),
              MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank_ == 0)
    for (int r = 0; r < size_; ++r) all.push_back(buffer.substr(offsets[r], lengths[r]));
#endif
  return all;
}

void World::abort() const {
#ifdef CLUSTERSIM_HAVE_MPI
  if (active_ && size_ > 1) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::exit(1);
}

}  // namespace cs::cli
