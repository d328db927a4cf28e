// FP32 trainer: the SPSA estimate approaches the true gradient, perturb/restore returns θ,
// z is regenerated bit-identically, runs are deterministic across thread counts, and every
// registered method reduces the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "../support.hpp"
#include "train_test_support.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/nn/activation.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/nn/linear.hpp"
#include "zotrain/train/fp32_trainer.hpp"
#include "zotrain/config/methods.hpp"

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace zt::train {
namespace {

using kernels::Isa;

// 6 → 5 → ReLU → 4 (L = 2, 59 parameters): small enough for a converging SPSA mean.
std::unique_ptr<nn::Model> tiny_mlp() {
  std::vector<std::unique_ptr<nn::Layer>> l;
  l.push_back(std::make_unique<nn::Linear>("fc1", 6, 5, Isa::kPortable));
  l.push_back(std::make_unique<nn::Relu>("relu1", Isa::kPortable));
  l.push_back(std::make_unique<nn::Linear>("fc2", 5, 4, Isa::kPortable));
  auto m = std::make_unique<nn::Model>("tiny", Shape{{6}}, std::move(l));
  m->init(3);
  return m;
}

using Batch = test::LabelledBatch;
Batch random_batch(int n, std::size_t features, int classes, std::uint64_t seed) {
  return test::random_labelled_batch(n, features, classes, seed);
}

double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

TEST(Spsa, MeanOfEstimatesApproachesTrueGradient) {
  auto model = tiny_mlp();
  const Batch b = random_batch(8, 6, 4, 5);
  const std::size_t n = model->num_params();
  std::vector<double> truth(n);
  {
    Fp32TrainerOptions o;
    o.partition = 0;
    o.batch_size = 8;
    Fp32Trainer bp(*model, o);
    telemetry::PhaseTimes t;
    bp.step(b.x.data(), b.y.data(), 8, 1, 0.0f, 0.0f, t);  // lr 0: gradients only
    for (std::size_t i = 0; i < n; ++i) truth[i] = bp.grad()[i];
  }
  Fp32TrainerOptions o;
  o.partition = model->num_parametric();
  o.batch_size = 8;
  o.eps = 1e-3f;
  o.grad_clip = 1e9f;
  Fp32Trainer zo(*model, o);
  std::vector<double> mean(n, 0.0);
  std::vector<float> z(n);
  const int kSamples = 4000;
  telemetry::PhaseTimes t;
  for (int s = 0; s < kSamples; ++s) {
    const std::uint64_t seed = mix64(1000 + s);
    const StepStats st = zo.step(b.x.data(), b.y.data(), 8, seed, 0.0f, 0.0f, t);  // lr 0
    kernels::fill_gaussian_f32_ref(z.data(), n, seed, 0, 0);
    for (std::size_t i = 0; i < n; ++i) mean[i] += st.g * z[i] / kSamples;
  }
  // E[g z] = ∇L; with d = 59 and 4000 samples the expected cosine is ≈ √(N/(N+d)) ≈ 0.99.
  EXPECT_GT(cosine(mean, truth), 0.95);
  double norm_t = 0, norm_m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    norm_t += truth[i] * truth[i];
    norm_m += mean[i] * mean[i];
  }
  EXPECT_NEAR(std::sqrt(norm_m / norm_t), 1.0, 0.1);
}

TEST(ZoStep, PerturbAndRestoreReturnsParametersWithinRounding) {
  auto model = nn::make_lenet5(Isa::kPortable);
  model->init(1);
  const std::vector<float> before(model->param_data(), model->param_data() + model->num_params());
  Fp32TrainerOptions o;
  o.partition = 5;
  o.batch_size = 4;
  o.eps = 1e-3f;
  Fp32Trainer zo(*model, o);
  const Batch b = random_batch(4, 784, 10, 9);
  telemetry::PhaseTimes t;
  zo.step(b.x.data(), b.y.data(), 4, 77, 0.0f, 0.0f, t);  // +ε, −2ε, +ε with η = 0
  std::vector<float> z(model->num_params());
  kernels::fill_gaussian_f32_ref(z.data(), z.size(), 77, 0, 0);
  for (std::size_t i = 0; i < before.size(); ++i) {
    // three roundings of magnitude ≤ ulp(|θ| + 2ε|z|)
    const float bound = 4 * 1.2e-7f * (std::abs(before[i]) + 2e-3f * std::abs(z[i]));
    ASSERT_LE(std::abs(model->param_data()[i] - before[i]), bound) << i;
  }
}

TEST(ZoStep, UpdateMovesAlongMinusLrGTimesZ) {
  auto model = nn::make_lenet5(Isa::kPortable);
  model->init(1);
  const std::vector<float> before(model->param_data(), model->param_data() + model->num_params());
  Fp32TrainerOptions o;
  o.partition = 3;  // Cls1
  o.batch_size = 4;
  Fp32Trainer t3(*model, o);
  const Batch b = random_batch(4, 784, 10, 9);
  telemetry::PhaseTimes t;
  const float lr = 0.01f;
  const StepStats st = t3.step(b.x.data(), b.y.data(), 4, 123, lr, 0.0f, t);
  ASSERT_NE(st.g, 0.0);
  std::vector<float> z(t3.zo_params());
  kernels::fill_gaussian_f32_ref(z.data(), z.size(), 123, 0, 0);
  for (std::size_t i = 0; i < z.size(); i += 101) {
    const double expect = before[i] - lr * st.g * z[i];
    ASSERT_NEAR(model->param_data()[i], expect, 1e-6 + 1e-5 * std::abs(expect)) << i;
  }
  // BP part with lr_bp = 0 is unchanged.
  for (std::size_t i = t3.zo_params(); i < before.size(); ++i)
    ASSERT_EQ(model->param_data()[i], before[i]);
}

std::vector<float> train_steps(const config::MethodInfo& method, int threads, int steps) {
#ifdef ZT_OPENMP
  omp_set_num_threads(threads);
#else
  (void)threads;
#endif
  auto model = nn::make_lenet5(kernels::best_isa());
  model->init(5);
  Fp32TrainerOptions o;
  o.partition = method.rule == config::PartitionRule::kNone  ? 0
                : method.rule == config::PartitionRule::kAll ? 5
                                                             : 3;
  o.batch_size = 16;
  Fp32Trainer tr(*model, o);
  telemetry::PhaseTimes t;
  for (int s = 0; s < steps; ++s) {
    const Batch b = random_batch(16, 784, 10, 100 + s);
    tr.step(b.x.data(), b.y.data(), 16, mix64(s), 0.01f, 0.05f, t);
  }
  return {model->param_data(), model->param_data() + model->num_params()};
}

TEST(Determinism, SameSeedSameWeightsForAnyThreadCount) {
  for (const auto& m : config::methods()) {
    const auto a = train_steps(m, 1, 3);
    const auto b = train_steps(m, 1, 3);
    const auto c = train_steps(m, 2, 3);
    const auto d = train_steps(m, 3, 3);
    ASSERT_EQ(a, b) << m.name;
    EXPECT_EQ(a, c) << m.name << ": 1 vs 2 threads";
    EXPECT_EQ(a, d) << m.name << ": 1 vs 3 threads";
  }
#ifdef ZT_OPENMP
  omp_set_num_threads(omp_get_num_procs());
#endif
}

}  // namespace
}  // namespace zt::train

