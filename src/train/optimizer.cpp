#include "zotrain/train/optimizer.hpp"

#include <cmath>

#include "zotrain/core/error.hpp"

namespace zt::train {

void sgd_update(std::size_t n, float* theta, const float* grad, float lr) {
  for (std::size_t i = 0; i < n; ++i) theta[i] -= lr * grad[i];
}

void adam_update(std::size_t n, float* theta, const float* grad, float* m, float* v,
                 std::int64_t t, float lr) {
  constexpr float kB1 = 0.9f, kB2 = 0.999f, kEps = 1e-8f;
  const float c1 = 1.0f - static_cast<float>(std::pow(kB1, static_cast<double>(t)));
  const float c2 = 1.0f - static_cast<float>(std::pow(kB2, static_cast<double>(t)));
  const float step = lr / c1;
  const float inv_sqrt_c2 = 1.0f / std::sqrt(c2);
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = kB1 * m[i] + (1 - kB1) * grad[i];
    v[i] = kB2 * v[i] + (1 - kB2) * grad[i] * grad[i];
    theta[i] -= step * m[i] / (std::sqrt(v[i]) * inv_sqrt_c2 + kEps);
  }
}

BpOptimizer::BpOptimizer(OptimizerKind kind, std::size_t n, float* m, float* v)
    : kind_(kind), n_(n), m_(m), v_(v) {
  ZT_CHECK(n == 0 || kind != OptimizerKind::kAdam || (m != nullptr && v != nullptr));
}

void BpOptimizer::apply(float* theta, const float* grad, float lr) {
  switch (kind_) {
    case OptimizerKind::kSgd: sgd_update(n_, theta, grad, lr); return;
    case OptimizerKind::kAdam: adam_update(n_, theta, grad, m_, v_, ++t_, lr); return;
  }
}

LearningRates resolve_learning_rates(std::optional<double> lr, std::optional<double> bp_lr,
                                     OptimizerKind kind) {
  LearningRates r;
  r.zo = lr.value_or(kDefaultZoLr);
  r.bp = bp_lr ? *bp_lr : lr ? *lr : kind == OptimizerKind::kAdam ? kDefaultAdamLr : kDefaultSgdLr;
  return r;
}

double decayed_lr(double lr, double factor, std::int64_t every_epochs, std::int64_t epoch) {
  if (every_epochs <= 0) return lr;
  return lr * std::pow(factor, static_cast<double>(epoch / every_epochs));
}

}  // namespace zt::train
