// Shared builders of synthetic Chakra execution-trace nodes for the trace tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/chakra_et.pb.h"

namespace cs::testing_support {

using ChakraNode = ChakraProtoMsg::Node;

inline ChakraNode node(uint64_t id, ChakraProtoMsg::NodeType type,
                       std::vector<uint64_t> deps = {}) {
  ChakraNode n;
  n.set_id(id);
  std::string name(1, 'n');  // appended, not "n" + ...: GCC 12 warns falsely (-Wrestrict) on that
  name += std::to_string(id);
  n.set_name(name);
  n.set_type(type);
  for (const auto d : deps) n.add_data_deps(d);
  return n;
}
inline void attr_i64(ChakraNode& n, const std::string& name, int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
inline void attr_u32(ChakraNode& n, const std::string& name, uint32_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_uint32_val(v);
}
// A compute node of `ps` picoseconds.
inline ChakraNode comp(uint64_t id, int64_t ps, std::vector<uint64_t> deps = {}) {
  ChakraNode n = node(id, ChakraProtoMsg::COMP_NODE, deps);
  attr_i64(n, "duration_ps", ps);
  return n;
}
// A collective of Chakra comm_type `type` over `size` bytes.
inline ChakraNode coll(uint64_t id, int64_t type, int64_t size, std::vector<uint64_t> deps = {}) {
  ChakraNode n = node(id, ChakraProtoMsg::COMM_COLL_NODE, deps);
  attr_i64(n, "comm_type", type);
  attr_i64(n, "comm_size", size);
  return n;
}
// A send to (or receive from) rank `peer`.
inline ChakraNode p2p(uint64_t id, bool send, int32_t peer, int64_t size,
                      std::vector<uint64_t> deps = {}) {
  ChakraNode n =
      node(id, send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE, deps);
  attr_u32(n, send ? "comm_dst" : "comm_src", static_cast<uint32_t>(peer));
  attr_i64(n, "comm_size", size);
  return n;
}

}  // namespace cs::testing_support
