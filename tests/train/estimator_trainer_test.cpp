// The estimators inside the FP32 trainer: what the backprop part of ElasticZO reads whatever
// order an estimator takes its probes in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <string>
#include <vector>

#include "../support.hpp"
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
  Fp32TrainerOptions o;
  o.partition = partition;
  o.batch_size = 8;
  o.eps = eps;
  o.grad_clip = 1e9f;
  o.queries = queries;
  o.estimator = estimator;
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

}  // namespace
}  // namespace zt::train
