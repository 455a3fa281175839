// Runs a schedule on real numbers (one Eigen vector per rank) to check it computes its collective.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "sim/coll/schedule.h"

namespace cs::coll {

// Which action runs next among those allowed. Every message has two actions: its start (the
// sender's slice is copied out) and its completion (the copy lands at the receiver); a start is
// allowed once all the message's dependencies have completed, a completion once it started. Any
// such order is one a real network could produce, so a correct schedule gives the same result
// (up to float summation order) for all of them, and a missing dependency shows up as a stale
// slice in some of them.
enum class ExecOrder : uint8_t {
  kFifo,    // oldest allowed action first: breadth-first, like lockstep hardware
  kLifo,    // newest first: runs one chain as far as it goes before touching the others
  kRandom,  // uniformly random among the allowed actions, from a seed
};

// Buffers hold num_units() · elems_per_unit values each, one buffer per rank; they are updated in
// place. Throws std::logic_error if some message never becomes allowed.
void execute_on_data(const Schedule& schedule, std::vector<Eigen::VectorXd>& buffers,
                     int elems_per_unit, ExecOrder order, uint64_t seed = 0);

// Inputs and the collective's result computed directly from its definition (collective.h), in the
// schedule's unit grid: shard / block r of the buffer is units [r·U/n, (r+1)·U/n) (of the send
// or receive half where those are distinct). Values the collective does not define as input are
// random too, so that a missing write cannot pass by luck.
struct DataCase {
  int elems_per_unit = 1;
  std::vector<Eigen::VectorXd> initial;
  std::vector<Eigen::VectorXd> expected;
  std::vector<std::pair<uint32_t, uint32_t>> output_units;  // per rank: [begin, end) to compare
};
DataCase make_data_case(const Schedule& schedule, int elems_per_unit, uint64_t seed);

// Largest |result − expected| over every rank's output units.
double max_output_error(const DataCase& data, const std::vector<Eigen::VectorXd>& result);

}  // namespace cs::coll
