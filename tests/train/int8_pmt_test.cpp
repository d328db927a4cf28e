// Poor Man's Training on int8 (zo.estimator layerwise, src/train/int8_zo.cpp): its probes leave
// the weights exactly as they were, its update of each layer is the global η divided by that
// layer's s² = 2^{2e} (quantisation-aware scaling), and the step lowers the loss of a batch it
// keeps seeing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/kernels/quant.hpp"
#include "zotrain/nn/int8_setup.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/nn/pointnet.hpp"
#include "zotrain/train/int8_trainer.hpp"
#include "zotrain/train/int8_zo.hpp"

namespace zt::train {
namespace {

constexpr int kBatch = 32;

struct Rig {
  std::unique_ptr<nn::Int8Net> net;
  std::unique_ptr<Int8Trainer> trainer;
  std::vector<std::int8_t> x;
  std::vector<std::uint8_t> labels;
};

Rig make(int partition) {
  Rig s;
  auto fp32 = nn::make_lenet5(kernels::Isa::kReference);
  s.net = nn::make_int8_net(*fp32, kernels::best_isa());
  nn::init_niti(*s.net, 5);
  Int8TrainerOptions o;
  o.partition = partition;
  o.batch_size = kBatch;
  o.layerwise = true;
#ifdef ZT_OPENMP
  o.threads = omp_get_max_threads();  // the kernels' scratch is planned per thread
#endif
  s.trainer = std::make_unique<Int8Trainer>(*s.net, o);
  SplitMix64 rng(17);
  std::vector<std::uint8_t> pixels(kBatch * 28 * 28);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng.below(3) == 0 ? rng.below(256) : 0);
  s.x.resize(pixels.size());
  kernels::quantize_pixels_s8(pixels.data(), pixels.size(), s.x.data());
  s.labels.resize(kBatch);
  for (auto& l : s.labels) l = static_cast<std::uint8_t>(rng.below(10));
  return s;
}

Int8StepResult step(Rig& s, const ZoEstimator& e, std::uint64_t seed, double lr) {
  return int8_layerwise_step(*s.trainer, e, s.x.data(), kernels::kPixelExponent, kBatch,
                             s.labels.data(), 10, seed, Int8Hyper{}, lr);
}

// θ_{1..C} of the network.
std::vector<std::int8_t> zo_part(const Rig& s) {
  const std::int8_t* w = s.net->weights();
  return {w, w + s.trainer->zo_weights()};
}

TEST(Int8Pmt, ProbesRestoreEveryLayerExactly) {
  for (int c : {5, 3}) {  // Full ZO and Cls1 (a second clean pass, then backprop)
    Rig s = make(c);
    // Weights at the clamp, where θ + ξ − ξ would not give θ back.
    std::int8_t* w = s.net->weights();
    for (std::size_t i = 0; i < s.trainer->zo_weights(); i += 3) w[i] = (i % 2) != 0 ? 127 : -127;
    const auto before = zo_part(s);
    const auto pmt = make_estimator("layerwise", 3);
    const Int8StepResult r = step(s, *pmt, 77, 0.0);
    EXPECT_EQ(zo_part(s), before) << "C=" << c;
    EXPECT_GT(r.loss, 0.0);
    EXPECT_GE(r.correct, 0);
  }
}

// PointNet (integer BatchNorm, the lean tail in the ZO part at C = 6): the same exact restore,
// and a step at η > 0 moves every ZO layer.
TEST(Int8Pmt, PointNetRestoresAndStepsEveryZoLayer) {
  constexpr int kPoints = 64, kB = 4, kC = 6;
  auto fp32 = nn::make_pointnet(kPoints, kernels::Isa::kReference);
  auto net = nn::make_int8_net(*fp32, kernels::best_isa(), true);
  nn::init_niti(*net, 5);
  Int8TrainerOptions o;
  o.partition = kC;
  o.batch_size = kB;
  o.layerwise = true;
#ifdef ZT_OPENMP
  o.threads = omp_get_max_threads();
#endif
  Int8Trainer t(*net, o);
  ASSERT_TRUE(t.lean());
  SplitMix64 rng(9);
  std::vector<std::int8_t> x(static_cast<std::size_t>(kB) * kPoints * 3);
  std::vector<std::uint8_t> y(kB);
  for (auto& v : x) v = static_cast<std::int8_t>(static_cast<int>(rng.below(129)) - 64);
  for (auto& l : y) l = static_cast<std::uint8_t>(rng.below(nn::kPointNetClasses));
  const auto pmt = make_estimator("layerwise", 2);
  const std::vector<std::int8_t> before(net->weights(), net->weights() + t.zo_weights());
  int8_layerwise_step(t, *pmt, x.data(), -6, kB, y.data(), nn::kPointNetClasses, 3, Int8Hyper{},
                      0.0);
  EXPECT_EQ(std::vector<std::int8_t>(net->weights(), net->weights() + t.zo_weights()), before);
  int8_layerwise_step(t, *pmt, x.data(), -6, kB, y.data(), nn::kPointNetClasses, 4, Int8Hyper{},
                      1e3);
  for (int b = 0; b < t.zo_blocks(); ++b) {
    const nn::Int8Layer& l = net->layer(net->parametric_layer(b));
    const auto* w = net->weights() + l.weight_offset;
    EXPECT_FALSE(std::equal(w, w + l.weight_count, before.begin() +
                                                        static_cast<std::ptrdiff_t>(l.weight_offset)))
        << l.name;
  }
}

// Steps every block by a chosen projected gradient g_b (one query).
class FixedStep final : public ZoEstimator {
 public:
  explicit FixedStep(std::vector<double> g) : g_(std::move(g)) {}
  int queries() const override { return 1; }
  void step(ZoExecutor& ex, std::span<double>) const override {
    for (int b = 0; b < ex.blocks(); ++b) {
      ex.select_block(b);
      ex.update(std::span<const double>(&g_[static_cast<std::size_t>(b)], 1), 0);
    }
    ex.select_block(-1);
  }

