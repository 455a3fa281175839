#include "sim/coll/verify.h"

#include <deque>
#include <random>
#include <stdexcept>

namespace cs::coll {

void execute_on_data(const Schedule& schedule, std::vector<Eigen::VectorXd>& buffers,
                     int elems_per_unit, ExecOrder order, uint64_t seed) {
  const auto count = static_cast<uint32_t>(schedule.num_messages());
  const Eigen::Index k = elems_per_unit;
  // Action a: start of message a / 2 if a is even, its completion if odd.
  std::deque<uint32_t> allowed;
  std::vector<uint32_t> waiting(count);
  std::vector<Eigen::VectorXd> in_flight(count);
  std::mt19937_64 rng(seed);
  for (uint32_t m = 0; m < count; ++m) {
    waiting[m] = static_cast<uint32_t>(schedule.deps(m).size());
    if (waiting[m] == 0) allowed.push_back(2 * m);
  }
  uint32_t completed = 0;
  while (!allowed.empty()) {
    uint32_t action;
    if (order == ExecOrder::kFifo) {
      action = allowed.front();
      allowed.pop_front();
    } else if (order == ExecOrder::kLifo) {
      action = allowed.back();
      allowed.pop_back();
    } else {
      const std::size_t i = std::uniform_int_distribution<std::size_t>(0, allowed.size() - 1)(rng);
      action = allowed[i];
      allowed[i] = allowed.back();
      allowed.pop_back();
    }
    const uint32_t m = action / 2;
    const Message& msg = schedule.message(m);
    if (action % 2 == 0) {
      in_flight[m] = buffers[msg.src].segment(msg.src_unit * k, msg.units * k);
      allowed.push_back(action + 1);
      continue;
    }
    auto dst = buffers[msg.dst].segment(msg.dst_unit * k, msg.units * k);
    if (msg.action == Action::kCopy) {
      dst = in_flight[m];
    } else {
      dst += in_flight[m];
    }
    in_flight[m].resize(0);
    ++completed;
    for (uint32_t d : schedule.dependents(m)) {
      if (--waiting[d] == 0) allowed.push_back(2 * d);
    }
  }
  if (completed != count) throw std::logic_error("schedule has messages that can never start");
}

DataCase make_data_case(const Schedule& schedule, int elems_per_unit, uint64_t seed) {
  const int n = schedule.num_ranks();
  const Eigen::Index k = elems_per_unit;
  const Eigen::Index len = static_cast<Eigen::Index>(schedule.num_units()) * k;
  DataCase data;
  data.elems_per_unit = elems_per_unit;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (int r = 0; r < n; ++r) {
    Eigen::VectorXd v(len);
    for (Eigen::Index i = 0; i < len; ++i) v[i] = value(rng);
    data.initial.push_back(v);
  }
  data.expected = data.initial;
  const ScheduleKey& key = schedule.key();
  // Block r of a region of `total` elements starting at `base`, in n equal blocks.
  const auto block = [&](std::vector<Eigen::VectorXd>& bufs, int rank, Eigen::Index base,
                         Eigen::Index total,
                         int r) { return bufs[rank].segment(base + total / n * r, total / n); };
  std::vector<Eigen::VectorXd>& in = data.initial;
  std::vector<Eigen::VectorXd>& out = data.expected;
  const auto units = schedule.num_units();
  data.output_units.assign(n, {0, units});
  switch (key.op) {
    case Op::kAllReduce: {
      Eigen::VectorXd sum = Eigen::VectorXd::Zero(len);
      for (int r = 0; r < n; ++r) sum += in[r];
      for (int r = 0; r < n; ++r) out[r] = sum;
      break;
    }
    case Op::kAllGather:
      for (int r = 0; r < n; ++r) {
        for (int s = 0; s < n; ++s) block(out, r, 0, len, s) = block(in, s, 0, len, s);
      }
      break;
    case Op::kReduceScatter:
      for (int r = 0; r < n; ++r) {
        Eigen::VectorXd sum = Eigen::VectorXd::Zero(len / n);
        for (int s = 0; s < n; ++s) sum += block(in, s, 0, len, r);
        block(out, r, 0, len, r) = sum;
        data.output_units[r] = {units / n * r, units / n * (r + 1)};
      }
      break;
    case Op::kAllToAll:
      for (int d = 0; d < n; ++d) {
        for (int r = 0; r < n; ++r)
          block(out, d, len / 2, len / 2, r) = block(in, r, 0, len / 2, d);
        data.output_units[d] = {units / 2, units};
      }
      break;
    case Op::kBroadcast:
      for (int r = 0; r < n; ++r) out[r] = in[key.root];
      break;
    case Op::kSendRecv:
      for (int r = 0; r < n; ++r) {
        out[r].tail(len / 2) = in[(r + n - 1) % n].head(len / 2);
        data.output_units[r] = {units / 2, units};
      }
      break;
  }
  return data;
}

double max_output_error(const DataCase& data, const std::vector<Eigen::VectorXd>& result) {
  double worst = 0;
  const Eigen::Index k = data.elems_per_unit;
  for (std::size_t r = 0; r < data.expected.size(); ++r) {
    const auto [begin, end] = data.output_units[r];
    const Eigen::Index at = begin * k, len = (end - begin) * k;
    if (len == 0) continue;
    worst = std::max(
        worst,
        (result[r].segment(at, len) - data.expected[r].segment(at, len)).cwiseAbs().maxCoeff());
  }
  return worst;
}

}  // namespace cs::coll
