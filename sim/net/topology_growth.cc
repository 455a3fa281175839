#include "sim/net/topology_growth.h"

#include <algorithm>
#include <cmath>

#include "sim/config/config_error.h"
#include "sim/config/field_checks.h"

namespace cs::net {

namespace {

constexpr int64_t kSaturated = int64_t{1} << 40;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

double over_of(const clustersim::Tier& tier) {
  return tier.oversubscription() > 0 ? tier.oversubscription() : 1.0;
}

int64_t capacity_of(const google::protobuf::RepeatedPtrField<clustersim::Tier>& tiers) {
  int64_t servers = 1;
  for (const auto& tier : tiers) {
    servers = std::min<int64_t>(servers * std::max(tier.group_size(), 1), kSaturated);
  }
  return servers;
}

// Down ports each switch of tier k uses, counted in ports of the NIC's speed: at the leaf the
// NICs it serves, above it the child switches' uplinks it terminates (spread evenly over the
// group's switches; in bandwidth terms when they do not divide).
double down_ports(const clustersim::TieredTopology& t, int k) {
  const auto& tier = t.tiers(k);
  if (k == 0) {
    const int64_t nics = int64_t{t.node().gpus_per_node()} * t.node().nics_per_gpu();
    return std::ceil(static_cast<double>(tier.group_size()) * static_cast<double>(nics) /
                     tier.switches_per_group());
  }
  const auto& child = t.tiers(k - 1);
  const double child_up = child.radix() - down_ports(t, k - 1);
  return child_up * child.switches_per_group() * tier.group_size() / tier.switches_per_group();
}

// Uplink ports of a switch of tier k when it keeps its oversubscription: down / o.
double up_ports(const clustersim::TieredTopology& t, int k) {
  return std::ceil(down_ports(t, k) / over_of(t.tiers(k)));
}

// The smallest count >= `at_least` that divides `ports`, so that every child group's uplinks
// split evenly over the new tier's switches; `ports` itself when none does.
int64_t even_split(int64_t at_least, int64_t ports) {
  for (int64_t s = std::max<int64_t>(at_least, 1); s <= ports; ++s) {
    if (ports % s == 0) return s;
  }
  return std::max(at_least, ports);
}

[[noreturn]] void cannot_grow(const std::string& name, int64_t servers, const std::string& why) {
  throw ConfigError("topology " + name + " cannot grow to " + std::to_string(servers) +
                    " servers: " + why);
}

// One FAT_TREE step: the top tier becomes a middle tier and `growth.top` is added above it.
void add_fat_tree_tier(clustersim::TieredTopology& t, int64_t servers, const std::string& name) {
  const int k = t.tiers_size() - 1;
  clustersim::Tier& mid = *t.mutable_tiers(k);
  const clustersim::Tier& child = t.tiers(k - 1);
  // Give up ports to uplinks: radix x o / (1 + o) down, the rest up.
  const double o = over_of(mid);
  const auto down = static_cast<int64_t>(std::floor(mid.radix() * o / (1 + o)));
  const int64_t up = mid.radix() - down;
  const double child_up = child.radix() - down_ports(t, k - 1);
  const double per_child_group = child_up * child.switches_per_group() / mid.switches_per_group();
  const auto group = static_cast<int32_t>(std::floor(down / per_child_group));
  if (group < 1) {
    cannot_grow(name, servers,
                "tier '" + mid.name() + "' has " + std::to_string(down) +
                    " down ports left per switch, fewer than one child group needs");
  }
  mid.set_group_size(group);
  const int64_t below = capacity_of(t.tiers());
  clustersim::Tier top = t.growth().top();
  const int64_t children = std::min<int64_t>(ceil_div(servers, below), top.radix());
  const int64_t group_ports = int64_t{mid.switches_per_group()} * up;
  top.set_group_size(static_cast<int32_t>(children));
  top.set_switches_per_group(
      static_cast<int32_t>(even_split(ceil_div(children * group_ports, top.radix()), group_ports)));
  *t.add_tiers() = top;
}

}  // namespace

int64_t described_capacity_servers(const clustersim::TieredTopology& t) {
  return capacity_of(t.tiers());
}

void validate_growth(const clustersim::TieredTopology& t, const std::string& src) {
  for (int i = 0; i < t.tiers_size(); ++i) {
    if (t.tiers(i).radix() < 0) {
      config_fail(src, "tiered.tiers[" + std::to_string(i) + "].radix must be >= 0 (is " +
                           std::to_string(t.tiers(i).radix()) + ")");
    }
  }
  if (t.growth().mode() != clustersim::Growth::FAT_TREE) return;
  if (t.tiers_size() < 2) {
    config_fail(src, "tiered.growth FAT_TREE needs at least a leaf and a spine tier to grow from");
  }
  for (int i = 0; i < t.tiers_size(); ++i) {
    const std::string field = "tiered.tiers[" + std::to_string(i) + "]";
    if (t.tiers(i).radix() <= 0) {
      config_fail(src, field + ".radix must be > 0 for tiered.growth FAT_TREE");
    }
    const double need = down_ports(t, i) + (i + 1 < t.tiers_size() ? up_ports(t, i) : 0);
    if (need > t.tiers(i).radix()) {
      config_fail(src, field + " needs " + std::to_string(static_cast<int64_t>(std::ceil(need))) +
                           " ports per switch, more than its radix of " +
                           std::to_string(t.tiers(i).radix()));
    }
  }
  const auto& top = t.growth().top();
  if (top.radix() < 2) {
    config_fail(src,
                "tiered.growth.top.radix must be >= 2 (is " + std::to_string(top.radix()) + ")");
  }
  require_non_negative(top.link_latency_ns(), src, "tiered.growth.top.link_latency_ns");
  if (top.oversubscription() != 0) {
    require_positive(top.oversubscription(), src, "tiered.growth.top.oversubscription");
  }
}

clustersim::TieredTopology grow_for_servers(const clustersim::TieredTopology& t, int64_t servers,
                                            const std::string& name) {
  clustersim::TieredTopology grown = t;
  if (servers <= capacity_of(t.tiers()) || t.tiers_size() == 0) return grown;
  switch (t.growth().mode()) {
    case clustersim::Growth::WIDEN_TOP: {
      const int64_t below = capacity_of(t.tiers()) / std::max(t.tiers().rbegin()->group_size(), 1);
      grown.mutable_tiers(t.tiers_size() - 1)
          ->set_group_size(static_cast<int32_t>(ceil_div(servers, below)));
      return grown;
    }
    case clustersim::Growth::FAT_TREE:
      // Each step multiplies the reach by at least the top radix / 2, so this ends quickly.
      for (int step = 0; capacity_of(grown.tiers()) < servers; ++step) {
        if (step >= 8) cannot_grow(name, servers, "more than 8 added tiers");
        add_fat_tree_tier(grown, servers, name);
      }
      return grown;
    default:
      cannot_grow(name, servers,
                  "its tiers hold " + std::to_string(capacity_of(t.tiers())) +
                      " and tiered.growth is NONE");
  }
}

}  // namespace cs::net
