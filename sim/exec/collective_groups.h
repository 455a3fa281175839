// Who takes part in a collective: the group a layout's coordinates name, or the communicator an
// imported trace names. A group is ready to launch once its last simulated member has posted.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/exec/folding.h"
#include "sim/exec/interference.h"
#include "sim/workload/dims.h"
#include "sim/workload/layout.h"
#include "sim/workload/program.h"

namespace cs::exec {

// One rank's op.
struct Post {
  int32_t rank;
  uint32_t op;
  bool operator==(const Post&) const = default;
};

// A collective every member has posted.
struct ReadyCollective {
  std::vector<Post> posts;       // the simulated members, in the order their ops complete
  std::vector<int32_t> members;  // every member's rank, in ring order
  int32_t per_server = 1;        // consecutive members per server (NCCL's algorithm choice)
  bool owns_nvlink = false;      // nothing else uses the members' NVLink ports
  bool blocking = false;         // its time is exposed on the members' compute streams
  bool all_to_all_v = false;     // members send sizes of their own (Op::varies)
  CommPath path = CommPath::kNetworkCollective;
};

// What posting a collective led to: the group is ready, still waiting (neither set), or the post
// cannot match (refused: why).
struct Posted {
  std::optional<ReadyCollective> ready;
  std::string refused;
};

// The rank -> program map the executor runs.
using ProgramOfRank = std::function<const workload::Program&(int32_t rank)>;

class CollectiveGroups {
 public:
  virtual ~CollectiveGroups() = default;
  // `rank` posts collective op `op` of its program.
  virtual Posted post(int32_t rank, uint32_t op) = 0;
};

// Groups of a layout: the members of (rank, op) are the ranks that differ from it only in the
// op's dimension, and each runs the same op index of the same program. With folding only the
// simulated members post.
class LayoutGroups final : public CollectiveGroups {
 public:
  // By dimension: consecutive group members per server, and whether the groups own their NVLink.
  using ByDim = std::array<int32_t, workload::kNumDims>;
  LayoutGroups(const workload::Layout& layout, ProgramOfRank program_of, const Folding& folding,
               const ByDim& per_server, const std::array<bool, workload::kNumDims>& owns_nvlink);
  Posted post(int32_t rank, uint32_t op) override;

 private:
  // Where `o` of `program` runs: its interference load (DeepEP's all-to-alls on their own SMs).
  CommPath path_of(const workload::Program& program, const workload::Op& o) const;

  const workload::Layout& layout_;
  ProgramOfRank program_of_;
  const Folding& folding_;
  ByDim per_server_;
  std::array<bool, workload::kNumDims> owns_nvlink_;
  // By dimension: (group id << 32 | op) -> members that have posted it.
  std::array<std::unordered_map<uint64_t, uint32_t>, workload::kNumDims> arrivals_;
};

// Communicators of an imported trace: the n-th collective a rank posts on a communicator meets
// the n-th of every other member, as NCCL's do on one communicator.
class ExplicitGroups final : public CollectiveGroups {
 public:
  // `groups[c]`: communicator c's members in ring order; `node_of(rank)`: the rank's server.
  // Throws std::invalid_argument for a member outside [0, world).
  ExplicitGroups(const std::vector<std::vector<int32_t>>& groups, int32_t world,
                 ProgramOfRank program_of, const std::function<int32_t(int32_t)>& node_of);
  Posted post(int32_t rank, uint32_t op) override;
  // Communicator `c`'s consecutive members per server (1 where servers hold unequal runs).
  int32_t per_server(std::size_t c) const { return per_server_[c]; }

 private:
  // Why (rank, op) cannot join the posts so far of its communicator's collective #seq; empty if
  // it can.
  std::string mismatch(int32_t rank, uint32_t op, uint32_t seq,
                       const std::vector<Post>& posts) const;
  ReadyCollective ready(int32_t comm, std::vector<Post> posts) const;

  const std::vector<std::vector<int32_t>>& groups_;
  ProgramOfRank program_of_;
  std::vector<int32_t> per_server_;
  std::unordered_map<uint64_t, uint32_t> seq_;             // (rank, comm) -> posted so far
  std::unordered_map<uint64_t, std::vector<Post>> posts_;  // (comm, sequence) -> posts
};

}  // namespace cs::exec