 private:
  std::vector<double> g_;
};

TEST(Int8Pmt, UpdateDividesTheLearningRateByEachLayersScaleSquared) {
  Rig s = make(5);
  const double lr = 0.5;
  std::vector<double> g;
  std::vector<int> k;  // the wanted step of block b, in units of ξ: b + 1
  for (int b = 0; b < s.trainer->zo_blocks(); ++b) {
    k.push_back(b + 1);
    g.push_back(std::ldexp(static_cast<double>(b + 1), 2 * s.trainer->block_exponent(b)) / lr);
  }
  // The layers' exponents differ, so a scaling by 1/s (or none) fails below.
  EXPECT_NE(s.trainer->block_exponent(0), s.trainer->block_exponent(2));
  const auto before = zo_part(s);
  const std::uint64_t seed = 1234;
  step(s, FixedStep(g), seed, lr);
  const auto after = zo_part(s);
  for (int b = 0; b < s.trainer->zo_blocks(); ++b) {
    const nn::Int8Layer& l = s.net->layer(s.net->parametric_layer(b));
    std::vector<std::int8_t> xi(l.weight_count);
    kernels::signs_s8(kernels::SignSource::kRademacher, seeds::int8_perturbation(seed, 0),
                      static_cast<std::uint32_t>(l.weight_offset), xi.size(), xi.data());
    for (std::size_t j = 0; j < l.weight_count; ++j) {
      const std::size_t at = l.weight_offset + j;
      ASSERT_EQ(after[at], kernels::clamp_s8(before[at] - k[static_cast<std::size_t>(b)] * xi[j]))
          << l.name << " weight " << j;
    }
  }
}

TEST(Int8Pmt, SameWeightsForAnyThreadCount) {
#ifdef ZT_OPENMP
  const int saved = omp_get_max_threads();
  std::vector<std::vector<std::int8_t>> weights;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    Rig s = make(3);
    const auto pmt = make_estimator("layerwise", 2);
    for (int i = 0; i < 3; ++i) step(s, *pmt, 900 + static_cast<std::uint64_t>(i), 0.3);
    weights.emplace_back(s.net->weights(), s.net->weights() + s.net->num_weights());
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(weights[0], weights[2]);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

TEST(Int8Pmt, LowersTheLossOfABatch) {
  Rig s = make(3);  // Cls1: conv1, conv2, fc1 by PMT, fc2 and fc3 by NITI backprop
  Rig z = make(5);  // Full ZO
  const auto pmt = make_estimator("layerwise", 4);
  for (Rig* t : {&s, &z}) {
    double first = 0, last = 0;
    for (int i = 0; i < 40; ++i) {
      const double loss = step(*t, *pmt, 500 + static_cast<std::uint64_t>(i), 1.0).loss;
      if (i == 0) first = loss;
      last = loss;
    }
    EXPECT_LT(last, first - 0.1) << "C=" << t->trainer->zo_blocks();
  }
}

}  // namespace
}  // namespace zt::train
