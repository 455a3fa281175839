// Shared fixture for mixture-of-experts tests: Mixtral 8x7B's layers on a small expert layout.
#pragma once

#include <string>
#include <vector>

#include "proto/config.pb.h"
#include "sim/config/run_config.h"

namespace cs::testing_support {

// Mixtral 8x7B's layer shapes on 4 layers: PP 2 x DP 8 with EP 4 (EDP 2) on 16 H100s, with
// `more` overrides after these.
inline clustersim::RunConfig small_mixtral(std::vector<std::string> more = {}) {
  std::vector<std::string> o = {"model.num_layers=4",
                                "model.seq_length=1024",
                                "parallel.pp=2",
                                "parallel.virtual_stages=1",
                                "parallel.schedule=ONE_F_ONE_B",
                                "parallel.dp=8",
                                "parallel.ep=4",
                                "parallel.global_batch_size=32",
                                "cluster.num_gpus=16"};
  o.insert(o.end(), more.begin(), more.end());
  return load_run_config("", "mixtral-8x7b", o).config;
}

}  // namespace cs::testing_support
