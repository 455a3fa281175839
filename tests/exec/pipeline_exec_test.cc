// The executor running synthetic pipelines: bubbles must follow the schedules' formulas.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <tuple>
#include <utility>

#include "sim/compute/gpu_hardware.h"
#include "sim/exec/executor.h"
#include "sim/net/network_factory.h"
#include "sim/net/routing.h"
#include "sim/net/topology_builder.h"
#include "sim/run/post_validation.h"
#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/program_builder.h"
#include "sim/workload/schedules/registry.h"

namespace cs::exec {
namespace {

using workload::Op;
using workload::OpClass;
using workload::PipelineSchedule;

Op compute(Time t, OpClass cls) {
  Op o;
  o.duration = t;
  o.op_class = cls;
  return o;
}

struct PipelineRun {
  Time step;
  std::vector<RankStats> stats;
  std::vector<std::vector<workload::WorkItem>> orders;
  bool finished;
  std::vector<workload::Program> programs;
};

PipelineRun execute(PipelineSchedule schedule, int32_t p,
                    std::vector<std::vector<workload::WorkItem>> orders,
                    const workload::StageWork& work, net::NetworkMode mode);

// p stages on one 8-GPU server, uniform stages: a chunk's forward costs f/v, backward 2f/v
// (split into equal B and W for ZB-H1, ZB-V and DualPipe).
PipelineRun run_pipeline(PipelineSchedule schedule, int32_t p, int32_t m, int32_t v, Time f,
                         net::NetworkMode mode = net::NetworkMode::kIdeal) {
  const Time fc = Time::ps(f.count_ps() / v);
  const bool split = workload::schedule_info(schedule).splits_backward;
  auto orders = split ? workload::pipeline_orders(schedule, p, m, v, 1.0, 1.0, 1.0)
                      : workload::pipeline_orders(schedule, p, m, v);
  workload::StageWork work;
  for (int32_t c = 0; c < v; ++c) {
    workload::ChunkWork chunk;
    chunk.forward.add(compute(fc, OpClass::kForward));
    if (split) {
      chunk.backward.add(compute(fc, OpClass::kBackward));
      chunk.weight_grad.add(compute(fc, OpClass::kWeightGrad));
    } else {
      chunk.backward.add(compute(fc * 2, OpClass::kBackward));
    }
    chunk.activation_bytes = 16 * kMiB;
    work.chunks.push_back(chunk);
  }
  return execute(schedule, p, std::move(orders), work, mode);
}

// The same with one model chunk per stage split into F, B and W of the given costs.
PipelineRun run_split_pipeline(PipelineSchedule schedule, int32_t p, int32_t m, Time f, Time b,
                               Time w) {
  auto orders =
      workload::pipeline_orders(schedule, p, m, 1, f.as_seconds(), b.as_seconds(), w.as_seconds());
  workload::ChunkWork chunk;
  chunk.forward.add(compute(f, OpClass::kForward));
  chunk.backward.add(compute(b, OpClass::kBackward));
  chunk.weight_grad.add(compute(w, OpClass::kWeightGrad));
  chunk.activation_bytes = 16 * kMiB;
  workload::StageWork work;
  work.chunks.push_back(chunk);
  return execute(schedule, p, std::move(orders), work, net::NetworkMode::kIdeal);
}

PipelineRun execute(PipelineSchedule schedule, int32_t p,
                    std::vector<std::vector<workload::WorkItem>> orders,
                    const workload::StageWork& work, net::NetworkMode mode) {
  std::vector<workload::Program> programs;
  for (int32_t s = 0; s < p; ++s)
    programs.push_back(workload::build_stage_program(work, orders[s], schedule, s, p));

  const auto desc = net::resolve_topology("dgx-h100");
  const net::Topology topo = net::build_topology(desc, p, "dgx-h100");
  net::Routing routing(topo);
  Simulator sim;
  auto network = net::make_network(mode, sim, topo, routing);
  const workload::Layout layout(1, 1, p, 1);
  // An ideal network makes communication free, NCCL's launch latencies too (as world.cc's
  // nccl_settings does for a run).
  ExecutorOptions options;
  coll::NcclSettings settings;
  settings.step_latency = mode != net::NetworkMode::kIdeal;
  options.nccl = compute::nccl_tuning(topo.gpu_type, settings);
  Executor exec(sim, *network, topo, layout, programs, options);
  exec.start();
  sim.run();
  return {exec.step_end(), exec.rank_stats(), std::move(orders), exec.all_finished(), programs};
}

double bubble(const PipelineRun& r, int32_t stage) {
  return static_cast<double>((r.stats[stage].pipeline_wait + r.stats[stage].end_wait).count_ps()) /
         static_cast<double>(r.step.count_ps());
}

TEST(PipelineExec, GpipeAndOneFOneBBubblesFollowTheFormula) {
  const int32_t p = 4;
  for (const auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB}) {
    for (int32_t m = 1; m <= 32; ++m) {
      const auto r = run_pipeline(schedule, p, m, 1, Time::us(100));
      ASSERT_TRUE(r.finished);
      const double expected = workload::analytic_bubble_fraction(schedule, p, m, 1, 1, 2, 0);
      EXPECT_DOUBLE_EQ(expected, static_cast<double>(p - 1) / (m + p - 1));
      // Step time is (m + p - 1)(F + B) exactly, so the bubble matches to rounding.
      EXPECT_EQ(r.step, Time::us(300) * (m + p - 1)) << to_string(schedule) << " m=" << m;
      for (int32_t s = 0; s < p; ++s) EXPECT_NEAR(bubble(r, s), expected, 1e-12) << "stage " << s;
    }
  }
}

TEST(PipelineExec, InterleavedBubbleShrinksByVirtualStages) {
  const int32_t p = 4, v = 2;
  for (const int32_t m : {4, 8, 16}) {
    const auto r = run_pipeline(PipelineSchedule::kInterleaved, p, m, v, Time::us(100));
    ASSERT_TRUE(r.finished);
    const double expected =
        workload::analytic_bubble_fraction(PipelineSchedule::kInterleaved, p, m, v, 1, 2, 0);
    EXPECT_NEAR(expected, static_cast<double>(p - 1) / (v * m + p - 1), 1e-15);
    double mean = 0;
    for (int32_t s = 0; s < p; ++s) mean += bubble(r, s) / p;
    EXPECT_NEAR(mean, expected, 1e-9) << "m=" << m;
    // Relative to the ideal m(F+B), the bubble is (p-1)/(v m).
    const double ideal = 300e-6 * m;
    EXPECT_NEAR((r.step.as_seconds() - ideal) / ideal, static_cast<double>(p - 1) / (v * m), 1e-9);
  }
}

TEST(PipelineExec, ZeroBubbleH1BeatsOneFOneB) {
  const int32_t p = 4;
  for (const int32_t m : {4, 8, 16}) {
    const auto zb = run_pipeline(PipelineSchedule::kZbH1, p, m, 1, Time::us(100));
    const auto ofob = run_pipeline(PipelineSchedule::kOneFOneB, p, m, 1, Time::us(100));
    ASSERT_TRUE(zb.finished);
    const double expected =
        workload::analytic_bubble_fraction(PipelineSchedule::kZbH1, p, m, 1, 1, 1, 1);
    double mean = 0;
    for (int32_t s = 0; s < p; ++s) mean += bubble(zb, s) / p;
    EXPECT_NEAR(mean, expected, 1e-9) << "m=" << m;
    EXPECT_LT(zb.step, ofob.step);
  }
}

// ZB-V with chunk costs F = B = W: every stage idles (p-1) chunk passes, (p-1)/(6m+p-1) of the
// step, and the step is shorter than ZB-H1's at the same stage costs.
TEST(PipelineExec, ZeroBubbleVFollowsItsLaw) {
  for (const int32_t p : {2, 4}) {
    for (const int32_t m : {2 * p - 1, 2 * p, 4 * p}) {
      SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m);
      const auto zbv = run_pipeline(PipelineSchedule::kZbV, p, m, 2, Time::us(100));
      const auto zbh1 = run_pipeline(PipelineSchedule::kZbH1, p, m, 1, Time::us(100));
      ASSERT_TRUE(zbv.finished);
      const double law = static_cast<double>(p - 1) / (6 * m + p - 1);
      EXPECT_NEAR(workload::analytic_bubble_fraction(PipelineSchedule::kZbV, p, m, 2, 1, 1, 1), law,
                  1e-12);
      for (int32_t s = 0; s < p; ++s) EXPECT_NEAR(bubble(zbv, s), law, 1e-9) << "s=" << s;
      EXPECT_LT(zbv.step, zbh1.step);
    }
  }
}

