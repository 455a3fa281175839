#include "sim/exec/collective_groups.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "sim/coll/collective.h"

namespace cs::exec {

using workload::Dim;
using workload::Op;
using workload::Stream;

namespace {

uint64_t pair_key(int64_t a, int64_t b) {
  return static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b);
}

}  // namespace

LayoutGroups::LayoutGroups(const workload::Layout& layout, ProgramOfRank program_of,
                           const Folding& folding, const ByDim& per_server,
                           const std::array<bool, workload::kNumDims>& owns_nvlink)
    : layout_(layout),
      program_of_(std::move(program_of)),
      folding_(folding),
      per_server_(per_server),
      owns_nvlink_(owns_nvlink) {}

Posted LayoutGroups::post(int32_t rank, uint32_t op) {
  const workload::Program& program = program_of_(rank);
  const Op& o = program.ops[op];
  const auto d = static_cast<std::size_t>(o.dim);
  if (const int32_t posting = folding_.posting(o.dim); posting > 1) {
    auto& arrivals = arrivals_[d];
    const uint64_t key = pair_key(layout_.group_id(rank, o.dim), op);
    auto it = arrivals.try_emplace(key, 0).first;
    if (++it->second < static_cast<uint32_t>(posting)) return {};
    arrivals.erase(it);
  }
  ReadyCollective ready;
  ready.members = layout_.group_members(rank, o.dim);
  for (const int32_t m : ready.members)
    if (folding_.is_simulated(m)) ready.posts.push_back({m, op});
  ready.per_server = per_server_[d];
  ready.owns_nvlink = owns_nvlink_[d];
  // TP collectives on the compute stream block it; overlapped chunks are charged only where the
  // compute stream waits for them.
  ready.blocking = o.stream == Stream::kCompute;
  ready.all_to_all_v = o.varies < program.all_to_alls.size();
  ready.path = path_of(program, o);
  return {std::move(ready), {}};
}

CommPath LayoutGroups::path_of(const workload::Program& program, const Op& o) const {
  // Overlapped TP collectives run as userbuffers ring-exchange steps, not NCCL kernels.
  if (o.stream == Stream::kTp) return CommPath::kRingExchange;
  // Ring attention's K/V hops are NCCL send/recvs.
  if (o.coll_op == coll::Op::kSendRecv) return CommPath::kPointToPoint;
  const bool one_server = per_server_[static_cast<std::size_t>(o.dim)] >= layout_.size(o.dim);
  if (o.varies < program.all_to_alls.size() && program.all_to_alls[o.varies].deduplicated)
    return one_server ? CommPath::kDeepEpNvlink : CommPath::kDeepEpNetwork;
  return one_server ? CommPath::kNvlinkCollective : CommPath::kNetworkCollective;
}

ExplicitGroups::ExplicitGroups(const std::vector<std::vector<int32_t>>& groups, int32_t world,
                               ProgramOfRank program_of,
                               const std::function<int32_t(int32_t)>& node_of)
    : groups_(groups), program_of_(std::move(program_of)) {
  // Collectives pick NCCL's algorithm by how many consecutive members share a server; groups that
  // are not laid out in runs count as one per server.
  per_server_.reserve(groups.size());
  for (const auto& members : groups) {
    for (const int32_t m : members)
      if (m < 0 || m >= world) throw std::invalid_argument("a communicator names an absent rank");
    per_server_.push_back(coll::members_per_server(static_cast<int32_t>(members.size()),
                                                   [&](int32_t i) { return node_of(members[i]); }));
  }
}

Posted ExplicitGroups::post(int32_t rank, uint32_t op) {
  const Op& o = program_of_(rank).ops[op];
  if (o.comm < 0 || static_cast<std::size_t>(o.comm) >= groups_.size())
    return {{}, "communicator " + std::to_string(o.comm) + " does not exist"};
  const auto& members = groups_[static_cast<std::size_t>(o.comm)];
  if (std::find(members.begin(), members.end(), rank) == members.end())
    return {{},
            "rank " + std::to_string(rank) + " is not a member of communicator " +
                std::to_string(o.comm)};
  // The n-th collective a rank posts on a communicator meets the n-th of every other member.
  const uint32_t seq = seq_[pair_key(rank, o.comm)]++;
  const uint64_t key = pair_key(o.comm, seq);
  auto& posts = posts_[key];
  if (std::string why = mismatch(rank, op, seq, posts); !why.empty()) return {{}, std::move(why)};
  posts.push_back({rank, op});
  if (posts.size() < members.size()) return {};
  std::vector<Post> all = std::move(posts);
  posts_.erase(key);
  return {ready(o.comm, std::move(all)), {}};
}

std::string ExplicitGroups::mismatch(int32_t rank, uint32_t op, uint32_t seq,
                                     const std::vector<Post>& posts) const {
  if (posts.empty()) return {};
  const Op& o = program_of_(rank).ops[op];
  const Post first_post = posts.front();
  const Op& first = program_of_(first_post.rank).ops[first_post.op];
  // All-to-all-v members send sizes of their own (Op::varies), so only the type must agree.
  const bool sized = o.varies != UINT32_MAX || first.varies != UINT32_MAX;
  if (first.coll_op == o.coll_op && (sized || first.bytes == o.bytes)) return {};
  return "collective #" + std::to_string(seq) + " of communicator " + std::to_string(o.comm) +
         ": this rank posts " + std::string(coll::to_string(o.coll_op)) + " of " +
         std::to_string(o.bytes) + " bytes, rank " + std::to_string(first_post.rank) + " posted " +
         std::string(coll::to_string(first.coll_op)) + " of " + std::to_string(first.bytes) +
         " bytes";
}

ReadyCollective ExplicitGroups::ready(int32_t comm, std::vector<Post> posts) const {
  ReadyCollective ready;
  ready.members = groups_[static_cast<std::size_t>(comm)];
  ready.per_server = per_server_[static_cast<std::size_t>(comm)];
  const Op& first = program_of_(posts.front().rank).ops[posts.front().op];
  ready.blocking = first.dim == Dim::kTp;
  ready.all_to_all_v = std::any_of(posts.begin(), posts.end(), [this](const Post& p) {
    return program_of_(p.rank).ops[p.op].varies != UINT32_MAX;
  });
  ready.path = static_cast<std::size_t>(ready.per_server) >= ready.members.size()
                   ? CommPath::kNvlinkCollective
                   : CommPath::kNetworkCollective;
  ready.posts = std::move(posts);
  return ready;
}

}  // namespace cs::exec
