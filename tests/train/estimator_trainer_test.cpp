// The estimators inside the FP32 trainer: what the backprop part of ElasticZO reads whatever
// order an estimator takes its probes in, and node perturbation's step against backprop's
// gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <string>
#include <vector>

#include "../support.hpp"
#include "train_test_support.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/train/fp32_trainer.hpp"

namespace zt::train {
namespace {

struct StepResult {
  std::vector<float> theta;
  std::size_t zo_params = 0;
};

StepResult one_step(const char* estimator, int queries, float lr_zo, float eps, int partition = 4) {
  auto model = nn::make_lenet5(kernels::best_isa());
  model->init(7);
  Fp32TrainerOptions o = test::zo_options(partition, 8, eps, 1e9f, queries);
  o.estimator = config::estimator(estimator).id;
  Fp32Trainer t(*model, o);
  telemetry::PhaseTimes times;
  const test::LabelledBatch b = test::random_labelled_batch(8, 784, 10, 31, 0.0, 1.0);
  t.step(b.x.data(), b.y.data(), 8, 1234, lr_zo, 0.5f, times);
  return {std::vector<float>(model->param_data(), model->param_data() + model->num_params()),
          t.zo_params()};
}

// With the ZO learning rate 0 the ZO layers end where they started (up to the rounding of
// θ + εz − εz), so the backprop layers' step must be the gradient at the clean θ for every
// estimator that takes a clean pass: one_sided with q = 1 takes it last, q > 1 and layerwise
// first and then probe perturbed weights, which must not be what backprop reads. A large ε makes
// reading a perturbed pass visible.
TEST(EstimatorInTrainer, BackpropReadsTheCleanPass) {
  const StepResult want = one_step("one_sided", 1, 0.0f, 0.5f);
  for (const auto& [name, q] : {std::pair{"one_sided", 2}, std::pair{"one_sided", 3},
                                std::pair{"layerwise", 1}, std::pair{"layerwise", 2}}) {
    const StepResult got = one_step(name, q, 0.0f, 0.5f);
    double worst = 0;
    for (std::size_t i = want.zo_params; i < want.theta.size(); ++i)
      worst = std::max(worst, std::abs(double(got.theta[i]) - want.theta[i]));
    EXPECT_LT(worst, 1e-5) << name << " q " << q;
  }
  // The check can fail: two_sided's backprop reads the θ − εz pass.
  const StepResult minus = one_step("two_sided", 1, 0.0f, 0.5f);
  double worst = 0;
  for (std::size_t i = want.zo_params; i < want.theta.size(); ++i)
    worst = std::max(worst, std::abs(double(minus.theta[i]) - want.theta[i]));
  EXPECT_GT(worst, 1e-3);
}

double dot(const float* a, const float* b, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += double(a[i]) * b[i];
  return s;
}

// Full ZO with the layer-wise estimate and node perturbation: LeNet-5's three fully connected
// layers are estimated through their outputs. A step at η = 1 moves each of them by −s·ĝ_W;
// backprop's one SGD step at η = 1 from the same weights on the same batch moves them by −∇W.
// ĝ_W is unbiased, so the mean move of R steps from the same weights with different seeds
// (R·n·q = 4,096 directions per layer) must point along the gradient (cosine > 0.85: 0.92–0.99
// here, one step's 0.75–0.99, the per-sample errors not cancelling where the gradients do) and
// project on it by the scaling s = K/(K + d − 1) ∈ [K/(K + out − 1), 1] within the noise. A
// sign or scale error, or the wrong input rows, fails it.
TEST(EstimatorInTrainer, NodePerturbationStepsAlongTheGradient) {
  constexpr int kBatch = 8, kQueries = 64, kRepeats = 8;
  const test::LabelledBatch batch = test::random_labelled_batch(kBatch, 784, 10, 5, 0.0, 1.0);
  telemetry::PhaseTimes times;
  auto zo_model = nn::make_lenet5(kernels::best_isa());
  zo_model->init(3);
  auto bp_model = nn::make_lenet5(kernels::best_isa());
  bp_model->init(3);
  const std::vector<float> before(zo_model->param_data(),
                                  zo_model->param_data() + zo_model->num_params());
  Fp32TrainerOptions o = test::zo_options(5, kBatch, 1e-2f, 1e9f, kQueries);
  o.estimator = config::Estimator::kLayerwise;
  o.perturbation = kernels::PerturbSource::kRademacher;
  o.node_perturbation = true;
  Fp32Trainer zo(*zo_model, o);
  const std::size_t plain = [&] {
    Fp32TrainerOptions w = o;
    w.node_perturbation = false;
    auto m = nn::make_lenet5(kernels::best_isa());
    return Fp32Trainer(*m, w).planned_bytes();
  }();
  EXPECT_GT(zo.planned_bytes(), plain) << "the node buffers are counted";
  std::vector<double> moved(before.size(), 0.0);
  for (int r = 0; r < kRepeats; ++r) {
    std::copy(before.begin(), before.end(), zo_model->param_data());
    zo.step(batch.x.data(), batch.y.data(), kBatch, 99 + static_cast<std::uint64_t>(r), 1.0f,
            0.0f, times);
    for (std::size_t i = 0; i < before.size(); ++i)
      moved[i] += (double(zo_model->param_data()[i]) - before[i]) / kRepeats;
  }
  Fp32TrainerOptions b;
  b.partition = 0;
  b.batch_size = kBatch;
  Fp32Trainer bp(*bp_model, b);
  bp.step(batch.x.data(), batch.y.data(), kBatch, 99, 0.0f, 1.0f, times);
  const std::size_t K = kBatch * kQueries;
  for (int layer = 2; layer < 5; ++layer) {
    const nn::ParamTensor* w = zo_model->params_of_range(layer, layer + 1)[0];
    const nn::ParamTensor* g = bp_model->params_of_range(layer, layer + 1)[0];
    const std::size_t at = static_cast<std::size_t>(w->data - zo_model->param_data()), n = w->size();
    std::vector<float> d_zo(n), d_bp(n);
    for (std::size_t i = 0; i < n; ++i) {
      d_zo[i] = static_cast<float>(moved[at + i]);
      d_bp[i] = g->data[i] - before[at + i];
    }
    const double bb = dot(d_bp.data(), d_bp.data(), n), zz = dot(d_zo.data(), d_zo.data(), n);
    ASSERT_GT(bb, 0.0);
    const double cosine = dot(d_zo.data(), d_bp.data(), n) / std::sqrt(bb * zz);
    const double projection = dot(d_zo.data(), d_bp.data(), n) / bb;
    const double outputs = static_cast<double>(w->shape[0]);
    EXPECT_GT(cosine, 0.85) << "layer " << layer;
    EXPECT_GT(projection, 0.85 * K / (K + outputs - 1)) << "layer " << layer;
    EXPECT_LT(projection, 1.15) << "layer " << layer;
  }
}

}  // namespace
}  // namespace zt::train