// The V's turn stays on the last stage: no transfer to itself; it sends only up the V (its
// second chunk's activations and its first chunk's gradients, 2m messages), a middle stage 4m.
TEST(PipelineExec, ZeroBubbleVHandsOverInMemoryOnTheLastStage) {
  const int32_t p = 4, m = 8;
  const auto r = run_pipeline(PipelineSchedule::kZbV, p, m, 2, Time::us(10));
  ASSERT_TRUE(r.finished);
  for (int32_t s = 0; s < p; ++s) {
    int32_t sends = 0, recvs = 0;
    for (const auto& op : r.programs[s].ops) {
      if (op.kind != workload::OpKind::kSend && op.kind != workload::OpKind::kRecv) continue;
      EXPECT_NE(op.peer_stage, s);
      EXPECT_EQ(std::abs(op.peer_stage - s), 1);
      (op.kind == workload::OpKind::kSend ? sends : recvs) += 1;
    }
    EXPECT_EQ(sends, s == 0 || s == p - 1 ? 2 * m : 4 * m) << "s=" << s;
    EXPECT_EQ(recvs, sends) << "s=" << s;
  }
}

// An order whose second chunk on the last stage runs before the first chunk that feeds it.
TEST(PipelineExec, ZeroBubbleVRejectsAnOrderAheadOfItsLocalInput) {
  workload::StageWork work;
  for (int c = 0; c < 2; ++c) {
    workload::ChunkWork chunk;
    chunk.forward.add(compute(Time::us(1), OpClass::kForward));
    chunk.backward.add(compute(Time::us(1), OpClass::kBackward));
    chunk.weight_grad.add(compute(Time::us(1), OpClass::kWeightGrad));
    work.chunks.push_back(chunk);
  }
  using workload::Phase;
  const std::vector<workload::WorkItem> bad = {{Phase::kForward, 0, 1}, {Phase::kForward, 0, 0}};
  EXPECT_THROW(workload::build_stage_program(work, bad, PipelineSchedule::kZbV, 1, 2),
               std::invalid_argument);
}

