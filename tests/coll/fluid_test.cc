// Fluid collectives against their message schedules: the same time on an idle network.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "sim/coll/fluid.h"
#include "sim/coll/nccl_test_case.h"
#include "sim/net/topology_builder.h"

namespace cs::coll {
namespace {

net::Topology cluster(const std::string& name, int32_t gpus) {
  return net::build_topology(net::resolve_topology(name), gpus, name);
}

TEST(Fluid, Explore) {
  for (const std::string topo : {"dgx-h100", "llama3-24k"}) {
    for (const int32_t gpus : {8, 16, 64, 128}) {
      const auto t = cluster(topo, gpus);
      for (const Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather}) {
        for (const Bytes size : {64 * kKiB, 1 * kMiB, 16 * kMiB, 256 * kMiB, 1 * kGiB}) {
          const auto msg = run_nccl_test(t, op, size, gpus);
          const auto flu = run_nccl_test(t, op, size, gpus, {}, Algorithm::kAuto,
                                         net::NetworkMode::kCongestionAware, true);
          std::fprintf(stderr, "%s %d %s %lld %s fluid=%d msg %.3f us fluid %.3f us diff %.3f%%\n",
                       topo.c_str(), gpus, std::string(to_string(op)).c_str(), (long long)size,
                       std::string(to_string(msg.key.algo)).c_str(), fluid_supported(msg.key),
                       msg.time.as_seconds() * 1e6, flu.time.as_seconds() * 1e6,
                       100 * (flu.time.as_seconds() / msg.time.as_seconds() - 1));
        }
      }
    }
  }
}

}  // namespace
}  // namespace cs::coll
