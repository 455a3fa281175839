// What the planner's estimate charges one collective of a stage's work: NCCL's calls as NCCL would
// run them on the config's GPUs and fabric, expert-parallel all-to-alls and ring hops.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "proto/config.pb.h"
#include "sim/coll/nccl_plan.h"
#include "sim/net/trunks.h"
#include "sim/workload/program.h"

namespace cs::plan {

class CollectiveCost {
 public:
  // The config's GPU profile gives NVLink's and the NIC's bytes per second per GPU, its topology
  // the oversubscribed tiers; `gpus_per_node` GPUs a server.
  CollectiveCost(const clustersim::RunConfig& config, int32_t gpus_per_node);

  // Seconds of the collective `op` over its group of rank 0 (every group has the same shape).
  // `stages_at_once`: the share of the other pipeline stages whose groups make such calls at the
  // same time: 1 where every stage does at once (the gather after the optimizer), 0 where only
  // this stage's do (the distributed optimizer's gathers at the step's start), and the share of
  // the time the other stages' data-parallel streams are busy for calls inside the pipeline's
  // passes (a microbatch's ZeRO-3 gathers), which the stages make at different times.
  //
  // NCCL's calls (all-reduce, all-gather, reduce-scatter): the bytes NCCL's chosen algorithm and
  // protocol put on the wire (LL's flags double them), over NVLink at NCCL's share of it when the
  // group sits in one server, else also over the NICs of its members on a server at NCCL's share
  // of their rate; plus the latency NCCL's model charges the call (a ring's per-rank steps: tens
  // of ms over thousands of servers; none with effects.nccl_step_latency off); or, where it is
  // longer, the NICs' time slowed by the switch links the group's traffic leaves its tiers over
  // (fabric_slowdown), which drain while the latency runs. A ring over servers of several members
  // takes at least its NICs' time plus, per message its busiest connection sends at a time, the
  // longest route between its servers, as the simulated ring does (coll/algorithms/ring.cc,
  // mixed_ring_walk). Calls of equal group, op, size and concurrency are reckoned once.
  //
  // An expert-parallel all-to-all (dispatch or combine: this GPU's T x top_k token copies of h
  // bf16 values): the copies for experts on this GPU stay, those for its server's peers go over
  // NVLink while those for other servers leave over its NIC, at once (node-limited dedup is left
  // out, so this is an upper bound when model.moe.max_nodes_per_token is set). A ring hop of a
  // TP or CP exchange overlapped with its GEMM or attention: over NVLink while the TP x CP group
  // fits in a server.
  double seconds(const workload::Op& op, double stages_at_once);
  // Whether calls share switch links with other groups' (hashed or oversubscribed), so that their
  // seconds depend on `stages_at_once`.
  bool fabric_shared() const;
  // Whether rank 0's group of `dim` sits in one server.
  bool within_server(workload::Dim dim);

 private:
  const std::vector<int32_t>& members(workload::Dim dim);
  double nccl_call(const workload::Op& op, double stages_at_once,
                   const std::vector<int32_t>& members);
  // The latency NCCL's model charges the call.
  double latency_s(const workload::Op& op, const coll::NcclChoice& choice, int32_t n,
                   int32_t local) const;
  // The longest route between consecutive servers of the ring over `members` in rank order,
  // closing it (tier_spans; 0 without tiers).
  double longest_ring_route_s(const std::vector<int32_t>& members) const;
  double all_to_all(const workload::Op& op) const;
  double ring_hop(const workload::Op& op) const;
  // How many times its NICs' time the call takes while a share `stages_at_once` of the other
  // stages' groups make it too: between stage_slowdown's figures for this stage's groups alone and
  // for every stage's, in proportion.
  double fabric_slowdown(workload::Dim dim, double stages_at_once,
                         const std::vector<int32_t>& members, coll::NcclAlgo algo);
  // How many times its NICs' time the call takes while the groups making it (every_stage) run
  // one each: what leaves a domain shares the domain's links up, 1 / ratio of its GPUs' NICs (at
  // least 1), as the analytical network's trunks (net/trunks.h) see it. On a fabric that hashes
  // paths (with effects.analytical_hashed_paths), every tier's links up instead, each loaded by
  // the flows hashed onto it: the busiest of them, in expectation (hash_collisions.h), as the
  // analytical network's hashed links see it. Reckoned once per group, algorithm and concurrency.
  double stage_slowdown(workload::Dim dim, bool every_stage, const std::vector<int32_t>& members,
                        coll::NcclAlgo algo);
  // The share of the first domain of `domain_gpus` GPUs that is rank 0's pipeline stage.
  double own_stage_share(int64_t domain_gpus) const;

  const clustersim::RunConfig& config_;
  double nvlink_ = 0, nic_ = 0;
  // Of an EP all-to-all's bytes, the shares bound for peers on this GPU's server and on others.
  double ep_local_ = 0, ep_remote_ = 0;
  int32_t gpus_per_node_;
  coll::NcclTuning nccl_;
  std::vector<net::OversubscribedDomain> domains_;
  std::vector<net::HashedTier> hashed_;  // none where paths are sprayed or the effect is off
  int32_t flows_per_message_ = 1;
  std::vector<net::TierSpan> spans_;
  std::map<workload::Dim, std::vector<int32_t>> members_;
  std::map<std::tuple<workload::Dim, coll::Op, Bytes, double>, double> seconds_;
  std::map<std::tuple<workload::Dim, coll::NcclAlgo, bool>, double> slowdowns_;
};

}  // namespace cs::plan
