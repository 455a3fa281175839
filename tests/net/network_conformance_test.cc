// One contract, every transfer model: the same cases run over each Network, as ns-3 runs one
// suite over every scheduler; what a model does differently is stated in its row, not skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/simulator.h"
#include "sim/net/network.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"

namespace cs::net {
// Named, not anonymous: the test binary is a unity build (see blackwell_topology_test.cc).
namespace network_conformance_test {

// How a model shares a bottleneck among transfers that cross it at once.
enum class Sharing {
  kFair,    // n equal transfers each get 1/n of it: each takes n times as long as alone
  kQueued,  // a GPU's or NIC's link passes equal ones on one after another: the k-th of n takes
            // k times as long as alone (AnalyticalNetwork's ports, queue_at)
  kFree,    // communication takes no time at all (IdealNetwork)
};

// One row per model: the factory's mode, the load balancing it runs under (the congestion-aware
// model routes and loads links differently under each, so each is a row of its own), and the
// properties the model states for itself.
struct Model {
  const char* name;
  NetworkMode mode;
  clustersim::LoadBalancing::Mode balancing;  // MODE_UNSET: the preset's (adaptive)
  int32_t flows_per_message;
  // path_latency() is the route's latency and alone_transfer_time() bytes over the route's
  // bottleneck (the alpha-beta closed form); otherwise both are zero.
  bool alpha_beta;
  Sharing sharing;
  // How far a paced fluid transfer (waits > 0) may round off its transfer time + waits: the
  // congestion-aware model paces it with a link of rate bytes / (time + waits), whose finish
  // time is rounded up to a whole picosecond once more.
  int64_t paced_rounding_ps;
};

constexpr auto kUnset = clustersim::LoadBalancing::MODE_UNSET;
const Model kModels[] = {
    {"congestion_aware_adaptive", NetworkMode::kCongestionAware, kUnset, 0, true, Sharing::kFair,
     2},
    {"congestion_aware_static_ecmp", NetworkMode::kCongestionAware,
     clustersim::LoadBalancing::STATIC_ECMP, 0, true, Sharing::kFair, 2},
    {"congestion_aware_multi_flow_ecmp", NetworkMode::kCongestionAware,
     clustersim::LoadBalancing::MULTI_FLOW_ECMP, 4, true, Sharing::kFair, 2},
    {"analytical", NetworkMode::kAnalytical, kUnset, 0, true, Sharing::kQueued, 0},
    {"ideal", NetworkMode::kIdeal, kUnset, 0, false, Sharing::kFree, 0},
};

// Completion times of transfers that share links are rounded to whole picoseconds once per rate
// change; this much is rounding, not physics.
constexpr int64_t kRoundingPs = 3;
constexpr Bytes kSize = 64 * kMiB;

// Two DGX H100 servers from the real preset: GPU pairs within a server cross NVLink, pairs on
// the same rail one leaf, pairs on different rails a leaf, a spine and a leaf.
Topology build_for(const Model& m) {
  clustersim::Topology desc = resolve_topology("dgx-h100");
  if (m.balancing != kUnset) {
    clustersim::LoadBalancing lb;
    lb.set_mode(m.balancing);
    lb.set_flows_per_message(m.flows_per_message);
    override_load_balancing(desc, lb, "conformance");
  }
  return build_topology(desc, 16, "dgx-h100");
}

// (source GPU, destination GPU): NVLink, one leaf, leaf-spine-leaf.
const std::pair<int32_t, int32_t> kPairs[] = {{0, 1}, {0, 8}, {0, 9}};

// A model on its topology, recording every done callback: when and how often it ran.
struct Trial {
  Simulator sim;
  Topology topo;
  Routing routing;
  std::unique_ptr<Network> net;
  std::vector<Time> sent_at, done_at;
  std::vector<int> calls;
  // What each send moved (fluid transfers: src = dst = -1).
  struct Sent {
    int32_t src = -1, dst = -1;
    Bytes bytes = 0;
  };
  std::vector<Sent> sent;
  std::vector<std::pair<Time, int>> order;  // (done time, id) in callback order

  explicit Trial(const Model& m)
      : topo(build_for(m)), routing(topo), net(make_network(m.mode, sim, topo, routing)) {}

