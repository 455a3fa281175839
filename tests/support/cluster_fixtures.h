// Shared fixtures for runs of several jobs: a small oversubscribed cluster and a small job.
#pragma once

#include <string>

#include "tests/support/test_helpers.h"

namespace cs::testing_support {

// Racks of 4 servers x 8 GPUs under one ToR each, 4:1 oversubscribed to 4 spines (8 racks):
// jobs inside one rack never meet, jobs spread over racks share the racks' uplinks.
inline std::string oversubscribed_topology() {
  return temp_file("oversubscribed.textproto",
                   "name: \"oversubscribed\"\n"
                   "gpu: \"h100\"\n"
                   "load_balancing { mode: MULTI_FLOW_ECMP flows_per_message: 4 }\n"
                   "tiered {\n"
                   "  node { gpus_per_node: 8 nvlink_bandwidth_gbytes: 450 nvlink_latency_ns: 250\n"
                   "         nics_per_gpu: 1 nic_bandwidth_gbits: 400 pcie_bandwidth_gbytes: 63\n"
                   "         pcie_latency_ns: 300 }\n"
                   "  tiers { name: \"tor\" group_size: 4 switches_per_group: 1\n"
                   "          link_latency_ns: 350 oversubscription: 4 }\n"
                   "  tiers { name: \"spine\" group_size: 8 switches_per_group: 4\n"
                   "          link_latency_ns: 600 }\n"
                   "}\n");
}

// A 4-layer, communication-bound job of TP 8 x DP `dp` (8 dp GPUs) on `topology`, in a file.
inline std::string small_job_file(const std::string& name, const std::string& topology, int dp = 4,
                                  int layers = 4) {
  return temp_file(name + ".textproto",
                   "name: \"" + name + "\"\n" + "model { num_layers: " + std::to_string(layers) +
                       " hidden_size: 2048 num_heads: 16 ffn_hidden_size: 8192 vocab_size: 32000 "
                       "seq_length: 2048 }\n"
                       "parallel { tp: 8 pp: 1 dp: " +
                       std::to_string(dp) + " global_batch_size: " + std::to_string(dp) +
                       " }\n"
                       "cluster { topology: \"" +
                       topology + "\" }\n");
}

}  // namespace cs::testing_support
