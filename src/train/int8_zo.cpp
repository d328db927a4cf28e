#include "zotrain/train/int8_zo.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>

#include "zotrain/core/error.hpp"
#include "zotrain/train/int8_float.hpp"

namespace zt::train {
namespace {

class Int8ZoStep final : public ZoExecutor {
 public:
  Int8ZoStep(Int8Trainer& t, const std::uint8_t* labels, int n, int classes,
             std::uint64_t step_seed, const Int8Hyper& h, Int8SignRule sign)
      : t_(t), labels_(labels), n_(n), classes_(classes), seed_(step_seed), h_(h), sign_(sign) {}

  void perturb(int query, int k) override { t_.perturb(seed_, query, k, h_); }
  void probe(int, ProbeSide side) override { t_.probe(side == ProbeSide::kPlus); }
  double estimate(int, int) override {  // a sign: the distance does not matter
    // All three are cheap ([batch, classes] work): the step uses sign_'s, the others are
    // computed to log how often the integer ones agree with the float one.
    // The agreement is the plain signs'; the dead zone applies to the step's float sign only.
    const int gi = t_.integer_sign(labels_, false);
    const int ge = t_.integer_sign(labels_, true);
    const double d = float_loss_difference(t_.logits_plus(), t_.logits_minus(), labels_, n_,
                                           classes_);
    const int gf = d > 0 ? 1 : (d < 0 ? -1 : 0);
    result_.sign_agree = gi == gf;
    result_.sign_agree_eq12 = ge == gf;
    switch (sign_.kind) {
      case Int8Sign::kInteger: result_.g = gi; break;
      case Int8Sign::kIntegerEq12: result_.g = ge; break;
      case Int8Sign::kFloat: result_.g = std::abs(d) <= sign_.dead_zone * n_ ? 0 : gf; break;
    }
    return result_.g;
  }
  void update(std::span<const double> g, int restore) override {
    ZT_CHECK(g.size() == 1);
    // The update kernel merges a restore of +1 · z; another restore is one more pass first.
    if (restore != 1) t_.perturb(seed_, 0, restore - 1, h_);
    t_.zo_update(seed_, 0, static_cast<int>(g[0]), h_);
  }
  const Int8StepResult& result() const { return result_; }

 private:
  Int8Trainer& t_;
  const std::uint8_t* labels_;
  int n_, classes_;
  std::uint64_t seed_;
  const Int8Hyper& h_;
  Int8SignRule sign_;
  Int8StepResult result_;
};

// Poor Man's Training on int8 (zo.estimator layerwise): block b is the b-th parametric layer of
// θ_{1..C}; its probes perturb it by ±1 (μ = 1) and are restored from its saved copy; estimate
// gives (ℓ(θ + ξ_i) − ℓ(θ)) / μ from the float losses of the dequantised logits (the paper's
// INT8 loss); update steps the layer by its quantisation-aware share of the global η:
// θ̄_b −= (η / s_b²) · (1/q) Σ_i g_i ξ_i with s_b = 2^{e_b} (its NITI exponent), g_i already
// scaled by the estimator's K / (K + d − 1). The coefficients go to the integer kernel in fixed
// point; it rounds stochastically and clamps to ±127.
class Int8LayerwiseStep final : public ZoExecutor {
 public:
  Int8LayerwiseStep(Int8Trainer& t, const std::uint8_t* labels, int n, int classes,
                    std::uint64_t step_seed, double lr, int queries)
      : t_(t), labels_(labels), n_(n), classes_(classes), seed_(step_seed), lr_(lr),
        queries_(queries) {
    bool nodes = false;
    for (int b = 0; b < t_.zo_blocks(); ++b) nodes = nodes || t_.block_nodes(b) > 0;
    if (nodes) {  // planned buffers (train/int8_nodes.hpp), sized for the trainer's queries
      ZT_CHECK(queries <= t_.options().queries);
      clean_ = t_.node_losses();
      node_dl_ = clean_ + n;
    }
  }

