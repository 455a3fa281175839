#include "sim/cost/failure_rates.h"

#include <google/protobuf/descriptor.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "sim/config/config_error.h"

namespace cs::cost {

namespace {

const google::protobuf::Message& rates_of(const clustersim::ReliabilityConfig& r, FailureUnit u) {
  switch (u) {
    case FailureUnit::kGpu:
      return r.per_gpu_day();
    case FailureUnit::kServer:
      return r.per_server_day();
    case FailureUnit::kNic:
      return r.per_nic_day();
  }
  throw std::logic_error("unknown failure unit");
}

const char* unit_field(FailureUnit u) {
  switch (u) {
    case FailureUnit::kGpu:
      return "per_gpu_day";
    case FailureUnit::kServer:
      return "per_server_day";
    case FailureUnit::kNic:
      return "per_nic_day";
  }
  throw std::logic_error("unknown failure unit");
}

int64_t count_of(const FleetCounts& c, FailureUnit u) {
  switch (u) {
    case FailureUnit::kGpu:
      return c.gpus;
    case FailureUnit::kServer:
      return c.servers;
    case FailureUnit::kNic:
      return c.nics;
  }
  throw std::logic_error("unknown failure unit");
}

std::string to_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

double rate_per_unit_day(const clustersim::ReliabilityConfig& r, const FailureCause& cause) {
  const google::protobuf::Message& rates = rates_of(r, cause.unit);
  const auto* field = rates.GetDescriptor()->FindFieldByName(std::string(cause.name));
  if (field == nullptr) throw std::logic_error("no failure rate field " + std::string(cause.name));
  // Reflection returns the field's default when it is unset (also in a default instance).
  return rates.GetReflection()->GetDouble(rates, field);
}

std::string cause_field(const FailureCause& cause) {
  return std::string(unit_field(cause.unit)) + "." + std::string(cause.name);
}

Interruptions interruptions_of(const clustersim::ReliabilityConfig& r, const FleetCounts& counts,
                               const std::string& source) {
  Interruptions out;
  for (std::size_t i = 0; i < kNumFailureCauses; ++i) {
    const FailureCause& cause = kFailureCauses[i];
    const double rate = rate_per_unit_day(r, cause);
    if (!(rate >= 0 && rate <= kMaxRatePerDay))
      throw ConfigError(source + ": reliability." + cause_field(cause) + " must be a rate in [0, " +
                        to_text(kMaxRatePerDay) + "] per day, not " + to_text(rate));
    out.per_day[i] = rate * static_cast<double>(count_of(counts, cause.unit));
    out.total_per_day += out.per_day[i];
  }
  if (!std::isfinite(out.total_per_day))
    throw ConfigError(source +
                      ": reliability's component rates add up to more interruptions "
                      "per day than a double holds");
  if (!(out.total_per_day > 0))
    throw ConfigError(source +
                      ": reliability's component rates give the job no interruptions (each "
                      "is 0 or counts a component it lacks): give one of its causes a rate "
                      "above 0");
  if (r.has_interruptions_per_gpu_day()) {
    const double total = r.interruptions_per_gpu_day();
    if (!(total > 0 && total <= kMaxRatePerDay))
      throw ConfigError(source + ": reliability.interruptions_per_gpu_day must be in (0, " +
                        to_text(kMaxRatePerDay) + "], not " + to_text(total));
    const double scale = total * static_cast<double>(counts.gpus) / out.total_per_day;
    for (double& x : out.per_day) x *= scale;
    out.total_per_day = total * static_cast<double>(counts.gpus);
  }
  return out;
}

}  // namespace cs::cost
