#include "sim/trace/chakra_all_to_all_v.h"

#include <cmath>
#include <string>

#include "sim/trace/varying_ops.h"

namespace cs::trace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;

namespace {

// Our attributes: another reader ignores them and takes the split sizes.
constexpr const char* kBytes = "all_to_all_v_bytes";
constexpr const char* kShare = "all_to_all_v_share";
constexpr const char* kReverse = "all_to_all_v_reverse";
constexpr const char* kCopies = "all_to_all_v_copies_per_token";
constexpr const char* kTopK = "all_to_all_v_top_k";
constexpr const char* kMaxNodes = "all_to_all_v_max_nodes";
constexpr const char* kDeduplicated = "all_to_all_v_deduplicated";
constexpr const char* kTokens = "all_to_all_v_tokens";

AttributeProto* add(Node& node, const char* name) {
  auto* a = node.add_attr();
  a->set_name(name);
  return a;
}

void add_splits(Node& node, const char* name, const std::vector<double>& bytes) {
  auto* list = add(node, name)->mutable_int64_list();
  for (const double b : bytes) list->add_values(std::llround(b));
}

}  // namespace

void add_all_to_all_v_attrs(Node& node, Bytes bytes, const workload::AllToAllV& v,
                            const TransferMatrix& matrix, std::size_t self) {
  std::vector<double> in(matrix.size()), out(matrix.size());
  for (std::size_t d = 0; d < matrix.size(); ++d) {
    in[d] = matrix[self][d];
    out[d] = matrix[d][self];
  }
  add_splits(node, "in_split_size", in);
  add_splits(node, "out_split_size", out);
  add(node, kBytes)->set_int64_val(static_cast<int64_t>(bytes));
  auto* share = add(node, kShare)->mutable_double_list();
  for (const double s : v.share) share->add_values(s);
  add(node, kReverse)->set_bool_val(v.reverse);
  add(node, kCopies)->set_double_val(v.copies_per_token);
  add(node, kTopK)->set_int64_val(v.top_k);
  add(node, kMaxNodes)->set_int64_val(v.max_nodes);
  add(node, kDeduplicated)->set_bool_val(v.deduplicated);
  add(node, kTokens)->set_int64_val(v.tokens);
}

std::optional<ExactAllToAllV> exact_all_to_all_v(const NodeContext& ctx, std::size_t n) {
  const AttributeProto* share = find_attr(ctx.node, kShare);
  if (!share) return std::nullopt;
  if (share->value_case() != AttributeProto::kDoubleList)
    ctx.fail(std::string(kShare) + " is not a list of doubles");
  const auto bytes = int_attr(ctx, kBytes);
  if (!bytes) ctx.fail(std::string(kBytes) + " is missing beside " + kShare);
  if (*bytes < 0) ctx.fail(std::string(kBytes) + " is negative");
  workload::AllToAllV v;
  v.share.assign(share->double_list().values().begin(), share->double_list().values().end());
  if (v.share.size() != n)
    ctx.fail(std::string(kShare) + " has " + std::to_string(v.share.size()) +
             " entries for a group of " + std::to_string(n) + " ranks");
  auto flag = [&](const char* name) {
    const AttributeProto* a = find_attr(ctx.node, name);
    if (a && a->value_case() != AttributeProto::kBoolVal)
      ctx.fail(std::string(name) + " is not a bool");
    return a && a->bool_val();
  };
  v.reverse = flag(kReverse);
  v.deduplicated = flag(kDeduplicated);
  if (const auto* a = find_attr(ctx.node, kCopies)) {
    if (a->value_case() != AttributeProto::kDoubleVal)
      ctx.fail(std::string(kCopies) + " is not a double");
    v.copies_per_token = a->double_val();
  }
  auto small_int = [&](const char* name, int32_t fallback) {
    const auto value = int_attr(ctx, name);
    if (!value) return fallback;
    if (*value < INT32_MIN || *value > INT32_MAX) ctx.fail(std::string(name) + " is out of range");
    return static_cast<int32_t>(*value);
  };
  v.top_k = small_int(kTopK, 1);
  v.max_nodes = small_int(kMaxNodes, 0);
  v.tokens = int_attr(ctx, kTokens).value_or(0);
  if (const auto problem = all_to_all_v_problem(v)) ctx.fail("all_to_all_v_" + *problem);
  return ExactAllToAllV{static_cast<Bytes>(*bytes), std::move(v)};
}

double sent_bytes(const TransferMatrix& matrix, std::size_t self) {
  double sum = 0;
  for (const double b : matrix[self]) sum += b;
  return sum;
}

TransferMatrix transfer_matrix(const std::vector<AllToAllPost>& posts) {
  const std::size_t n = posts.size();
  TransferMatrix m(n, std::vector<double>(n, 0.0));
  for (std::size_t s = 0; s < n; ++s) {
    const auto bytes = static_cast<double>(posts[s].bytes);
    for (std::size_t d = 0; d < n; ++d) {
      const auto* v = posts[s].v;
      const double share = v ? (d < v->share.size() ? v->share[d] : 0.0) : 1.0 / n;
      if (v && v->reverse)
        m[d][s] += bytes * share;
      else
        m[s][d] += bytes * share;
    }
  }
  return m;
}

}  // namespace cs::trace