  void perturb(int query, int k) override {
    ZT_CHECK(block_ >= 0 && (k == 1 || k == -1));
    if (k == 1) {
      t_.perturb_block(block_, seed_, query);
    } else {
      t_.restore_block(block_);
    }
  }
  void probe(int, ProbeSide side) override {
    t_.probe(side == ProbeSide::kPlus);
    if (side == ProbeSide::kMinus) {
      result_.loss = int8_loss_sum(t_.logits_minus(), labels_, n_, classes_) / n_;
      result_.correct = int8_correct(t_.logits_minus(), labels_, n_, classes_);
      sample_losses(clean_);
    }
  }
  double estimate(int, int span) override {
    const double plus = int8_loss_sum(t_.logits_plus(), labels_, n_, classes_) / n_;
    return (plus - result_.loss) / span;
  }
  void update(std::span<const double> g, int restore) override {
    ZT_CHECK(block_ >= 0 && restore == 0 && !g.empty() && g.size() <= kMaxQueries);
    std::array<std::int32_t, kMaxQueries> coef{};
    const int e = t_.block_exponent(block_);
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double c = std::ldexp(lr_ * g[i] / static_cast<double>(g.size()), kFrac - 2 * e);
      coef[i] = static_cast<std::int32_t>(std::llround(std::clamp(c, -double{INT32_MAX},
                                                                  double{INT32_MAX})));
    }
    t_.update_block(block_, seed_, coef.data(), static_cast<int>(g.size()), kFrac);
  }
  int blocks() const override { return t_.zo_blocks(); }
  std::size_t block_size(int b) const override { return t_.block_weights(b); }
  void select_block(int b) override { block_ = b; }
  bool clean_pass_last() const override { return t_.segment_start() < t_.layers(); }

  // Node perturbation (docs/design.md §6.1): the node gradient of block b's outputs in ȳ units,
  // ĝ_n = (1/(n q)) Σ_i (ℓ_{i,n} − ℓ_n) ξ_{i,n} (μ = 1), mapped to its weights by the chain
  // rule ∂ȳ/∂W̄ = 2^{e_W + e_x − e_y} x̄ and scaled by η / s_W² and the estimator's s (together
  // η s 2^{e_x − e_y − e_W}), goes to the integer kernel as G in fixed point.
  std::size_t block_nodes(int b) const override { return t_.block_nodes(b); }
  double active_nodes(int b) const override {
    const std::size_t count = static_cast<std::size_t>(n_) * t_.block_nodes(b);
    const std::int8_t* y = t_.node_clean(b);
    if (!t_.node_relu_after(b)) return static_cast<double>(t_.block_nodes(b));
    return static_cast<double>(std::count_if(y, y + count, [](std::int8_t v) { return v > 0; })) /
           n_;
  }
  int samples() const override { return n_; }
  void probe_nodes(int b, int query) override {
    t_.probe_nodes(b, seed_, query);
    sample_losses(&node_dl_[(static_cast<std::size_t>(b * queries_ + query)) *
                            static_cast<std::size_t>(n_)]);
    for (int s = 0; s < n_; ++s)
      node_dl_[static_cast<std::size_t>((b * queries_ + query) * n_ + s)] -=
          clean_[static_cast<std::size_t>(s)];
  }
  void update_nodes(int b, int queries, double scale) override {
    const std::size_t M = t_.block_nodes(b), count = static_cast<std::size_t>(n_) * M;
    const std::int8_t* y = t_.node_clean(b);
    const bool relu = t_.node_relu_after(b);
    double* g = t_.node_work();
    std::int8_t* xi = t_.node_xi();
    std::fill(g, g + count, 0.0);
    for (int i = 0; i < queries; ++i) {
      t_.node_directions(seed_, b, i, xi);
      const double* dl = &node_dl_[static_cast<std::size_t>((b * queries_ + i) * n_)];
      for (std::size_t k = 0; k < count; ++k)
        if (!relu || y[k] > 0) g[k] += dl[k / M] * xi[k];
    }
    const double c = std::ldexp(lr_ * scale / (static_cast<double>(n_) * queries),
                                t_.node_scale_exp(b));
    double largest = 0;
    for (std::size_t k = 0; k < count; ++k) largest = std::max(largest, std::abs(g[k] *= c));
    if (largest == 0) return;
    // As many fractional bits as keep Σ_n G x̄ (|x̄| ≤ 127) inside int32, at most 30.
    const int frac = std::clamp(
        static_cast<int>(std::floor(std::log2(double{INT32_MAX} / (127.0 * n_ * largest)))), 0, 30);
    const double bound = double{INT32_MAX} / (127.0 * n_);  // reached only when frac is 0
    std::int32_t* G = t_.node_grad();
    for (std::size_t k = 0; k < count; ++k)
      G[k] = static_cast<std::int32_t>(
          std::llround(std::clamp(std::ldexp(g[k], frac), -bound, bound)));
    t_.update_nodes(b, frac, seed_);
  }
  const Int8StepResult& result() const { return result_; }

