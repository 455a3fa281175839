// The host launching kernels (ExecutorOptions::host_per_kernel): short kernels wait for their
// launch, long ones let the host run ahead.
#include <gtest/gtest.h>

#include "sim/compute/kernel.h"
#include "sim/exec/executor.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"

namespace cs::exec {
namespace {

using workload::Op;

Op kernel_op(workload::Program& program, Time duration) {
  program.kernels.push_back({compute::memory_bound("add", 3 << 20)});
  Op o;
  o.duration = duration;
  o.kernel = static_cast<uint32_t>(program.kernels.size() - 1);
  return o;
}

struct OneRank {
  Time step;
  RankStats stats;
};

OneRank run(const workload::Program& program, Time host_per_kernel,
            Time host_per_layer_pass = Time{}) {
  const auto desc = net::resolve_topology("dgx-h100");
  const net::Topology topology = net::build_topology(desc, 1, "dgx-h100");
  net::Routing routing(topology);
  Simulator sim;
  auto network = net::make_network(net::NetworkMode::kIdeal, sim, topology, routing);
  const workload::Layout layout(1, 1, 1, 1);
  const std::vector<workload::Program> programs{program};
  ExecutorOptions options;
  options.host_per_kernel = host_per_kernel;
  options.host_per_layer_pass = host_per_layer_pass;
  Executor exec(sim, *network, topology, layout, programs, std::move(options));
  exec.start();
  sim.run();
  EXPECT_TRUE(exec.all_finished());
  return {exec.step_end(), exec.rank_stats()[0]};
}

// Ten 2 us kernels, one of 100 us, ten of 2 us, each launched 10 us after the one before.
workload::Program short_long_short() {
  workload::Program program;
  for (int i = 0; i < 10; ++i) program.add(kernel_op(program, Time::us(2)));
  program.add(kernel_op(program, Time::us(100)));
  for (int i = 0; i < 10; ++i) program.add(kernel_op(program, Time::us(2)));
  return program;
}

TEST(HostDispatch, ShortKernelsRunAtTheHostsPaceAndLongOnesLetItRunAhead) {
  const auto program = short_long_short();
  // Kernel i is launched at 10 (i + 1) us: the first eleven each wait for their launch (the
  // long one starts at 110 us), the ten after it were launched while it ran and follow it
  // back to back: 110 + 100 + 10 x 2 = 230 us.
  const OneRank host = run(program, Time::us(10));
  EXPECT_EQ(host.step, Time::us(230));
  EXPECT_EQ(host.stats.compute, Time::us(140));
  EXPECT_EQ(host.stats.host_wait, Time::us(90));  // 10 before the first, 8 before each of ten
  EXPECT_EQ(host.stats.pipeline_wait, Time{});    // the wait is the host's, not a bubble
  const OneRank ahead = run(program, Time{});
  EXPECT_EQ(ahead.step, Time::us(140));
  EXPECT_EQ(ahead.stats.host_wait, Time{});
}

// Two layers' forwards, then their backwards, two 1 us kernels each; only the hooks cost the
// host (50 us as each layer pass begins): each pass starts 50 us after the one before ended.
TEST(HostDispatch, EachLayerPassPaysItsHooksAsItBegins) {
  workload::Program program;
  for (const auto& [layer, cls] :
       {std::pair{0, workload::OpClass::kForward}, std::pair{1, workload::OpClass::kForward},
        std::pair{1, workload::OpClass::kBackward}, std::pair{0, workload::OpClass::kBackward}}) {
    for (int i = 0; i < 2; ++i) {
      Op o = kernel_op(program, Time::us(1));
      o.layer = layer;
      o.op_class = cls;
      program.add(o);
    }
  }
  const OneRank hooks = run(program, Time{}, Time::us(50));
  EXPECT_EQ(hooks.step, Time::us(202));  // launched at 50, 100, 150, 200; the last ends at 202
  EXPECT_EQ(hooks.stats.host_wait, Time::us(50 + 3 * 48));
  EXPECT_EQ(run(program, Time{}).step, Time::us(8));
}

TEST(HostDispatch, WorkWithoutAKernelIsNotLaunchedByTheHost) {
  workload::Program program;
  Op host_work;  // CPU Adam: compute with no GPU kernel
  host_work.duration = Time::us(5);
  for (int i = 0; i < 4; ++i) program.add(host_work);
  EXPECT_EQ(run(program, Time::us(10)).step, Time::us(20));
}

}  // namespace
}  // namespace cs::exec
