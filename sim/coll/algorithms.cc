#include "sim/coll/algorithms.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "sim/coll/algorithms/registry.h"

namespace cs::coll {

std::vector<uint32_t> iota_ranks(uint32_t first, uint32_t count, uint32_t stride) {
  std::vector<uint32_t> r(count);
  for (uint32_t i = 0; i < count; ++i) r[i] = first + i * stride;
  return r;
}

namespace {

constexpr Bytes kWindowBytes = 64 * kKiB;  // see auto_window

// The pipelining of (algo, op) for n ranks, `local` a server and `channels` (0: one per GPU of a
// server); none for a single rank or a form that takes none.
std::optional<Pipelining> pipelining(Op op, Algorithm algo, int32_t n, int32_t local,
                                     int32_t channels, Bytes size, Protocol protocol) {
  if (n < 1) throw std::invalid_argument("group size must be at least 1");
  if (size < 0) throw std::invalid_argument("collective size must not be negative");
  const OpForm* form = find_form(resolve(algo, op), op);
  if (n == 1 || form == nullptr || form->pipelining == nullptr) return std::nullopt;
  local = std::clamp(local, 1, n);
  return form->pipelining({n, local, channels > 0 ? channels : local, size, protocol});
}

Bytes pieces(const Pipelining& p) {
  return (p.block + p.piece - 1) / p.piece;
}

Bytes most_chunks(const Pipelining& p) {
  return p.max_chunks > 0 ? p.max_chunks : kMaxAutoChunks;
}

}  // namespace

int32_t auto_chunks(Op op, Algorithm algo, int32_t n, Bytes size, int32_t local, int32_t channels,
                    Protocol protocol) {
  const auto p = pipelining(op, algo, n, local, channels, size, protocol);
  return p ? static_cast<int32_t>(std::clamp<Bytes>(pieces(*p), 1, most_chunks(*p))) : 1;
}

int32_t auto_tail(Op op, Algorithm algo, int32_t n, Bytes size, int32_t local, int32_t channels,
                  Protocol protocol) {
  const auto p = pipelining(op, algo, n, local, channels, size, protocol);
  if (!p || !p->fixed_pieces || pieces(*p) <= 1 || pieces(*p) > most_chunks(*p)) return 0;
  const Bytes last = p->block - (pieces(*p) - 1) * p->piece;  // in (0, piece]
  const auto t = static_cast<int32_t>((kTailParts * last + p->piece - 1) / p->piece);
  return t >= kTailParts ? 0 : t;
}

int32_t auto_window(Op op, Algorithm algo, int32_t n, int32_t chunks, Bytes size, int32_t local,
                    int32_t channels, Protocol protocol) {
  if (n < 1 || chunks < 1) throw std::invalid_argument("group size and chunks must be positive");
  const auto p = pipelining(op, algo, n, local, channels, size, protocol);
  if (!p) return 1;
  if (p->window > 0) return p->window;
  const Bytes message = std::max<Bytes>(p->block / chunks, 1);
  return static_cast<int32_t>(std::clamp<Bytes>(kWindowBytes / message, 1, kMaxWindow));
}

ScheduleKey normalize(ScheduleKey key) {
  key.algo = resolve(key.algo, key.op);
  const OpForm* form = find_form(key.algo, key.op);
  if (form == nullptr) {
    throw std::invalid_argument("collective algorithm '" + std::string(to_string(key.algo)) +
                                "' does not implement " + std::string(to_string(key.op)));
  }
  if (key.n < 1) throw std::invalid_argument("group size must be at least 1");
  if (key.chunks < 1) throw std::invalid_argument("chunks must be at least 1");
  if (key.channels < 1) throw std::invalid_argument("channels must be at least 1");
  if (key.node_size < 0) throw std::invalid_argument("node_size must not be negative");
  if (!form->channels) key.channels = 1;
  if (key.window < 1) throw std::invalid_argument("window must be at least 1");
  // Sends that wait for nothing (direct) take neither pipelining nor a window.
  if (form->pipelining == nullptr) key.chunks = key.window = 1;
  if (static_cast<int64_t>(key.n) * key.chunks * key.channels * 2 >
      std::numeric_limits<uint32_t>::max()) {
    throw std::invalid_argument("group size times chunks is too large");
  }
  const bool rail_ring = form->channels && key.channels > 1 && key.local_size > 1;
  if (form->on_servers()) {
    if (key.local_size < 1 || key.n % key.local_size != 0) {
      throw std::invalid_argument(
          std::string(form->server_layout) + " need local_size >= 1 dividing the group size (n = " +
          std::to_string(key.n) + ", local_size = " + std::to_string(key.local_size) + ")");
    }
  } else if (rail_ring) {
    // Rail-aligned rings take a short last server (channel_ring).
    if (key.local_size > key.n)
      throw std::invalid_argument(
          "rail-aligned rings need local_size <= n (n = " + std::to_string(key.n) +
          ", local_size = " + std::to_string(key.local_size) + ")");
  } else {
    key.local_size = 0;
  }
  if (key.op == Op::kBroadcast) {
    if (key.root < 0 || key.root >= key.n) {
      throw std::invalid_argument("broadcast root " + std::to_string(key.root) +
                                  " is outside the group");
    }
    if (key.tail < 0 || key.tail >= kTailParts)
      throw std::invalid_argument("broadcast tail " + std::to_string(key.tail) +
                                  " is outside [0, " + std::to_string(kTailParts) + ")");
    if (key.chunks == 1) key.tail = 0;
  } else {
    key.root = 0;
    key.tail = 0;
  }
  return key;
}

std::shared_ptr<const Schedule> build_schedule(const ScheduleKey& raw) {
  const ScheduleKey key = normalize(raw);
  return std::make_shared<const Schedule>(find_form(key.algo, key.op)->build(key));
}

std::shared_ptr<const Schedule> ScheduleCache::get(const ScheduleKey& key) {
  const ScheduleKey k = normalize(key);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = schedules_.find(k);
  if (it == schedules_.end()) it = schedules_.emplace(k, build_schedule(k)).first;
  return it->second;
}

std::size_t ScheduleCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return schedules_.size();
}

}  // namespace cs::coll
