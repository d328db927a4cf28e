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
             std::uint64_t step_seed, const Int8Hyper& h, Int8Sign sign)
      : t_(t), labels_(labels), n_(n), classes_(classes), seed_(step_seed), h_(h), sign_(sign) {}

  void perturb(int query, int k) override { t_.perturb(seed_, query, k, h_); }
  void probe(int, ProbeSide side) override { t_.probe(side == ProbeSide::kPlus); }
  double estimate(int, int) override {  // a sign: the distance does not matter
    // All three are cheap ([batch, classes] work): the step uses sign_'s, the others are
    // computed to log how often the integer ones agree with the float one.
    const int gi = t_.integer_sign(labels_, false);
    const int ge = t_.integer_sign(labels_, true);
    const int gf = float_sign(t_.logits_plus(), t_.logits_minus(), labels_, n_, classes_);
    result_.sign_agree = gi == gf;
    result_.sign_agree_eq12 = ge == gf;
    result_.g = sign_ == Int8Sign::kInteger ? gi : sign_ == Int8Sign::kIntegerEq12 ? ge : gf;
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
  Int8Sign sign_;
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
                    std::uint64_t step_seed, double lr)
      : t_(t), labels_(labels), n_(n), classes_(classes), seed_(step_seed), lr_(lr) {}

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
  const Int8StepResult& result() const { return result_; }

 private:
  static constexpr int kFrac = 16;  // fractional bits of the update coefficients
  Int8Trainer& t_;
  const std::uint8_t* labels_;
  int n_, classes_;
  std::uint64_t seed_;
  double lr_;
  int block_ = -1;
  Int8StepResult result_;
};

}  // namespace

Int8StepResult int8_layerwise_step(Int8Trainer& trainer, const ZoEstimator& estimator,
                                   const std::int8_t* x, int exponent, int n,
                                   const std::uint8_t* labels, int classes,
                                   std::uint64_t step_seed, const Int8Hyper& h, double lr) {
  trainer.begin(x, exponent, n);
  Int8StepResult r;
  if (trainer.zo_weights() > 0) {
    Int8LayerwiseStep ex(trainer, labels, n, classes, step_seed, lr);
    std::array<double, kMaxQueries> g{};
    estimator.step(ex, g);
    r = ex.result();
  } else {
    trainer.probe(false);
  }
  trainer.backprop(labels, step_seed, h);
  return r;
}

Int8StepResult int8_step(Int8Trainer& trainer, const ZoEstimator& estimator,
                         const std::int8_t* x, int exponent, int n, const std::uint8_t* labels,
                         int classes, std::uint64_t step_seed, const Int8Hyper& h,
                         Int8Sign sign) {
  ZT_CHECK_MSG(estimator.queries() == 1, "int8 training takes one query per step");
  trainer.begin(x, exponent, n);
  Int8StepResult r;
  if (trainer.zo_weights() > 0) {
    Int8ZoStep ex(trainer, labels, n, classes, step_seed, h, sign);
    std::array<double, 1> g{};
    estimator.step(ex, g);
    r = ex.result();
  } else {
    trainer.probe(false);
  }
  trainer.backprop(labels, step_seed, h);
  return r;
}

}  // namespace zt::train