// DualPipe with chunk costs F = B = W: each stage idles (p/2 - 1)(F&B + B - 3W) = 2(p/2 - 1)
// chunk passes (DeepSeek-V3, Table 2), once each F&B pair starts with both inputs and sends
// after it; both directions cross the network, and runs repeat bit for bit.
TEST(PipelineExec, DualPipeFollowsTableTwo) {
  for (const int32_t p : {2, 4, 8}) {
    for (const int32_t m : {2 * p, 4 * p}) {
      SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m);
      const auto r = run_pipeline(PipelineSchedule::kDualPipe, p, m, 2, Time::us(100));
      ASSERT_TRUE(r.finished);
      const double law =
          workload::analytic_bubble_fraction(PipelineSchedule::kDualPipe, p, m, 2, 1, 1, 1);
      EXPECT_NEAR(law, 2.0 * (p / 2 - 1) / (3 * m + 2 * (p / 2 - 1)), 1e-12);
      for (int32_t s = 0; s < p; ++s) EXPECT_NEAR(bubble(r, s), law, 1e-9) << "s=" << s;
      const auto again = run_pipeline(PipelineSchedule::kDualPipe, p, m, 2, Time::us(100));
      EXPECT_EQ(again.step, r.step);
      for (int32_t s = 0; s < p; ++s) {
        EXPECT_EQ(again.stats[s].pipeline_wait, r.stats[s].pipeline_wait);
        EXPECT_EQ(again.programs[s].ops.size(), r.programs[s].ops.size());
      }
    }
  }
}

TEST(PipelineExec, ZeroBubbleVIsDeterministicOnARealNetwork) {
  const auto a = run_pipeline(PipelineSchedule::kZbV, 4, 8, 2, Time::us(100),
                              net::NetworkMode::kCongestionAware);
  const auto b = run_pipeline(PipelineSchedule::kZbV, 4, 8, 2, Time::us(100),
                              net::NetworkMode::kCongestionAware);
  ASSERT_TRUE(a.finished);
  EXPECT_EQ(a.step, b.step);
  for (int32_t s = 0; s < 4; ++s) EXPECT_EQ(a.stats[s].pipeline_wait, b.stats[s].pipeline_wait);
}