namespace zt::train {
namespace {

TEST(Forward, PerSampleResultsDoNotDependOnTheBatchSplit) {
  auto model = nn::make_lenet5(kernels::best_isa());
  model->init(11);
  Fp32TrainerOptions o;
  o.partition = 3;
  o.batch_size = 32;
  Fp32Trainer tr(*model, o);
  const Batch b = random_batch(32, 784, 10, 4);
  const float* all = tr.logits(b.x.data(), 32);
  const std::vector<float> batched(all, all + 32 * 10);
  for (int s = 0; s < 32; ++s) {
    const float* one = tr.logits(b.x.data() + 784 * s, 1);
    for (int k = 0; k < 10; ++k) ASSERT_EQ(one[k], batched[static_cast<std::size_t>(s) * 10 + k]) << s;
  }
  // An odd batch (partial last chunk) agrees too.
  const float* seven = tr.logits(b.x.data(), 7);
  for (int k = 0; k < 70; ++k) ASSERT_EQ(seven[k], batched[static_cast<std::size_t>(k)]);
}

}  // namespace
}  // namespace zt::train

namespace zt::train {
namespace {

// Every registered method lowers the loss of a tiny problem (the 59-parameter MLP memorising
// 16 random samples; partition from the method's rule, ElasticZO at C = 1 of L = 2).
class EveryMethod : public ::testing::TestWithParam<config::MethodInfo> {};

// Trains the tiny MLP on 16 random samples for 400 steps at partition C with q queries; returns
// the loss before and after, and the weights.
struct TinyRun {
  double before, after;
  std::vector<float> weights;
};
TinyRun train_tiny(int partition, int queries) {
  auto model = tiny_mlp();
  Fp32Trainer tr(*model, test::zo_options(partition, 16, 1e-3f, 10.0f, queries));
  const Batch b = random_batch(16, 6, 4, 31);
  TinyRun r;
  r.before = tr.loss(b.x.data(), b.y.data(), 16);
  telemetry::PhaseTimes t;
  for (int s = 0; s < 400; ++s) tr.step(b.x.data(), b.y.data(), 16, mix64(s), 0.02f, 0.1f, t);
  r.after = tr.loss(b.x.data(), b.y.data(), 16);
  r.weights.assign(model->param_data(), model->param_data() + model->num_params());
  return r;
}

TEST_P(EveryMethod, ReducesTheLossOfATinyProblem) {
  const int L = tiny_mlp()->num_parametric();
  const config::PartitionRule rule = GetParam().rule;
  const int c = rule == config::PartitionRule::kNone ? 0 : rule == config::PartitionRule::kAll ? L : 1;
  const TinyRun r = train_tiny(c, 1);
  EXPECT_LT(r.after, 0.9 * r.before) << GetParam().name << ": " << r.before << " -> " << r.after;
}

// Several queries per step (two_sided, q = 4): ElasticZO still lowers the loss, and it is a
// different step from q = 1 (other directions are probed).
TEST(EstimatorQueries, SeveralQueriesLowerTheLossOfATinyProblem) {
  const TinyRun one = train_tiny(1, 1), four = train_tiny(1, 4);
  EXPECT_LT(one.after, 0.9 * one.before) << "q = 1: " << one.before << " -> " << one.after;
  EXPECT_LT(four.after, 0.9 * four.before) << "q = 4: " << four.before << " -> " << four.after;
  EXPECT_NE(four.weights, one.weights);
}

// PeZO's stream offsets: a step's perturbations are numbered by the run's step count (q per
// step), not drawn from the step seed. So with stream offsets the step seed changes nothing and
// the step number does; with the default seeded offsets it is the other way round.
TEST(PezoStreamOffsets, TheStepNumberNotTheSeedPicksTheWindow) {
  const test::LabelledBatch b = test::random_labelled_batch(4, 784, 10, 5, 0.0, 1.0);
  auto run = [&](bool stream, std::uint64_t step_number, std::uint64_t step_seed) {
    auto model = nn::make_lenet5(kernels::best_isa());
    model->init(3);
    Fp32TrainerOptions o;
    o.partition = 4;
    o.batch_size = 4;
    o.queries = 2;
    o.perturbation = kernels::PerturbSource::kPezoPool;
    o.pezo.seed = 9;
    o.pezo.stream_offsets = stream;
    Fp32Trainer t(*model, o);
    t.set_step_number(step_number);
    telemetry::PhaseTimes times;
    const StepStats st = t.step(b.x.data(), b.y.data(), 4, step_seed, 1e-3f, 1e-2f, times);
    return std::vector<double>{st.loss, st.g};
  };
  EXPECT_EQ(run(true, 6, 100), run(true, 6, 200));
  EXPECT_NE(run(true, 6, 100), run(true, 7, 100));
  EXPECT_NE(run(false, 6, 100), run(false, 6, 200));
  EXPECT_EQ(run(false, 6, 100), run(false, 7, 100));
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryMethod, ::testing::ValuesIn(config::methods()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace zt::train