  VertexId gpu(int32_t i) const { return topo.gpu(i); }
  int next_id(Time at) { return next_id(at, Sent{}); }
  int next_id(Time at, Sent what) {
    sent.push_back(what);
    sent_at.push_back(at);
    done_at.push_back(Time::max());
    calls.push_back(0);
    return static_cast<int>(calls.size()) - 1;
  }
  Network::Done recorder(int id) {
    return [this, id] {
      const auto i = static_cast<std::size_t>(id);
      ++calls[i];
      done_at[i] = sim.now();
      order.emplace_back(sim.now(), id);
    };
  }
  // Sends at `at`, from inside the simulation; returns the transfer's id.
  int send_at(Time at, int32_t src, int32_t dst, Bytes bytes) {
    const int id = next_id(at, {src, dst, bytes});
    sim.schedule_at(
        at, [this, id, src, dst, bytes] { net->send(gpu(src), gpu(dst), bytes, recorder(id)); });
    return id;
  }
  // `edges` and `slot` must live until the simulation has run.
  int fluid_at(Time at, const std::vector<FluidEdge>& edges, int32_t mirrors, Time waits,
               FluidPlanSlot* slot = nullptr) {
    const int id = next_id(at);
    sim.schedule_at(at, [this, id, &edges, mirrors, waits, slot] {
      net->send_fluid(edges, mirrors, waits, recorder(id), slot);
    });
    return id;
  }
  Time took(int id) const {
    const auto i = static_cast<std::size_t>(id);
    return done_at[i] - sent_at[i];
  }
  Time latency(int32_t src, int32_t dst) { return net->path_latency(gpu(src), gpu(dst)); }
  Time alone(int32_t src, int32_t dst, Bytes bytes, int32_t sharing = 1) {
    return net->alone_transfer_time(gpu(src), gpu(dst), static_cast<double>(bytes), sharing);
  }
  FluidEdge edge(int32_t src, int32_t dst, Bytes bytes) const {
    return {gpu(src), gpu(dst), static_cast<double>(bytes)};
  }
};

#define EXPECT_WITHIN_PS(actual, expected, ps)          \
  EXPECT_NEAR(static_cast<double>((actual).count_ps()), \
              static_cast<double>((expected).count_ps()), static_cast<double>(ps))

// gtest names a failing row by this.
void PrintTo(const Model& m, std::ostream* os) {
  *os << m.name;
}

class NetworkConformance : public ::testing::TestWithParam<Model> {
 protected:
  const Model& model() const { return GetParam(); }
};

// Latency and transfer time: the route's alpha-beta closed form, or nothing for a free network.
TEST_P(NetworkConformance, PathLatencyAndAloneTimeFollowTheModelsClosedForm) {
  Trial run(model());
  for (const auto& [src, dst] : kPairs) {
    const Route& route = run.routing.route(run.gpu(src), run.gpu(dst));
    EXPECT_EQ(run.latency(src, dst), model().alpha_beta ? route.latency : Time{});
    EXPECT_EQ(run.alone(src, dst, kSize),
              model().alpha_beta ? transfer_time(kSize, route.bottleneck) : Time{});
    EXPECT_EQ(run.latency(src, src), Time{});
    EXPECT_EQ(run.alone(src, src, kSize), Time{});
    EXPECT_EQ(run.alone(src, dst, 0), Time{});
  }
}

// A transfer alone on the network: its path latency plus its transfer time, from the send.
TEST_P(NetworkConformance, ALoneTransferTakesItsLatencyPlusItsAloneTime) {
  for (const auto& [src, dst] : kPairs) {
    Trial run(model());
    const int id = run.send_at(Time::us(3), src, dst, kSize);
    run.sim.run();
    EXPECT_EQ(run.took(id), run.latency(src, dst) + run.alone(src, dst, kSize))
        << src << " -> " << dst;
  }
}

// network.h: a message of zero bytes still pays the path latency; one to oneself completes at
// once (zero latency), whatever its size.
TEST_P(NetworkConformance, ZeroByteAndSelfTransfersComplete) {
  Trial run(model());
  const int zero = run.send_at(Time::us(1), 0, 9, 0);
  const int self = run.send_at(Time::us(1), 3, 3, kSize);
  const int self_zero = run.send_at(Time::us(2), 4, 4, 0);
  run.sim.run();
  EXPECT_EQ(run.took(zero), run.latency(0, 9));
  EXPECT_EQ(run.took(self), Time{});
  EXPECT_EQ(run.took(self_zero), Time{});
  for (int c : run.calls) EXPECT_EQ(c, 1);
  // A transfer without a callback is still carried and counted.
  run.sim.schedule_at(run.sim.now(), [&] { run.net->send(run.gpu(0), run.gpu(8), kSize, {}); });
  run.sim.run();
  EXPECT_EQ(run.net->stats().messages, 4u);
}

// Checks n transfers of kSize, sent at once from `sources` to `dst`, that share a bottleneck at
// the receiver's NIC (the bytes over the route's bottleneck are the same for each): what each
// takes against its lone time is the model's Sharing; the models that share fairly charge each
// what alone_transfer_time says for n sharers.
void expect_shared(const Model& model, const std::vector<int32_t>& sources, int32_t dst) {
  Trial run(model);
  const auto n = static_cast<int32_t>(sources.size());
  std::vector<int> ids;
  for (int32_t src : sources) ids.push_back(run.send_at(Time::us(1), src, dst, kSize));
  run.sim.run();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const int32_t src = sources[i];
    const Time took = run.took(ids[i]);
    const Time latency = run.latency(src, dst);
    const Time alone = run.alone(src, dst, kSize);
    SCOPED_TRACE(std::to_string(n) + " transfers, " + std::to_string(src) + " -> " +
                 std::to_string(dst));
    switch (model.sharing) {
      case Sharing::kFair:  // no earlier than n lone transfers one after another
        EXPECT_WITHIN_PS(took, latency + run.alone(src, dst, kSize, n), kRoundingPs);
        EXPECT_GE(took + Time::ps(kRoundingPs), latency + alone * n);
        break;
      case Sharing::kQueued:  // in the order sent; the last after all n, as alone() says for n
        EXPECT_WITHIN_PS(took, latency + alone * static_cast<int64_t>(i + 1), kRoundingPs);
        EXPECT_WITHIN_PS(run.alone(src, dst, kSize, n), alone * n, kRoundingPs);
        break;
      case Sharing::kFree:
        EXPECT_EQ(took, Time{});
        break;
    }
  }
}

// The same pair n times: they share every link of the route.
TEST_P(NetworkConformance, EqualTransfersOfOnePairShareItsBottleneck) {
  for (int32_t n : {2, 3, 8}) expect_shared(model(), std::vector<int32_t>(n, 0), 9);
}

// Incast: GPUs of one server, on different rails, into one GPU of another: they share only its
// NIC's link (the rest of their paths differ, some through a spine).
TEST_P(NetworkConformance, AnIncastSharesTheReceiversLink) {
  for (int32_t n : {2, 4, 7}) {
    std::vector<int32_t> sources;
    for (int32_t i = 0; i < n; ++i) sources.push_back(i);
    expect_shared(model(), sources, 8);
  }
}

// A random mix of transfers (self, zero-byte, NVLink and network, overlapping in time) and
// fluid transfers. Returns the run, finished.
std::unique_ptr<Trial> random_run(const Model& m, uint64_t seed,
                                  std::vector<std::vector<FluidEdge>>& fluid_edges) {
  auto run = std::make_unique<Trial>(m);
  std::mt19937_64 rng(seed);
  const auto gpus = static_cast<int32_t>(run->topo.num_gpus());
  fluid_edges.assign(20, {});
  for (auto& edges : fluid_edges) {
    for (int e = 0; e < 4; ++e) {
      edges.push_back(run->edge(static_cast<int32_t>(rng() % gpus),
                                static_cast<int32_t>(rng() % gpus),
                                static_cast<Bytes>(rng() % (8 * kMiB))));
    }
  }
  for (int i = 0; i < 400; ++i) {
    const Time at = Time::ns(static_cast<int64_t>(rng() % 2'000'000));
    if (i % 20 == 0) {
      run->fluid_at(at, fluid_edges[static_cast<std::size_t>(i / 20)], 1,
                    Time::ns(static_cast<int64_t>(rng() % 5'000)));
      continue;
    }
    const auto src = static_cast<int32_t>(rng() % gpus);
    const auto dst = static_cast<int32_t>(rng() % gpus);
    const Bytes bytes = rng() % 10 == 0 ? 0 : static_cast<Bytes>(rng() % (16 * kMiB));
    run->send_at(at, src, dst, bytes);
  }
  run->sim.run();
  return run;
}

TEST_P(NetworkConformance, EveryCallbackRunsOnceAndNeverBeforeItsTransferIsSent) {
  std::vector<std::vector<FluidEdge>> edges;
  const auto run = random_run(model(), 5, edges);
  for (std::size_t i = 0; i < run->calls.size(); ++i) {
    EXPECT_EQ(run->calls[i], 1) << "transfer " << i;
    EXPECT_GE(run->done_at[i], run->sent_at[i]) << "transfer " << i;
  }
}

// Sharing can only slow a transfer down.
TEST_P(NetworkConformance, NoTransferBeatsItsLoneTime) {
  std::vector<std::vector<FluidEdge>> edges;
  const auto run = random_run(model(), 6, edges);
  for (std::size_t i = 0; i < run->sent.size(); ++i) {
    const Trial::Sent& s = run->sent[i];
    if (s.src < 0) continue;  // fluid
    EXPECT_GE(run->took(static_cast<int>(i)) + Time::ps(1),
              run->latency(s.src, s.dst) + run->alone(s.src, s.dst, s.bytes))
        << "transfer " << i;
  }
}

TEST_P(NetworkConformance, IdenticalRunsGiveIdenticalResults) {
  std::vector<std::vector<FluidEdge>> edges_a, edges_b;
  const auto a = random_run(model(), 7, edges_a);
  const auto b = random_run(model(), 7, edges_b);
  EXPECT_EQ(a->order, b->order);
  EXPECT_EQ(a->done_at, b->done_at);
  EXPECT_EQ(a->net->stats().bytes_by_class, b->net->stats().bytes_by_class);
  EXPECT_EQ(a->net->stats().messages, b->net->stats().messages);
}

// TrafficStats: one message per send (self ones only in the total), its bytes under its route's
// link class; a fluid transfer adds one per edge that carries bytes.
TEST_P(NetworkConformance, TrafficCountersAddUpToTheBytesSent) {
  Trial run(model());
  TrafficStats want;
  std::mt19937_64 rng(9);
  for (int i = 0; i < 200; ++i) {
    const auto src = static_cast<int32_t>(rng() % 16);
    const auto dst = static_cast<int32_t>(rng() % 16);
    const Bytes bytes = static_cast<Bytes>(rng() % (4 * kMiB));
    run.send_at(Time::ns(static_cast<int64_t>(rng() % 100'000)), src, dst, bytes);
    want.count(src == dst ? nullptr : &run.routing.route(run.gpu(src), run.gpu(dst)), bytes);
  }
  const std::vector<FluidEdge> edges{run.edge(0, 8, kMiB), run.edge(1, 1, kMiB), run.edge(2, 3, 0),
                                     run.edge(4, 13, 3 * kMiB)};
  run.fluid_at(Time::us(200), edges, 1, Time{});
  for (const FluidEdge& e : edges)
    if (e.src != e.dst && e.wire_bytes > 0)
      want.count(&run.routing.route(e.src, e.dst), static_cast<Bytes>(e.wire_bytes));
  run.sim.run();
  const TrafficStats& got = run.net->stats();
  EXPECT_EQ(got.messages, want.messages);
  EXPECT_EQ(got.messages_by_class, want.messages_by_class);
  EXPECT_EQ(got.bytes_by_class, want.bytes_by_class);
}

// network.h: alone on the network a fluid transfer takes its transfer time plus `waits`, with
// no route latency: a one-edge transfer agrees with a send of the same bytes less its latency.
TEST_P(NetworkConformance, ALoneFluidEdgeTakesItsSendsTimeWithoutLatencyPlusWaits) {
  for (const auto& [src, dst] : kPairs) {
    for (const Time waits : {Time{}, Time::us(7)}) {
      Trial run(model());
      const std::vector<FluidEdge> edges{run.edge(src, dst, kSize)};
      const int fluid = run.fluid_at(Time::us(1), edges, 1, waits);
      run.sim.run();
      const int send = run.send_at(run.sim.now(), src, dst, kSize);
      run.sim.run();
      const Time rounding = waits > Time{} ? Time::ps(model().paced_rounding_ps) : Time{};
      EXPECT_WITHIN_PS(run.took(fluid), run.took(send) - run.latency(src, dst) + waits,
                       rounding.count_ps())
          << src << " -> " << dst << ", waits " << waits.count_ps() << " ps";
    }
  }
}

// Edges on disjoint paths move at one pace: the slowest (largest) holds the others back.
TEST_P(NetworkConformance, DisjointFluidEdgesFinishWithTheSlowest) {
  Trial run(model());
  const std::vector<FluidEdge> edges{run.edge(0, 8, kSize), run.edge(1, 9, 3 * kSize),
                                     run.edge(2, 3, kSize / 2)};
  const int id = run.fluid_at(Time::us(1), edges, 1, Time{});
  run.sim.run();
  EXPECT_EQ(run.took(id), run.alone(1, 9, 3 * kSize));
}

// The edges of one fluid transfer into one GPU (of another server, over its NIC) share the link
// into it, whatever the model does with other transfers: together they take at least their bytes
// over the route's bottleneck.
TEST_P(NetworkConformance, AFluidIncastTakesAtLeastItsBytesOverTheReceiversLink) {
  if (model().sharing == Sharing::kFree) GTEST_SKIP() << "communication is free";
  Trial run(model());
  const std::vector<FluidEdge> edges{run.edge(0, 8, kSize), run.edge(1, 8, kSize),
                                     run.edge(2, 8, kSize)};
  const int id = run.fluid_at(Time::us(1), edges, 1, Time{});
  run.sim.run();
  EXPECT_GE(run.took(id) + Time::ps(model().paced_rounding_ps), run.alone(0, 8, 3 * kSize));
}

// Mirrors: an edge list of equal runs on other GPUs (and NICs) takes as long as one run alone.
TEST_P(NetworkConformance, MirroredRunsTakeAsLongAsOneRun) {
  Trial run(model());
  const std::vector<FluidEdge> one{run.edge(0, 8, kSize)};
  const std::vector<FluidEdge> four{run.edge(0, 8, kSize), run.edge(1, 9, kSize),
                                    run.edge(2, 10, kSize), run.edge(3, 11, kSize)};
  const int single = run.fluid_at(Time::us(1), one, 1, Time{});
  run.sim.run();
  const int mirrored = run.fluid_at(run.sim.now(), four, 4, Time{});
  run.sim.run();
  EXPECT_EQ(run.took(mirrored), run.took(single));
}

// A fluid transfer that carries nothing (self edges, zero bytes) still ends, after its waits.
TEST_P(NetworkConformance, AFluidTransferOfNothingEndsAfterItsWaits) {
  Trial run(model());
  const std::vector<FluidEdge> edges{run.edge(0, 0, kSize), run.edge(1, 9, 0)};
  const int id = run.fluid_at(Time::us(1), edges, 1, Time::ns(500));
  run.sim.run();
  EXPECT_EQ(run.calls[static_cast<std::size_t>(id)], 1);
  EXPECT_EQ(run.took(id), Time::ns(500));
}

// A slot the network filled names the same plan next time: same time, same traffic again.
TEST_P(NetworkConformance, SendingAgainThroughAFilledSlotRepeatsTheTransfer) {
  Trial run(model());
  const std::vector<FluidEdge> edges{run.edge(0, 8, kSize), run.edge(4, 5, kSize / 4)};
  FluidPlanSlot slot;
  const int first = run.fluid_at(Time::us(1), edges, 1, Time::us(2), &slot);
  run.sim.run();
  const TrafficStats once = run.net->stats();
  const int second = run.fluid_at(run.sim.now(), edges, 1, Time::us(2), &slot);
  run.sim.run();
  EXPECT_EQ(run.took(second), run.took(first));
  TrafficStats twice = once;
  twice.add(once);
  EXPECT_EQ(run.net->stats().bytes_by_class, twice.bytes_by_class);
  EXPECT_EQ(run.net->stats().messages, twice.messages);
}

INSTANTIATE_TEST_SUITE_P(EveryModel, NetworkConformance, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<Model>& info) {
                           return std::string(info.param.name);
                         });

// Every mode the factory knows has a row (a new mode must add its own).
TEST(NetworkConformanceRows, CoverEveryNetworkMode) {
  for (NetworkMode mode :
       {NetworkMode::kCongestionAware, NetworkMode::kAnalytical, NetworkMode::kIdeal}) {
    EXPECT_TRUE(std::any_of(std::begin(kModels), std::end(kModels), [mode](const Model& m) {
      return m.mode == mode;
    })) << to_string(mode);
  }
}

}  // namespace network_conformance_test
}  // namespace cs::net