// ZB-H2 through the executor on an ideal network: with optimizer post-validation the step is
// the longest stage span, m(F+B+W) + (p-1)(F+B-2W) (Qi et al.), at equal and unequal costs; each
// stage's bubble as the report counts it (its waits inside its span, plus its gap to the step)
// follows the law. Without post-validation the step ends with the last stage: at equal costs
// ZB-H1's exactly. 1F1B's step is its stage 0's span, so post-validation leaves it alone.
TEST(PipelineExec, ZeroBubbleH2FollowsItsLawWithPostValidation) {
  const Time u = Time::us(100);
  for (const auto& [f, b, w] : {std::tuple{u, u, u}, std::tuple{u, u * 2, u}}) {
    for (const int32_t p : {2, 4}) {
      for (const int32_t m : {2 * p - 1, 3 * p}) {
        SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m << " b=" << b.as_seconds());
        const auto h2 = run_split_pipeline(PipelineSchedule::kZbH2, p, m, f, b, w);
        ASSERT_TRUE(h2.finished);
        const Time step = run::post_validated_step(h2.stats);
        const Time law_idle = (f + b - w - w) * (p - 1);
        EXPECT_EQ(step, (f + b + w) * m + law_idle);
        const double law = workload::analytic_bubble_fraction(
            PipelineSchedule::kZbH2, p, m, 1, f.as_seconds(), b.as_seconds(), w.as_seconds());
        const auto& st0 = h2.stats[0];
        const Time idle0 = st0.pipeline_wait - st0.lead_wait + step - run::rank_span(st0);
        EXPECT_NEAR(idle0.as_seconds() / step.as_seconds(), law, 1e-9);
        EXPECT_GE(h2.step, step);
        for (int32_t s = 0; s < p; ++s) {
          const auto& st = h2.stats[s];
          EXPECT_EQ(st.pipeline_wait - st.lead_wait + step - run::rank_span(st), law_idle);
        }
      }
    }
  }
  for (const int32_t p : {2, 4}) {
    const auto h2 = run_split_pipeline(PipelineSchedule::kZbH2, p, 3 * p, u, u, u);
    const auto h1 = run_split_pipeline(PipelineSchedule::kZbH1, p, 3 * p, u, u, u);
    EXPECT_EQ(h2.step, h1.step);
    EXPECT_EQ(h2.step, run::post_validated_step(h2.stats) + u * (p - 1));
    const auto ofob = run_pipeline(PipelineSchedule::kOneFOneB, p, 3 * p, 1, u);
    EXPECT_EQ(run::post_validated_step(ofob.stats), ofob.step);
  }
}

TEST(PipelineExec, InFlightMicrobatches) {
  const int32_t p = 4, m = 12;
  const auto ofob = run_pipeline(PipelineSchedule::kOneFOneB, p, m, 1, Time::us(10));
  const auto gpipe = run_pipeline(PipelineSchedule::kGpipe, p, m, 1, Time::us(10));
  EXPECT_EQ(workload::peak_in_flight(ofob.orders[0]), p);
  EXPECT_EQ(workload::peak_in_flight(gpipe.orders[0]), m);
}

TEST(PipelineExec, RealNetworkAddsTransferTimeToTheCriticalPath) {
  const auto ideal = run_pipeline(PipelineSchedule::kOneFOneB, 4, 8, 1, Time::us(100));
  const auto flows = run_pipeline(PipelineSchedule::kOneFOneB, 4, 8, 1, Time::us(100),
                                  net::NetworkMode::kCongestionAware);
  ASSERT_TRUE(flows.finished);
  EXPECT_GT(flows.step, ideal.step);
  // 16 MiB over NVLink at 450 GB/s is ~37 us per hop; the fill and drain cross 2(p-1) hops.
  EXPECT_LT(flows.step, ideal.step + Time::us(50) * (2 * 3 + 2 * 8));
}

TEST(PipelineExec, MismatchedSendIsReportedAsStuck) {
  // Stage 1 never posts the receive stage 0 sends to: the run must end with stuck ops named.
  workload::StageWork work;
  workload::ChunkWork chunk;
  chunk.forward.add(compute(Time::us(1), OpClass::kForward));
  chunk.backward.add(compute(Time::us(2), OpClass::kBackward));
  chunk.activation_bytes = kMiB;
  work.chunks.push_back(chunk);
  auto orders = workload::pipeline_orders(PipelineSchedule::kOneFOneB, 2, 2, 1);
  std::vector<workload::Program> programs{
      workload::build_stage_program(work, orders[0], PipelineSchedule::kOneFOneB, 0, 2),
      workload::build_stage_program(work, orders[1], PipelineSchedule::kOneFOneB, 1, 2)};
  // Drop stage 1's first receive by renaming its tag.
  for (auto& op : programs[1].ops)
    if (op.kind == workload::OpKind::kRecv) {
      op.tag += 1000;
      break;
    }
  const auto desc = net::resolve_topology("dgx-h100");
  const net::Topology topo = net::build_topology(desc, 2, "dgx-h100");
  net::Routing routing(topo);
  Simulator sim;
  auto network = net::make_network(net::NetworkMode::kIdeal, sim, topo, routing);
  const workload::Layout layout(1, 1, 2, 1);
  Executor exec(sim, *network, topo, layout, programs);
  exec.start();
  sim.run();
  EXPECT_FALSE(exec.all_finished());
  const auto stuck = exec.stuck_ops(10);
  ASSERT_FALSE(stuck.empty());
  bool names_recv = false;
  for (const auto& s : stuck) names_recv |= s.what.find("recv") != std::string::npos;
  EXPECT_TRUE(names_recv);
}

}  // namespace
}  // namespace cs::exec
