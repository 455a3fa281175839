#include "sim/run/placement.h"

#include <algorithm>
#include <charconv>

#include "sim/config/config_error.h"

namespace cs::run {

namespace {

[[noreturn]] void fail(const std::string& why) {
  throw ConfigError("--placement: " + why);
}

int32_t parse_index(std::string_view text, std::string_view range) {
  int32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0)
    fail("\"" + std::string(range) + "\" is not a GPU range FIRST-LAST");
  return value;
}

GpuRange parse_range(std::string_view text) {
  const auto dash = text.find('-');
  if (dash == std::string_view::npos)
    fail("\"" + std::string(text) + "\" is not a GPU range FIRST-LAST");
  const GpuRange r{parse_index(text.substr(0, dash), text),
                   parse_index(text.substr(dash + 1), text)};
  if (r.last < r.first) fail("range " + std::string(text) + " ends before it starts");
  return r;
}

std::string range_text(const GpuRange& r) {
  return std::to_string(r.first) + "-" + std::to_string(r.last);
}

std::vector<std::vector<int32_t>> place_packed(std::span<const int32_t> job_gpus,
                                               int32_t per_server) {
  std::vector<std::vector<int32_t>> gpus;
  int32_t next = 0;
  for (const int32_t n : job_gpus) {
    auto& job = gpus.emplace_back(static_cast<std::size_t>(n));
    for (int32_t r = 0; r < n; ++r) job[static_cast<std::size_t>(r)] = next + r;
    next += (n + per_server - 1) / per_server * per_server;
  }
  return gpus;
}

std::vector<std::vector<int32_t>> place_spread(std::span<const int32_t> job_gpus,
                                               int32_t per_server) {
  std::vector<std::vector<int32_t>> gpus(job_gpus.size());
  int32_t server = 0;
  for (bool dealt = true; dealt;) {
    dealt = false;
    for (std::size_t j = 0; j < job_gpus.size(); ++j) {
      auto& job = gpus[j];
      const auto left = job_gpus[j] - static_cast<int32_t>(job.size());
      if (left == 0) continue;
      for (int32_t g = 0; g < std::min(left, per_server); ++g)
        job.push_back(server * per_server + g);
      ++server;
      dealt = true;
    }
  }
  return gpus;
}

std::vector<std::vector<int32_t>> place_ranges(const PlacementSpec& spec,
                                               std::span<const int32_t> job_gpus,
                                               int32_t per_server) {
  if (spec.ranges.size() != job_gpus.size())
    fail(std::to_string(spec.ranges.size()) + " GPU ranges for " + std::to_string(job_gpus.size()) +
         " jobs");
  std::vector<std::vector<int32_t>> gpus;
  for (std::size_t j = 0; j < job_gpus.size(); ++j) {
    const GpuRange& r = spec.ranges[j];
    const int64_t size = int64_t{r.last} - r.first + 1;
    if (size != job_gpus[j])
      fail("range " + range_text(r) + " holds " + std::to_string(size) + " GPUs, job " +
           std::to_string(j) + " needs " + std::to_string(job_gpus[j]));
    if (r.first % per_server != 0)
      fail("range " + range_text(r) + " starts inside a server (" + std::to_string(per_server) +
           " GPUs each); jobs start on a server boundary");
    for (std::size_t k = 0; k < j; ++k) {
      const GpuRange& o = spec.ranges[k];
      // Jobs never share a server, so a range ending mid-server reserves the rest of it.
      const int64_t o_end = (int64_t{o.last} / per_server + 1) * per_server - 1;
      const int64_t r_end = (int64_t{r.last} / per_server + 1) * per_server - 1;
      if (r.first <= o_end && o.first <= r_end)
        fail("ranges " + range_text(o) + " (job " + std::to_string(k) + ") and " + range_text(r) +
             " (job " + std::to_string(j) + ") share GPUs or a server");
    }
    auto& job = gpus.emplace_back(static_cast<std::size_t>(size));
    for (int32_t i = 0; i < size; ++i) job[static_cast<std::size_t>(i)] = r.first + i;
  }
  return gpus;
}

}  // namespace

PlacementSpec parse_placement(const std::string& text) {
  if (text == "packed") return {PlacementKind::kPacked, {}};
  if (text == "spread") return {PlacementKind::kSpread, {}};
  if (text.empty() || text.find_first_not_of("0123456789-,") != std::string::npos)
    fail("unknown placement \"" + text +
         "\"; use packed, spread or GPU ranges like 0-511,512-1023");
  PlacementSpec spec{PlacementKind::kRanges, {}};
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    spec.ranges.push_back(parse_range(rest.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return spec;
}

std::vector<std::vector<int32_t>> place_jobs(const PlacementSpec& spec,
                                             std::span<const int32_t> job_gpus,
                                             int32_t gpus_per_server, int64_t cluster_gpus) {
  if (gpus_per_server < 1) fail("the cluster has no GPUs per server");
  auto gpus = spec.kind == PlacementKind::kPacked   ? place_packed(job_gpus, gpus_per_server)
              : spec.kind == PlacementKind::kSpread ? place_spread(job_gpus, gpus_per_server)
                                                    : place_ranges(spec, job_gpus, gpus_per_server);
  int64_t highest = -1, total = 0;
  for (const auto& job : gpus) {
    total += static_cast<int64_t>(job.size());
    if (!job.empty())
      highest = std::max<int64_t>(highest, *std::max_element(job.begin(), job.end()));
  }
  if (highest >= cluster_gpus)
    fail("the jobs need " + std::to_string(total) + " GPUs placed up to GPU " +
         std::to_string(highest) + ", the cluster has " + std::to_string(cluster_gpus));
  return gpus;
}

std::string placement_text(const PlacementSpec& spec) {
  if (spec.kind == PlacementKind::kPacked) return "packed";
  if (spec.kind == PlacementKind::kSpread) return "spread";
  std::string s;
  for (const auto& r : spec.ranges) s += (s.empty() ? "" : ",") + range_text(r);
  return s;
}

}  // namespace cs::run