 private:
  // Each sample's loss of the last pass into out[n] (node perturbation only).
  void sample_losses(double* out) const {
    if (clean_ == nullptr) return;
    const Int8Logits lg = t_.logits_minus();
    for (int s = 0; s < n_; ++s)
      out[s] = int8_loss_sum({lg.values + static_cast<std::ptrdiff_t>(s) * classes_, lg.exponent},
                             labels_ + s, 1, classes_);
  }

  static constexpr int kFrac = 16;  // fractional bits of the weight-perturbation coefficients
  Int8Trainer& t_;
  const std::uint8_t* labels_;
  int n_, classes_;
  std::uint64_t seed_;
  double lr_;
  int queries_;
  int block_ = -1;
  Int8StepResult result_;
  double* clean_ = nullptr;    // node perturbation: the clean pass's per-sample losses [n]
  double* node_dl_ = nullptr;  // ℓ_{i,n} − ℓ_n per block, query and sample
};

}  // namespace

namespace {

// begin, the estimator's step over the executor that `make` builds (C = 0: one clean pass), then
// the backprop part.
template <class Make>
Int8StepResult run_step(Int8Trainer& trainer, const ZoEstimator& estimator, const std::int8_t* x,
                        int exponent, int n, const std::uint8_t* labels, std::uint64_t step_seed,
                        const Int8Hyper& h, Make make) {
  trainer.begin(x, exponent, n);
  Int8StepResult r;
  if (trainer.zo_weights() > 0) {
    auto ex = make();
    std::array<double, kMaxQueries> g{};
    estimator.step(ex, g);
    r = ex.result();
  } else {
    trainer.probe(false);
  }
  trainer.backprop(labels, step_seed, h);
  return r;
}

}  // namespace

Int8StepResult int8_layerwise_step(Int8Trainer& trainer, const ZoEstimator& estimator,
                                   const std::int8_t* x, int exponent, int n,
                                   const std::uint8_t* labels, int classes,
                                   std::uint64_t step_seed, const Int8Hyper& h, double lr) {
  return run_step(trainer, estimator, x, exponent, n, labels, step_seed, h, [&] {
    return Int8LayerwiseStep(trainer, labels, n, classes, step_seed, lr, estimator.queries());
  });
}

Int8StepResult int8_step(Int8Trainer& trainer, const ZoEstimator& estimator,
                         const std::int8_t* x, int exponent, int n, const std::uint8_t* labels,
                         int classes, std::uint64_t step_seed, const Int8Hyper& h,
                         Int8SignRule sign) {
  ZT_CHECK_MSG(estimator.queries() == 1, "int8 training takes one query per step");
  return run_step(trainer, estimator, x, exponent, n, labels, step_seed, h, [&] {
    return Int8ZoStep(trainer, labels, n, classes, step_seed, h, sign);
  });
}

}  // namespace zt::train
