// The MPI world of a process that may or may not have been started by mpirun, for subcommands
// that spread independent simulations over ranks (sweep, plan).
#pragma once

#include <string>
#include <vector>

namespace cs::cli {

// An integer environment variable, or `fallback` when unset or empty.
int env_int(const char* name, int fallback);

// One rank of one when not launched by mpirun; MPI is initialised only when launched by it, so a
// plain run never pays for MPI nor needs a launcher. Only the main thread calls MPI. With
// `join_mpi` false (a library caller) it is one rank of one even under mpirun.
class World {
 public:
  explicit World(bool join_mpi);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Threads each local rank should use so that the ranks on one machine share its cores.
  int local_jobs() const;

  // Rank 0 receives every rank's text, in rank order; the others get an empty list.
  std::vector<std::string> gather(const std::string& mine) const;

  // A failure on one rank would leave the others waiting in gather() forever.
  [[noreturn]] void abort() const;

 private:
  int rank_ = 0, size_ = 1;
  bool active_ = false;
};

}  // namespace cs::cli
