#include "sim/verify/checks.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <random>

#include "sim/coll/algorithms.h"
#include "sim/coll/algorithms/registry.h"
#include "sim/coll/collective.h"
#include "sim/coll/verify.h"

namespace cs::verify {

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// Values in [-1, 1] and sums of a few hundred of them: only rounding differs between the two
// computations, far below this.
constexpr double kTolerance = 1e-9;

MatrixXd random_matrix(int64_t rows, int64_t cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  MatrixXd m(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m(i, j) = u(rng);
  return m;
}

double max_abs_diff(const MatrixXd& a, const MatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff();
}

std::string dims(const char* what, int64_t a, int64_t b) {
  return std::string(what) + " " + std::to_string(a) + "x" + std::to_string(b);
}

// Mean-squared-error gradient of linear regression: X^T (X w − y) / N.
VectorXd mse_gradient(const MatrixXd& x, const VectorXd& y, const VectorXd& w) {
  return x.transpose() * (x * w - y) / static_cast<double>(x.rows());
}

// Gradients of a two-layer MLP, loss = mean over samples of ½‖W2 tanh(W1 x) − y‖².
struct MlpGrad {
  MatrixXd w1, w2;
};
MlpGrad mlp_gradient(const MatrixXd& x, const MatrixXd& y, const MatrixXd& w1, const MatrixXd& w2) {
  const MatrixXd pre = x * w1.transpose();  // N x H
  const MatrixXd hid = pre.array().tanh();
  const MatrixXd out = hid * w2.transpose();  // N x O
  const MatrixXd d_out = (out - y) / static_cast<double>(x.rows());
  MlpGrad g;
  g.w2 = d_out.transpose() * hid;
  const MatrixXd d_hid = (d_out * w2).array() * (1.0 - hid.array().square());
  g.w1 = d_hid.transpose() * x;
  return g;
}

struct Adam {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  // One AdamW step at step number `t` (1-based) on a slice.
  void step(VectorXd& w, VectorXd& m, VectorXd& v, const VectorXd& g, int t) const {
    m = beta1 * m + (1 - beta1) * g;
    v = beta2 * v + (1 - beta2) * g.cwiseProduct(g);
    const double c1 = 1 - std::pow(beta1, t), c2 = 1 - std::pow(beta2, t);
    const VectorXd mhat = m / c1;
    const VectorXd vhat = v / c2;
    w = w - lr * (mhat.array() / (vhat.array().sqrt() + eps)).matrix() - lr * weight_decay * w;
  }
};

}  // namespace

CheckResult check_column_parallel(int32_t t, const CheckOptions& o) {
  std::mt19937_64 rng(o.seed);
  const int64_t n = 16, k = 32, cols = 8 * t;
  const MatrixXd x = random_matrix(n, k, rng), w = random_matrix(k, cols, rng);
  const MatrixXd full = x * w;
  MatrixXd assembled(n, cols);
  const int64_t per = cols / t;
  for (int32_t r = 0; r < t; ++r) {
    const int32_t slot = o.broken ? (r + 1) % t : r;  // broken: blocks land one place off
    assembled.middleCols(slot * per, per) = x * w.middleCols(r * per, per);
  }
  return {"column-parallel matmul, TP " + std::to_string(t),
          dims("X", n, k) + ", " + dims("W", k, cols) + ", column blocks concatenated",
          max_abs_diff(full, assembled), kTolerance};
}

CheckResult check_row_parallel(int32_t t, const CheckOptions& o) {
  std::mt19937_64 rng(o.seed + 1);
  const int64_t n = 16, k = 8 * t, cols = 24;
  const MatrixXd x = random_matrix(n, k, rng), w = random_matrix(k, cols, rng);
  const MatrixXd full = x * w;
  MatrixXd sum = MatrixXd::Zero(n, cols);
  const int64_t per = k / t;
  for (int32_t r = 0; r < t; ++r) {
    const MatrixXd partial = x.middleCols(r * per, per) * w.middleRows(r * per, per);
    sum += partial;
    if (o.broken && r == 0) sum += partial;  // broken: one rank's partial counted twice
  }
  return {"row-parallel matmul, TP " + std::to_string(t),
          dims("X", n, k) + ", " + dims("W", k, cols) + ", partial products all-reduced",
          max_abs_diff(full, sum), kTolerance};
}

CheckResult check_data_parallel_gradient(int32_t d, const CheckOptions& o) {
  std::mt19937_64 rng(o.seed + 2);
  const int64_t per = 16, n = per * d, f = 12;
  const MatrixXd x = random_matrix(n, f, rng);
  const VectorXd y = random_matrix(n, 1, rng).col(0), w = random_matrix(f, 1, rng).col(0);
  const VectorXd full = mse_gradient(x, y, w);
  VectorXd sum = VectorXd::Zero(f);
  for (int32_t r = 0; r < d; ++r)
    sum += mse_gradient(x.middleRows(r * per, per), y.segment(r * per, per), w);
  const VectorXd averaged = o.broken ? sum : VectorXd(sum / d);  // broken: summed, not averaged
  return {"data-parallel gradient, DP " + std::to_string(d),
          "linear regression, " + std::to_string(n) + " samples in " + std::to_string(d) +
              " shards, shard gradients averaged (all-reduce / d)",
          (full - averaged).cwiseAbs().maxCoeff(), kTolerance};
}

CheckResult check_gradient_accumulation(int32_t k, const CheckOptions& o) {
  std::mt19937_64 rng(o.seed + 3);
  const int64_t micro = 8, n = micro * k, in = 10, hidden = 16, out = 4;
  const MatrixXd x = random_matrix(n, in, rng), y = random_matrix(n, out, rng);
  const MatrixXd w1 = random_matrix(hidden, in, rng), w2 = random_matrix(out, hidden, rng);
  const MlpGrad full = mlp_gradient(x, y, w1, w2);
  MatrixXd g1 = MatrixXd::Zero(hidden, in), g2 = MatrixXd::Zero(out, hidden);
  for (int32_t s = 0; s < k; ++s) {
    const MlpGrad g =
        mlp_gradient(x.middleRows(s * micro, micro), y.middleRows(s * micro, micro), w1, w2);
    g1 += g.w1;  // accumulated locally; no communication between microbatches
    g2 += g.w2;
  }
  if (!o.broken) {  // broken: the sum is never rescaled by 1/K
    g1 /= k;
    g2 /= k;
  }
  return {"gradient accumulation, K " + std::to_string(k),
          "2-layer tanh MLP " + std::to_string(in) + "-" + std::to_string(hidden) + "-" +
              std::to_string(out) + ", " + std::to_string(k) + " microbatches of " +
              std::to_string(micro) + " vs one batch of " + std::to_string(n),
          std::max(max_abs_diff(full.w1, g1), max_abs_diff(full.w2, g2)), kTolerance};
}

CheckResult check_zero_adam(int32_t n, const CheckOptions& o) {
  std::mt19937_64 rng(o.seed + 4);
  const int64_t per = 10, p = per * n;
  const int steps = 3;
  const Adam adam;
  VectorXd w = random_matrix(p, 1, rng).col(0);
  VectorXd m = VectorXd::Zero(p), v = VectorXd::Zero(p);
  std::vector<VectorXd> grads;
  for (int s = 0; s < steps; ++s) grads.push_back(random_matrix(p, 1, rng).col(0));
  // Sharded: rank r owns slice r of the master weights and of m and v.
  std::vector<VectorXd> ws, ms, vs;
  for (int32_t r = 0; r < n; ++r) {
    ws.push_back(w.segment(r * per, per));
    ms.push_back(VectorXd::Zero(per));
    vs.push_back(VectorXd::Zero(per));
  }
  for (int s = 0; s < steps; ++s) {
    adam.step(w, m, v, grads[s], s + 1);
    for (int32_t r = 0; r < n; ++r) {
      // The reduce-scattered gradient: this rank's slice of the (already averaged) gradient.
      const int t = o.broken && r == n - 1 ? s + 2 : s + 1;  // broken: wrong bias correction
      adam.step(ws[r], ms[r], vs[r], grads[s].segment(r * per, per), t);
    }
  }
  VectorXd gathered(p);  // the parameter all-gather
  for (int32_t r = 0; r < n; ++r) gathered.segment(r * per, per) = ws[r];
  return {"ZeRO-sharded Adam, " + std::to_string(n) + " shards",
          std::to_string(p) + " parameters, " + std::to_string(steps) +
              " AdamW steps, sliced states then all-gather vs unsharded",
          (w - gathered).cwiseAbs().maxCoeff(), kTolerance};
}

std::vector<CheckResult> check_collectives(const std::vector<int32_t>& sizes,
                                           const CheckOptions& o) {
  using coll::Algorithm;
  using coll::Op;
  std::vector<CheckResult> out;
  constexpr int kElems = 3;
  const Op ops[] = {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter,
                    Op::kAllToAll,  Op::kBroadcast, Op::kSendRecv};
  for (const Op op : ops) {
    for (const coll::AlgorithmInfo& info : coll::algorithm_table()) {
      const coll::OpForm* form = info.form(op);
      if (form == nullptr) continue;
      const Algorithm algo = info.value;
      double worst = 0;
      std::string groups;
      for (const int32_t n : sizes) {
        for (const int32_t chunks : {1, 3}) {
          coll::ScheduleKey key;
          key.op = op;
          key.algo = algo;
          key.n = n;
          key.chunks = chunks;
          key.window = 2;
          if (form->on_servers()) key.local_size = n % 2 == 0 && n > 2 ? 2 : 1;
          if (op == Op::kBroadcast) {
            key.root = n > 1 ? 1 : 0;
            if (chunks > 1) key.tail = coll::kTailParts / 3;  // a short last piece, as NCCL's
          }
          // Rings as NCCL runs them across servers (forms that take channels): two rail-aligned
          // channels.
          if (form->channels && n % 2 == 0 && n > 2) {
            key.channels = 2;
            key.local_size = 2;
          }
          const auto schedule = coll::build_schedule(key);
          // Broken: an all-reduce judged by a schedule that stops after its reduce-scatter (of
          // an algorithm that has both).
          std::shared_ptr<const coll::Schedule> run = schedule;
          if (o.broken && op == Op::kAllReduce && info.form(Op::kReduceScatter) != nullptr &&
              n > 1) {
            coll::ScheduleKey rs = key;
            rs.op = Op::kReduceScatter;
            run = coll::build_schedule(rs);
          }
          const coll::DataCase data = coll::make_data_case(*schedule, kElems, o.seed + n);
          for (const auto order :
               {coll::ExecOrder::kFifo, coll::ExecOrder::kLifo, coll::ExecOrder::kRandom}) {
            std::vector<VectorXd> buffers = data.initial;
            coll::execute_on_data(*run, buffers, kElems, order, o.seed);
            worst = std::max(worst, coll::max_output_error(data, buffers));
          }
        }
        if (!groups.empty()) groups += ',';
        groups += std::to_string(n);
      }
      out.push_back({"collective " + std::string(coll::to_string(op)) + " / " +
                         std::string(coll::to_string(algo)),
                     "n = " + groups + "; 1 and 3 chunks; FIFO, LIFO and random orders", worst,
                     1e-10});
    }
  }
  return out;
}

std::vector<CheckResult> run_all_checks(const CheckOptions& o) {
  std::vector<CheckResult> out;
  for (int32_t t : {2, 4, 8}) out.push_back(check_column_parallel(t, o));
  for (int32_t t : {2, 4, 8}) out.push_back(check_row_parallel(t, o));
  for (int32_t d : {2, 4, 8}) out.push_back(check_data_parallel_gradient(d, o));
  for (int32_t k : {2, 4, 16}) out.push_back(check_gradient_accumulation(k, o));
  for (int32_t n : {2, 4, 8}) out.push_back(check_zero_adam(n, o));
  for (auto& c : check_collectives({2, 3, 4, 8}, o)) out.push_back(std::move(c));
  return out;
}

}  // namespace cs::verify
