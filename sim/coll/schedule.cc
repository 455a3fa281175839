#include "sim/coll/schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/coll/fluid.h"

namespace cs::coll {

Bytes Schedule::unit_bytes(uint32_t begin, uint32_t end, Bytes size) const {
  // 128-bit products: units (up to 2^32) times terabyte sizes overflow 64 bits.
  const __int128 w = static_cast<__int128>(size) * scale_;
  const auto at = [&](uint32_t u) { return static_cast<Bytes>(w * u / units_); };
  return at(end) - at(begin);
}

std::vector<Bytes> Schedule::bytes_sent_per_rank(Bytes size) const {
  std::vector<Bytes> sent(static_cast<std::size_t>(key_.n), 0);
  for (uint32_t m = 0; m < messages_.size(); ++m) {
    if (!messages_[m].local()) sent[messages_[m].src] += message_bytes(m, size);
  }
  return sent;
}

std::size_t Schedule::memory_bytes() const {
  return sizeof(*this) + messages_.capacity() * sizeof(Message) +
         (dep_begin_.capacity() + deps_.capacity() + dependent_begin_.capacity() +
          dependents_.capacity()) *
             sizeof(uint32_t);
}

ScheduleBuilder::ScheduleBuilder(const ScheduleKey& key, uint32_t num_units,
                                 uint32_t buffer_scale) {
  if (key.n < 1) throw std::invalid_argument("group size must be at least 1");
  if (num_units == 0) throw std::invalid_argument("a schedule needs at least one buffer unit");
  s_.key_ = key;
  s_.units_ = num_units;
  s_.scale_ = buffer_scale;
}

uint32_t ScheduleBuilder::add(const Message& m, std::span<const uint32_t> deps) {
  const auto n = static_cast<uint32_t>(s_.key_.n);
  if (m.src >= n || m.dst >= n) throw std::invalid_argument("message rank out of range");
  if (static_cast<uint64_t>(m.src_unit) + m.units > s_.units_ ||
      static_cast<uint64_t>(m.dst_unit) + m.units > s_.units_) {
    throw std::invalid_argument("message slice out of the buffer");
  }
  const uint32_t index = size();
  if (index >= kMaxScheduleMessages) refuse_too_many_messages();
  const std::size_t first = s_.deps_.size();
  for (uint32_t d : deps) {
    if (d >= index) {
      throw std::invalid_argument("dependency " + std::to_string(d) + " of message " +
                                  std::to_string(index) + " does not exist yet");
    }
    s_.deps_.push_back(d);
  }
  std::sort(s_.deps_.begin() + static_cast<std::ptrdiff_t>(first), s_.deps_.end());
  s_.deps_.erase(std::unique(s_.deps_.begin() + static_cast<std::ptrdiff_t>(first), s_.deps_.end()),
                 s_.deps_.end());
  s_.messages_.push_back(m);
  s_.dep_begin_.push_back(static_cast<uint32_t>(s_.deps_.size()));
  s_.max_deps_ = std::max(s_.max_deps_, static_cast<uint32_t>(s_.deps_.size() - first));
  return index;
}

void ScheduleBuilder::refuse_too_many_messages() const {
  const ScheduleKey& k = s_.key_;
  throw std::invalid_argument(
      std::string(to_string(k.algo)) + " " + std::string(to_string(k.op)) + " over " +
      std::to_string(k.n) + " ranks (" + std::to_string(k.chunks) + " chunks, " +
      std::to_string(k.channels) + " channels) takes more than " +
      std::to_string(kMaxScheduleMessages) + " messages, too many to run message by message; " +
      (fluid_supported(k)
           ? "run it as fluid transfers (collective --fluid, simulation.fluid_collectives=true)"
             " or over a smaller group"
           : "it has no fluid form: run it over a smaller group"));
}

Schedule ScheduleBuilder::build() && {
  const std::size_t count = s_.messages_.size();
  // Invert the dependency lists with a counting sort; dependents come out in index order.
  s_.dependent_begin_.assign(count + 1, 0);
  for (uint32_t d : s_.deps_) ++s_.dependent_begin_[d + 1];
  for (std::size_t m = 0; m < count; ++m) s_.dependent_begin_[m + 1] += s_.dependent_begin_[m];
  s_.dependents_.resize(s_.deps_.size());
  std::vector<uint32_t> fill(s_.dependent_begin_.begin(), s_.dependent_begin_.end() - 1);
  for (uint32_t m = 0; m < count; ++m) {
    for (uint32_t d : s_.deps(m)) s_.dependents_[fill[d]++] = m;
  }
  s_.messages_.shrink_to_fit();
  s_.deps_.shrink_to_fit();
  s_.dep_begin_.shrink_to_fit();
  return std::move(s_);
}

}  // namespace cs::coll
