#include "sim/trace/chakra_attrs.h"

#include <cctype>
#include <climits>

#include "sim/trace/trace_format.h"

namespace cs::trace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;

void NodeContext::fail(const std::string& why) const {
  throw TraceError(file + ": rank " + std::to_string(rank) + ": node " + std::to_string(node.id()) +
                   " (" + node.name() + "): " + why);
}

const AttributeProto* find_attr(const Node& node, std::string_view name) {
  for (const auto& a : node.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

const AttributeProto* find_attr(const NodeContext& ctx, std::string_view name) {
  if (const auto* a = find_attr(ctx.node, name)) return a;
  return ctx.inherit ? find_attr(*ctx.inherit, name) : nullptr;
}

namespace {

int64_t checked(const NodeContext& ctx, std::string_view name, uint64_t v) {
  if (v > static_cast<uint64_t>(INT64_MAX))
    ctx.fail("attribute " + std::string(name) + " is out of range");
  return static_cast<int64_t>(v);
}

// Parses "[1, 2, 3]" (or "1, 2, 3"); nullopt when it is not such a list.
std::optional<std::vector<int64_t>> parse_list(std::string_view s) {
  std::vector<int64_t> out;
  std::size_t i = 0;
  auto skip = [&] {
    while (i < s.size() && (std::isspace(static_cast<unsigned char>(s[i])) || s[i] == '[' ||
                            s[i] == ']' || s[i] == ','))
      ++i;
  };
  skip();
  while (i < s.size()) {
    const std::size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == start || i - start > 18) return std::nullopt;
    out.push_back(std::stoll(std::string(s.substr(start, i - start))));
    skip();
  }
  return out;
}

}  // namespace

std::optional<int64_t> int_attr(const NodeContext& ctx, std::string_view name) {
  const AttributeProto* a = find_attr(ctx, name);
  if (!a) return std::nullopt;
  switch (a->value_case()) {
    case AttributeProto::kInt32Val:
      return a->int32_val();
    case AttributeProto::kInt64Val:
      return a->int64_val();
    case AttributeProto::kUint32Val:
      return a->uint32_val();
    case AttributeProto::kUint64Val:
      return checked(ctx, name, a->uint64_val());
    case AttributeProto::kSint32Val:
      return a->sint32_val();
    case AttributeProto::kSint64Val:
      return a->sint64_val();
    case AttributeProto::kFixed32Val:
      return a->fixed32_val();
    case AttributeProto::kFixed64Val:
      return checked(ctx, name, a->fixed64_val());
    case AttributeProto::kSfixed32Val:
      return a->sfixed32_val();
    case AttributeProto::kSfixed64Val:
      return a->sfixed64_val();
    case AttributeProto::kBoolVal:
      return a->bool_val() ? 1 : 0;
    default:
      ctx.fail("attribute " + std::string(name) + " is not an integer");
  }
}

int64_t required_int(const NodeContext& ctx, std::string_view name) {
  const auto v = int_attr(ctx, name);
  if (!v) ctx.fail("attribute " + std::string(name) + " is missing");
  return *v;
}

std::optional<std::string> string_attr(const NodeContext& ctx, std::string_view name) {
  const AttributeProto* a = find_attr(ctx, name);
  if (!a) return std::nullopt;
  if (a->value_case() == AttributeProto::kStringVal) return a->string_val();
  if (const auto v = int_attr(ctx, name)) return std::to_string(*v);
  return std::nullopt;
}

std::optional<std::vector<int64_t>> int_list_attr(const NodeContext& ctx, std::string_view name) {
  const AttributeProto* a = find_attr(ctx, name);
  if (!a) return std::nullopt;
  std::vector<int64_t> out;
  auto take = [&](const auto& list) {
    for (const auto v : list.values()) out.push_back(static_cast<int64_t>(v));
  };
  switch (a->value_case()) {
    case AttributeProto::kInt32List:
      take(a->int32_list());
      break;
    case AttributeProto::kInt64List:
      take(a->int64_list());
      break;
    case AttributeProto::kUint32List:
      take(a->uint32_list());
      break;
    case AttributeProto::kUint64List:
      for (const auto v : a->uint64_list().values()) out.push_back(checked(ctx, name, v));
      break;
    case AttributeProto::kSint32List:
      take(a->sint32_list());
      break;
    case AttributeProto::kSint64List:
      take(a->sint64_list());
      break;
    case AttributeProto::kStringVal: {
      auto parsed = parse_list(a->string_val());
      if (!parsed) ctx.fail("attribute " + std::string(name) + " is not a list of integers");
      out = std::move(*parsed);
      break;
    }
    default:
      ctx.fail("attribute " + std::string(name) + " is not a list of integers");
  }
  for (const int64_t v : out)
    if (v < 0) ctx.fail("attribute " + std::string(name) + " has a negative entry");
  return out;
}

Bytes size_attr(const NodeContext& ctx, std::string_view name) {
  const int64_t v = required_int(ctx, name);
  if (v < 0) ctx.fail("attribute " + std::string(name) + " is negative");
  return static_cast<Bytes>(v);
}

int32_t peer_attr(const NodeContext& ctx, std::string_view name, int32_t world) {
  const int64_t v = required_int(ctx, name);
  if (v < 0 || v >= world)
    ctx.fail("attribute " + std::string(name) + " = " + std::to_string(v) +
             " is not a rank of this " + std::to_string(world) + "-rank trace");
  return static_cast<int32_t>(v);
}

Time micros(const NodeContext& ctx, uint64_t us) {
  if (us > static_cast<uint64_t>(INT64_MAX / 1'000'000)) ctx.fail("duration_micros is too large");
  return Time::ps(static_cast<int64_t>(us) * 1'000'000);
}

}  // namespace cs::trace
