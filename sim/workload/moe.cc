#include "sim/workload/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>

#include "sim/config/config_error.h"
#include "sim/core/input_file.h"

namespace cs::workload {
namespace {

// Fisher-Yates with our own index draws: std::shuffle's use of the generator is left to the
// library, and the same seed must give the same experts everywhere.
void shuffle(std::vector<double>& v, std::mt19937_64& rng) {
  for (std::size_t i = v.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng() % i);
    std::swap(v[i - 1], v[j]);
  }
}

std::vector<double> normalized(std::vector<double> v) {
  const double sum = std::accumulate(v.begin(), v.end(), 0.0);
  for (double& x : v) x /= sum;
  return v;
}

std::vector<std::vector<double>> read_histogram(const std::string& path, int32_t experts) {
  const InputFile file = read_input_file(path, kMaxTableBytes, "routing histogram");
  if (!file.opened) throw ConfigError("model.moe.routing.histogram_file: " + file.error);
  if (!file.ok()) throw ConfigError(file.error);
  std::istringstream in(file.bytes);
  std::vector<std::vector<double>> rows;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    std::istringstream fields(line);
    std::vector<double> row;
    std::string word;
    while (fields >> word) {
      const auto where = path + ":" + std::to_string(line_no) + ": ";
      std::size_t used = 0;
      double x = 0;
      try {
        x = std::stod(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != word.size() || !std::isfinite(x) || x < 0)
        throw ConfigError(where + "'" + word + "' is not a non-negative number");
      row.push_back(x);
    }
    if (row.empty()) continue;
    const auto where = path + ":" + std::to_string(line_no) + ": ";
    if (static_cast<int32_t>(row.size()) != experts)
      throw ConfigError(where + std::to_string(row.size()) + " shares for " +
                        std::to_string(experts) + " experts (model.moe.num_experts)");
    if (std::accumulate(row.begin(), row.end(), 0.0) <= 0)
      throw ConfigError(where + "every share is 0");
    rows.push_back(normalized(std::move(row)));
  }
  if (rows.empty()) throw ConfigError(path + ": the routing histogram has no rows");
  return rows;
}

}  // namespace

bool is_moe_layer(const clustersim::ModelConfig& model, int32_t layer) {
  return model.has_moe() && model.moe().num_experts() > 0 && layer >= model.moe().first_k_dense();
}

double ExpertLoad::max_over_mean() const {
  const double mean = std::accumulate(kept.begin(), kept.end(), 0.0) / kept.size();
  return mean > 0 ? *std::max_element(kept.begin(), kept.end()) / mean : 0;
}

RoutingTable::RoutingTable(const clustersim::RunConfig& config)
    : moe_(config.model().moe()),
      ep_(config.parallel().ep()),
      num_layers_(config.model().num_layers()) {
  const auto& routing = moe_.routing();
  if (routing.kind() == clustersim::RoutingDistribution::HISTOGRAM) {
    const int32_t moe_layers = config.model().num_layers() - moe_.first_k_dense();
    histogram_ = read_histogram(routing.histogram_file(), moe_.num_experts());
    if (histogram_.size() != 1 && static_cast<int32_t>(histogram_.size()) != moe_layers)
      throw ConfigError(routing.histogram_file() + ": " + std::to_string(histogram_.size()) +
                        " rows; give one row for every layer or one per MoE layer (" +
                        std::to_string(moe_layers) + ")");
  }
}

std::vector<double> RoutingTable::shares(int32_t layer) const {
  const auto e = static_cast<std::size_t>(moe_.num_experts());
  const auto& routing = moe_.routing();
  switch (routing.kind()) {
    case clustersim::RoutingDistribution::SKEWED: {
      // Zipf over the experts' popularity ranks, the ranks dealt to experts by a seeded shuffle.
      std::vector<double> v(e);
      for (std::size_t i = 0; i < e; ++i)
        v[i] = std::pow(static_cast<double>(i + 1), -routing.skew());
      std::mt19937_64 rng(routing.seed() * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(layer));
      shuffle(v, rng);
      return normalized(std::move(v));
    }
    case clustersim::RoutingDistribution::HISTOGRAM: {
      // A multi-token prediction block (layer >= num_layers) routes like the last layer.
      const int32_t l = std::min(layer, num_layers_ - 1);
      const auto row =
          histogram_.size() == 1 ? 0 : static_cast<std::size_t>(l - moe_.first_k_dense());
      return histogram_[row];
    }
    default:
      return std::vector<double>(e, 1.0 / static_cast<double>(e));
  }
}

ExpertLoad RoutingTable::load(int32_t layer) const {
  ExpertLoad l;
  l.routed = shares(layer);
  l.kept = l.routed;
  const auto e = l.routed.size();
  if (moe_.capacity_factor() > 0) {
    // Each expert takes at most capacity_factor x its balanced share; the rest is dropped.
    const double cap = moe_.capacity_factor() / static_cast<double>(e);
    for (double& s : l.kept) s = std::min(s, cap);
  }
  l.dropped = std::max(0.0, 1.0 - std::accumulate(l.kept.begin(), l.kept.end(), 0.0));
  const std::size_t per_rank = e / static_cast<std::size_t>(ep_);
  l.rank_share.assign(static_cast<std::size_t>(ep_), 0.0);
  for (std::size_t x = 0; x < e; ++x) l.rank_share[x / per_rank] += l.kept[x];
  return l;
}

}  // namespace cs::workload
