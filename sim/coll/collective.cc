#include "sim/coll/collective.h"

#include <algorithm>
#include <array>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sim/coll/algorithms/registry.h"

namespace cs::coll {
namespace {

constexpr std::array<std::pair<Op, std::string_view>, kNumOps> kOpNames{{
    {Op::kAllReduce, "all_reduce"},
    {Op::kAllGather, "all_gather"},
    {Op::kReduceScatter, "reduce_scatter"},
    {Op::kAllToAll, "all_to_all"},
    {Op::kBroadcast, "broadcast"},
    {Op::kSendRecv, "send_recv"},
}};

// The algorithms' names: the table's, in Algorithm order, then kAuto's.
const std::vector<std::pair<Algorithm, std::string_view>>& algorithm_names() {
  static const std::vector<std::pair<Algorithm, std::string_view>> names = [] {
    std::vector<std::pair<Algorithm, std::string_view>> v;
    for (const AlgorithmInfo& a : algorithm_table()) v.emplace_back(a.value, a.name);
    v.emplace_back(Algorithm::kAuto, "auto");
    return v;
  }();
  return names;
}

template <typename E>
E parse(std::span<const std::pair<E, std::string_view>> names, std::string_view text,
        const char* what) {
  std::string choices;
  for (const auto& [value, name] : names) {
    if (name == text) return value;
    choices += choices.empty() ? "" : ", ";
    choices += name;
  }
  throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(text) +
                              "' (expected one of: " + choices + ")");
}

template <typename E>
std::string_view name_of(std::span<const std::pair<E, std::string_view>> names, E value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return "?";
}

}  // namespace

Op parse_op(std::string_view text) {
  return parse<Op>(kOpNames, text, "collective op");
}
Algorithm parse_algorithm(std::string_view text) {
  return parse<Algorithm>(algorithm_names(), text, "collective algorithm");
}
std::string_view to_string(Op op) {
  return name_of<Op>(kOpNames, op);
}
std::string_view to_string(Algorithm algo) {
  return name_of<Algorithm>(algorithm_names(), algo);
}

Algorithm resolve(Algorithm algo, Op op) {
  if (algo != Algorithm::kAuto) return algo;
  return op == Op::kAllToAll || op == Op::kSendRecv ? Algorithm::kDirect : Algorithm::kRing;
}

Algorithm choose_algorithm(Op op, int32_t n, int32_t members_per_node, Bytes size) {
  if (op != Op::kAllReduce || n <= 1 || members_per_node >= n) {
    return resolve(Algorithm::kAuto, op);
  }
  if (size < kTreeMaxBytes) return Algorithm::kTree;
  if (members_per_node > 1 && n % members_per_node == 0) return Algorithm::kHierarchical;
  return Algorithm::kRing;
}

int32_t members_per_server(int32_t n, const std::function<int32_t(int32_t)>& server_of) {
  if (n <= 0) return 1;
  const int32_t first = server_of(0);
  int32_t local = 1;
  while (local < n && server_of(local) == first) ++local;
  std::unordered_set<int32_t> seen{first};
  int32_t previous = first;
  for (int32_t i = local; i < n; ++i) {
    // Each run opens a server not seen before and keeps to it.
    const int32_t server = server_of(i);
    const bool ok = i % local == 0 ? seen.insert(server).second : server == previous;
    if (!ok) return 1;
    previous = server;
  }
  return local;
}

int32_t common_members_per_server(int32_t groups, int32_t n,
                                  const std::function<int32_t(int32_t, int32_t)>& server_of) {
  int32_t common = 0;
  for (int32_t g = 0; g < groups; ++g) {
    const int32_t local = members_per_server(n, [&](int32_t i) { return server_of(g, i); });
    if (common != 0 && local != common) return 1;
    common = local;
  }
  return std::max(common, 1);
}

bool supports(Algorithm algo, Op op) {
  return find_form(resolve(algo, op), op) != nullptr;
}

double bus_bandwidth_factor(Op op, int n) {
  if (n < 1) throw std::invalid_argument("group size must be at least 1");
  const double nd = n;
  switch (op) {
    case Op::kAllReduce:
      return 2.0 * (nd - 1) / nd;
    case Op::kAllGather:
    case Op::kReduceScatter:
    case Op::kAllToAll:
      return (nd - 1) / nd;
    case Op::kBroadcast:
    case Op::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

}  // namespace cs::coll
