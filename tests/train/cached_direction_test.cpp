// zo.cache_direction: the FP32 trainer draws each step's direction once into a buffer and reads
// it back for the − pass and the update. The training trajectory must be the one of
// regenerating z every time, bit for bit, for every perturbation source, any C and q, and the
// planned bytes must count the buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../support.hpp"
#include "train_test_support.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/train/fp32_trainer.hpp"

namespace zt::train {
namespace {

struct Trajectory {
  std::vector<float> theta;
  std::vector<double> loss, g;
  std::size_t planned = 0, zo_params = 0;
};

// defer: defer_zo_update as well; then a loss between steps (a forward pass, which applies the
// pending update) and sync_weights() before θ is read.
Trajectory train(int partition, int queries, kernels::PerturbSource source, bool cache, int steps,
                 const char* estimator = "two_sided", bool defer = false) {
  auto model = nn::make_lenet5(kernels::best_isa());
  model->init(7);
  Fp32TrainerOptions o = test::zo_options(partition, 6, 1e-2f, 2.0f, queries);
  o.perturbation = source;
  o.pezo.seed = 5;
  o.cache_direction = cache;
  o.defer_zo_update = defer;
  o.estimator = config::estimator(estimator).id;
  Fp32Trainer t(*model, o);
  Trajectory r;
  telemetry::PhaseTimes times;
  for (int s = 0; s < steps; ++s) {
    const test::LabelledBatch b =
        test::random_labelled_batch(6, 784, 10, 100 + static_cast<std::uint64_t>(s), 0.0, 1.0);
    const StepStats st = t.step(b.x.data(), b.y.data(), 6, 1000 + static_cast<std::uint64_t>(s),
                                0.05f, 0.05f, times);
    r.loss.push_back(st.loss);
    r.g.push_back(st.g);
    if (s == 1) r.loss.push_back(t.loss(b.x.data(), b.y.data(), 6));
  }
  t.sync_weights();
  r.theta.assign(model->param_data(), model->param_data() + model->num_params());
  r.planned = t.planned_bytes();
  r.zo_params = t.zo_params();
  return r;
}

TEST(CachedDirection, SameTrajectoryAsRegeneratingZ) {
  using S = kernels::PerturbSource;
  struct Case {
    int partition, queries;
    S source;
    const char* estimator;
  };
  // The layer-wise estimator reads the cache one layer's slice at a time.
  const Case cases[] = {{4, 1, S::kGaussian, "two_sided"},   {5, 1, S::kGaussian, "two_sided"},
                        {2, 3, S::kGaussian, "two_sided"},   {4, 1, S::kRademacher, "two_sided"},
                        {4, 2, S::kPezoPool, "two_sided"},   {4, 1, S::kPezoOnTheFly, "two_sided"},
                        {4, 2, S::kRademacher, "layerwise"}, {3, 1, S::kGaussian, "one_sided"},
                        {5, 2, S::kXorshift, "layerwise"}};
  for (const Case& c : cases) {
    const Trajectory plain = train(c.partition, c.queries, c.source, false, 4, c.estimator);
    const Trajectory cached = train(c.partition, c.queries, c.source, true, 4, c.estimator);
    const std::string what = "C = " + std::to_string(c.partition) + ", q = " +
                             std::to_string(c.queries) + ", " +
                             kernels::perturb_source_name(c.source) + ", " + c.estimator;
    EXPECT_EQ(plain.loss, cached.loss) << what;
    EXPECT_EQ(plain.g, cached.g) << what;
    EXPECT_TRUE(plain.theta == cached.theta) << what;
    // The update is deferred where the step's last perturbation reads the cache over all of
    // θ_{1..C}: one query, whole-range estimators.
    if (c.queries == 1 && std::string(c.estimator) != "layerwise") {
      const Trajectory deferred =
          train(c.partition, c.queries, c.source, true, 4, c.estimator, true);
      EXPECT_EQ(plain.loss, deferred.loss) << what << ", deferred update";
      EXPECT_EQ(plain.g, deferred.g) << what << ", deferred update";
      EXPECT_TRUE(plain.theta == deferred.theta) << what << ", deferred update";
    }
    // The weights moved (a trajectory, not a no-op) ...
    auto model = nn::make_lenet5(kernels::best_isa());
    model->init(7);
    EXPECT_FALSE(std::equal(plain.theta.begin(), plain.theta.end(), model->param_data())) << what;
    // ... and the buffer is counted: one float per ZO weight (the arena aligns it to 64 bytes).
    EXPECT_GT(cached.zo_params, 0u) << what;
    EXPECT_EQ(cached.planned - plain.planned, (cached.zo_params * sizeof(float) + 63) / 64 * 64)
        << what;
  }
}

// The deferred update is pending between steps: θ lags until a forward pass or sync_weights()
// applies it, and discard_deferred() drops it.
TEST(CachedDirection, DeferredUpdateIsPendingUntilSynced) {
  auto model = nn::make_lenet5(kernels::best_isa());
  model->init(7);
  Fp32TrainerOptions o;
  o.partition = 5;
  o.batch_size = 6;
  o.eps = 1e-2f;
  o.cache_direction = true;
  o.defer_zo_update = true;
  Fp32Trainer t(*model, o);
  telemetry::PhaseTimes times;
  const test::LabelledBatch b = test::random_labelled_batch(6, 784, 10, 3, 0.0, 1.0);
  const std::vector<float> before(model->param_data(), model->param_data() + model->num_params());
  t.step(b.x.data(), b.y.data(), 6, 99, 0.05f, 0.05f, times);
  const std::vector<float> lagging(model->param_data(), model->param_data() + model->num_params());
  EXPECT_FALSE(lagging == before);  // θ − εz until the update is applied
  t.sync_weights();
  const std::vector<float> synced(model->param_data(), model->param_data() + model->num_params());
  EXPECT_FALSE(synced == lagging);
  t.sync_weights();  // nothing pending any more
  EXPECT_TRUE(std::equal(synced.begin(), synced.end(), model->param_data()));
  t.step(b.x.data(), b.y.data(), 6, 100, 0.05f, 0.05f, times);
  t.discard_deferred();
  const std::vector<float> dropped(model->param_data(), model->param_data() + model->num_params());
  t.sync_weights();
  EXPECT_TRUE(std::equal(dropped.begin(), dropped.end(), model->param_data()));
}

TEST(CachedDirection, AddScaledMatchesPerturbBitForBit) {
  // The kernel the cache relies on: fill + add_scaled_f32 = perturb, at odd sizes and offsets
  // (70,001 elements split over threads where there are several).
  const kernels::Perturber p(kernels::PerturbSource::kGaussian, kernels::best_isa());
  for (std::size_t n : {std::size_t{1}, std::size_t{31}, std::size_t{33}, std::size_t{1000},
                        std::size_t{70001}}) {
    std::vector<float> a(n), z(n);
    for (std::size_t i = 0; i < n; ++i) a[i] = 0.001f * static_cast<float>(i % 97) - 0.04f;
    std::vector<float> b = a;
    p.perturb(a.data(), n, 42, 3, 17, -0.0123f);
    p.fill(z.data(), n, 42, 3, 17);
    kernels::add_scaled_f32(b.data(), z.data(), n, -0.0123f);
    EXPECT_TRUE(a == b) << "n = " << n;
  }
}

}  // namespace
}  // namespace zt::train
