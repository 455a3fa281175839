// All-to-all-v in Chakra ALL_TO_ALL nodes: the split-size attributes PyTorch's execution traces
// carry, plus exact attributes of our own so that an export reads back to the same transfers.
#pragma once

#include <optional>
#include <vector>

#include "proto/chakra_et.pb.h"
#include "sim/core/units.h"
#include "sim/trace/chakra_attrs.h"
#include "sim/workload/program.h"

namespace cs::trace {

// Bytes member s sends to member d of one all-to-all-v, row s.
using TransferMatrix = std::vector<std::vector<double>>;

// Writes in_split_size and out_split_size (whole bytes to and from each member, this rank's own
// block included: PyTorch's execution-trace observer records all_to_all_single's input and
// output split sizes under these names) from `matrix` and this rank's place `self` in the group,
// and the op's exact `bytes` and entry `v` as all_to_all_v_* attributes.
void add_all_to_all_v_attrs(ChakraProtoMsg::Node& node, Bytes bytes, const workload::AllToAllV& v,
                            const TransferMatrix& matrix, std::size_t self);

// What a node written by add_all_to_all_v_attrs carries, for a group of `n`; nullopt when it has
// none (a trace from elsewhere). Fails naming the node on malformed or inconsistent values.
struct ExactAllToAllV {
  Bytes bytes = 0;
  workload::AllToAllV v;
};
std::optional<ExactAllToAllV> exact_all_to_all_v(const NodeContext& ctx, std::size_t n);

// What member `self` sends in all: comm_size, as Chakra's PyTorch converter takes it from the
// input tensor.
double sent_bytes(const TransferMatrix& matrix, std::size_t self);

// What an all-to-all-v over `members` moves: each post's own bytes x shares (posts without an
// entry: equal blocks), as Executor::run_explicit_all_to_all_v sends them. posts[i] is member i's.
struct AllToAllPost {
  Bytes bytes = 0;
  const workload::AllToAllV* v = nullptr;  // nullptr: equal blocks
};
TransferMatrix transfer_matrix(const std::vector<AllToAllPost>& posts);

}  // namespace cs::trace
