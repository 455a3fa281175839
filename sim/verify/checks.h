// `clustersim verify`: the parallel-training math executed on real numbers with Eigen — sharded
// matmuls, data-parallel and accumulated gradients, collective schedules, ZeRO-sharded Adam.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cs::verify {

struct CheckResult {
  std::string name;
  std::string detail;  // what was compared, with sizes
  double max_error = 0;
  double tolerance = 0;
  bool passed() const { return max_error <= tolerance; }
};

// `broken` runs a deliberately wrong variant of the same computation (shards concatenated in the
// wrong order, gradients summed instead of averaged, the accumulation not rescaled, a ZeRO shard
// stepped with the wrong Adam step count, a reduce-scatter passed off as an all-reduce), which
// must fail: the checks can tell right from wrong, not just run.
struct CheckOptions {
  bool broken = false;
  uint64_t seed = 1;
};

// Y = X·W with W split by columns over t ranks: each rank computes X·W_i and the column blocks
// concatenate to Y (Megatron's column-parallel linear).
CheckResult check_column_parallel(int32_t t, const CheckOptions& options = {});
// W split by rows and X by columns over t ranks: the partial products X_i·W_i sum to Y
// (row-parallel linear; the sum is its all-reduce).
CheckResult check_row_parallel(int32_t t, const CheckOptions& options = {});
// Linear regression, mean squared error: the mean of d equal shards' gradients equals the
// full-batch gradient.
CheckResult check_data_parallel_gradient(int32_t d, const CheckOptions& options = {});
// A two-layer tanh MLP: K microbatch gradients summed and divided by K equal the gradient of the
// K-times-larger batch.
CheckResult check_gradient_accumulation(int32_t k, const CheckOptions& options = {});
// Adam over n ZeRO shards (each rank keeps m, v and master weights of its slice only, then the
// slices are all-gathered) equals unsharded Adam, over several steps.
CheckResult check_zero_adam(int32_t n, const CheckOptions& options = {});
// Every (algorithm, op) form of the algorithm table (coll/algorithms/registry.h) for group sizes
// `sizes`, run on data in FIFO, LIFO and random orders, against the collective's definition
// (coll/verify.h).
std::vector<CheckResult> check_collectives(const std::vector<int32_t>& sizes,
                                           const CheckOptions& options = {});

// All of the above at a few sizes.
std::vector<CheckResult> run_all_checks(const CheckOptions& options = {});

}  // namespace cs::verify
