#include "sim/exec/all_to_all_plans.h"

#include <functional>
#include <utility>

namespace cs::exec {

std::size_t AllToAllPlans::KeyHash::operator()(const Key& k) const {
  return std::hash<uint64_t>{}(static_cast<uint64_t>(std::get<0>(k)) << 32 | std::get<1>(k)) ^
         std::hash<Bytes>{}(std::get<2>(k)) * 31;
}

const AllToAllPlan* AllToAllPlans::find(const Key& key) const {
  const auto it = kept_.find(key);
  return it == kept_.end() ? nullptr : &it->second;
}

const AllToAllPlan& AllToAllPlans::store(const Key& key, AllToAllPlan plan) {
  if (edges_ + plan.edges->size() > max_edges_) return one_off(std::move(plan));
  edges_ += plan.edges->size();
  return kept_.emplace(key, std::move(plan)).first->second;
}

const AllToAllPlan& AllToAllPlans::one_off(AllToAllPlan plan) {
  scratch_ = std::move(plan);
  return scratch_;
}

}  // namespace cs::exec
