// Reading one Chakra node's attributes, in any integer encoding the schema offers, with errors
// that name the file, rank and node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/chakra_et.pb.h"
#include "sim/core/units.h"

namespace cs::trace {

struct NodeContext {
  const std::string& file;
  int32_t rank;
  const ChakraProtoMsg::Node& node;
  // A wrapper (record_param_comms, c10d::...) whose attributes fill in those the node lacks.
  const ChakraProtoMsg::Node* inherit = nullptr;
  [[noreturn]] void fail(const std::string& why) const;
};

const ChakraProtoMsg::AttributeProto* find_attr(const ChakraProtoMsg::Node& node,
                                                std::string_view name);
// The node's attribute, else its wrapper's.
const ChakraProtoMsg::AttributeProto* find_attr(const NodeContext& ctx, std::string_view name);
// Any integer encoding (and bool as 0 / 1); fails on a value of another kind.
std::optional<int64_t> int_attr(const NodeContext& ctx, std::string_view name);
int64_t required_int(const NodeContext& ctx, std::string_view name);
// A string, or an integer written out.
std::optional<std::string> string_attr(const NodeContext& ctx, std::string_view name);
// An integer list attribute, or a string "[a, b, ...]" (PyTorch's record_param_comms writes split
// sizes so); nullopt when absent. Fails on negative or malformed entries.
std::optional<std::vector<int64_t>> int_list_attr(const NodeContext& ctx, std::string_view name);
Bytes size_attr(const NodeContext& ctx, std::string_view name);
// A rank of a `world`-rank trace.
int32_t peer_attr(const NodeContext& ctx, std::string_view name, int32_t world);
Time micros(const NodeContext& ctx, uint64_t us);

}  // namespace cs::trace
