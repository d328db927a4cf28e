// Optimisers for the backprop part: plain SGD (no momentum, no weight decay, as the paper) and
// Adam (β = (0.9, 0.999), ε = 1e-8, bias-corrected). State lives in caller-planned buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "zotrain/config/options.hpp"

namespace zt::train {

using config::OptimizerKind;  // the config's choice (config/options.hpp)

// θ[n], g[n]; for Adam m[n], v[n] (zero-initialised) and the 1-based step count t.
void sgd_update(std::size_t n, float* theta, const float* grad, float lr);
void adam_update(std::size_t n, float* theta, const float* grad, float* m, float* v,
                 std::int64_t t, float lr);

// The optimizer of the backprop parameters θ[n]: SGD, or Adam with its state m, v (n floats each,
// caller-planned, zero-initialised; null for SGD) and its step count.
class BpOptimizer {
 public:
  BpOptimizer(OptimizerKind kind, std::size_t n, float* m, float* v);
  void apply(float* theta, const float* grad, float lr);  // one step
  float* adam_m() const { return m_; }
  float* adam_v() const { return v_; }
  std::int64_t steps() const { return t_; }
  void set_steps(std::int64_t t) { t_ = t; }  // resuming

 private:
  OptimizerKind kind_;
  std::size_t n_;
  float *m_, *v_;
  std::int64_t t_ = 0;
};

// Defaults chosen by a sweep on the bundled MNIST subset (README, "Defaults"): ZO part 1e-3
// (with zo.grad_clip 2); backprop part 0.05 with SGD, 1e-3 with Adam.
inline constexpr double kDefaultZoLr = 1e-3;
inline constexpr double kDefaultSgdLr = 0.05;
inline constexpr double kDefaultAdamLr = 1e-3;
// Poor Man's Training on int8 (zo.preset pmt, model.precision int8): the global η of its
// quantisation-aware update, chosen on a validation split (docs/results/tuning/pmt-int8-lr.md):
// Full ZO, and with a backprop part (the NITI tail learns fast, the ZO layers want less).
inline constexpr double kDefaultInt8PmtLrFullZo = 1.0;
inline constexpr double kDefaultInt8PmtLrElastic = 0.3;
inline constexpr double kDefaultInt8PmtLrNodes = 0.3;  // with zo.node_perturbation, any C

struct LearningRates {
  double zo = 0, bp = 0;
};
// optimizer.lr unset (auto) means the default ZO rate; optimizer.bp_lr unset means optimizer.lr
// when that was given, else the optimizer's default backprop rate. 0 is a rate of 0.
LearningRates resolve_learning_rates(std::optional<double> lr, std::optional<double> bp_lr,
                                     OptimizerKind kind);

// The learning rate of an epoch under step decay: lr · factor^floor(epoch / every).
double decayed_lr(double lr, double factor, std::int64_t every_epochs, std::int64_t epoch);

}  // namespace zt::train
