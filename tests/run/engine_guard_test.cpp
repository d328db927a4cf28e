// The engines' divergence guard on the state after every update (Engine::step's nonfinite,
// Engine::check_finite): it names the first non-finite tensor and its part, it allocates
// nothing, and the finiteness pass itself is exact at every position and for every kind of
// non-finite value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../train/step_allocations.hpp"
#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/run/engine.hpp"

namespace zt::run {
namespace {

// One batch of random MNIST-like images, the same every call.
class RandomImages final : public BatchSource {
 public:
  RandomImages(std::size_t sample_floats, int batch)
      : floats_(sample_floats), n_(batch), pixels_(sample_floats * std::size_t(batch)),
        labels_(std::size_t(batch)) {
    std::mt19937 rng(5);
    for (auto& p : pixels_) p = std::uint8_t(rng() % 256);
    for (auto& l : labels_) l = std::uint8_t(rng() % 10);
  }
  int batches_per_epoch() const override { return 1; }
  void start_epoch(int /*epoch*/) override {}
  std::size_t sample_floats() const override { return floats_; }
  int fill(int /*index*/, float* x, std::uint8_t* labels) override {
    for (std::size_t i = 0; i < pixels_.size(); ++i) x[i] = float(pixels_[i]) / 255.0f - 0.5f;
    std::copy(labels_.begin(), labels_.end(), labels);
    return n_;
  }
  int fill_raw(int /*index*/, std::uint8_t* raw, std::uint8_t* labels) override {
    std::copy(pixels_.begin(), pixels_.end(), raw);
    std::copy(labels_.begin(), labels_.end(), labels);
    return n_;
  }

 private:
  std::size_t floats_;
  int n_;
  std::vector<std::uint8_t> pixels_, labels_;
};

constexpr int kBatch = 8;

struct Guarded {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<RandomImages> data;
  telemetry::PhaseTimes times;
  std::uint64_t k = 0;
  EngineStep step() {
    ++k;
    return engine->step(*data, 0, 100 + k, k, times);
  }
};

// `lr`, when given, is set on the parsed config directly: the config refuses learning rates
// above 1e10 (src/config/config_train.cpp), and the guard must hold whatever reaches the engine.
Guarded make_run(std::vector<std::string> sets, std::optional<double> lr = std::nullopt) {
  sets.push_back("model.arch=lenet5");
  sets.push_back("data.dataset=mnist");
  sets.push_back("train.batch_size=" + std::to_string(kBatch));
  config::ExperimentConfig cfg = config::parse_config("{}", "engine guard test", sets);
  if (lr) cfg.optimizer.lr = lr;
  Guarded r;
  r.engine = cfg.model.precision == config::Precision::kInt8 ? make_int8_engine(cfg, kBatch, 1)
                                                            : make_fp32_engine(cfg, kBatch, 1);
  r.data = std::make_unique<RandomImages>(r.engine->input_floats(), kBatch);
  r.engine->begin_epoch(0);
  return r;
}

TEST(EngineGuard, AllFiniteFindsEveryKindAtEveryPosition) {
  const float bad[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::signaling_NaN()};
  for (std::size_t n : {0, 1, 3, 4, 7, 8, 15, 16, 17, 33, 64, 1000}) {
    std::vector<float> x(n, 1.0f);
    if (n > 0) x[0] = -std::numeric_limits<float>::max(), x[n - 1] = std::numeric_limits<float>::denorm_min();
    EXPECT_TRUE(all_finite(x.data(), n)) << n;
    for (std::size_t i = 0; i < n; ++i)
      for (float b : bad) {
        const float keep = x[i];
        x[i] = b;
        EXPECT_FALSE(all_finite(x.data(), n)) << "n " << n << ", element " << i << " = " << b;
        x[i] = keep;
      }
  }
}

// ElasticZO with a learning rate that overflows the ZO weights (1e308 is +inf as a float): the
// step whose update did it names the first ZO tensor, though its loss is finite.
TEST(EngineGuard, NamesTheFirstNonFiniteTensorAndItsPart) {
  Guarded zo = make_run({"method.name=elastic_zo", "method.partition=2"}, 1e308);
  const EngineStep s = zo.step();
  EXPECT_TRUE(std::isfinite(s.loss));
  ASSERT_TRUE(s.nonfinite);
  EXPECT_STREQ(s.nonfinite.tensor, "conv1.weight");
  EXPECT_TRUE(s.nonfinite.zo);
  EXPECT_TRUE(zo.engine->check_finite());

  // Full BP overflowing: a backprop tensor.
  Guarded bp = make_run({"method.name=full_bp"}, 1e39);
  const EngineStep b = bp.step();
  ASSERT_TRUE(b.nonfinite);
  EXPECT_FALSE(b.nonfinite.zo);

  // A sane run: nothing to report, before or after its steps.
  Guarded ok = make_run({"method.name=elastic_zo"});
  EXPECT_FALSE(ok.engine->check_finite());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(ok.step().nonfinite);
  EXPECT_FALSE(ok.engine->check_finite());
}

// zo.cache_direction keeps a step's last ZO update pending: the step sees the weights before it,
// and check_finite() (what every checkpoint write asks first) applies it and finds it.
TEST(EngineGuard, CheckFiniteAppliesAPendingDeferredUpdate) {
  Guarded r = make_run({"method.name=full_zo", "zo.cache_direction=true"}, 1e308);
  EXPECT_FALSE(r.step().nonfinite);  // the overflowing update is pending
  const NonFinite bad = r.engine->check_finite();
  ASSERT_TRUE(bad);
  EXPECT_TRUE(bad.zo);
}

// Int8 state is integers: never non-finite, whatever the step.
TEST(EngineGuard, Int8StateIsAlwaysFinite) {
  Guarded r = make_run({"model.precision=int8", "method.name=elastic_zo"});
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(r.step().nonfinite);
  EXPECT_FALSE(r.engine->check_finite());
}

// The guard runs inside every step and allocates nothing (nor does check_finite).
TEST(EngineGuard, StepsWithTheGuardAllocateNothing) {
  for (const char* method : {"full_bp", "elastic_zo", "full_zo"}) {
    Guarded r = make_run({std::string("method.name=") + method, "optimizer.name=adam"});
    test::expect_steps_allocate_nothing(std::string("engine step, ") + method, [&](int) {
      r.step();
      r.engine->check_finite();
    });
  }
}

}  // namespace
}  // namespace zt::run
