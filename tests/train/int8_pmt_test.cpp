// Poor Man's Training on int8 (zo.estimator layerwise, src/train/int8_zo.cpp): its probes leave
// the weights exactly as they were, its update of each layer is the global η divided by that
// layer's s² = 2^{2e} (quantisation-aware scaling), node perturbation steps a fully connected
// layer along the gradient of the dequantised loss with the right size, the weights do not
// depend on the thread count, and the step lowers the loss of a batch it keeps seeing.
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

Int8TrainerOptions pmt_options(int partition, int batch, bool nodes, int queries = 1) {
  Int8TrainerOptions o;
  o.queries = queries;
  o.partition = partition;
  o.batch_size = batch;
  o.layerwise = true;
  o.node_perturbation = nodes;
#ifdef ZT_OPENMP
  o.threads = omp_get_max_threads();  // the kernels' scratch is planned per thread
#endif
  return o;
}

Rig make(int partition, bool nodes = false, int queries = 1) {
  Rig s;
  auto fp32 = nn::make_lenet5(kernels::Isa::kReference);
  s.net = nn::make_int8_net(*fp32, kernels::best_isa());
  nn::init_niti(*s.net, 5);
  s.trainer = std::make_unique<Int8Trainer>(*s.net, pmt_options(partition, kBatch, nodes, queries));
  SplitMix64 rng(17);
  std::vector<std::uint8_t> pixels(kBatch * 28 * 28);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng.below(3) == 0 ? rng.below(256) : 0);
  s.x.resize(pixels.size());
  kernels::quantize_pixels_s8(pixels.data(), pixels.size(), kernels::pixel_quant_shift(), s.x.data());
  s.labels.resize(kBatch);
  for (auto& l : s.labels) l = static_cast<std::uint8_t>(rng.below(10));
  return s;
}

Int8StepResult step(Rig& s, const ZoEstimator& e, std::uint64_t seed, double lr) {
  return int8_layerwise_step(*s.trainer, e, s.x.data(), kernels::pixel_quant_shift().exponent, kBatch,
                             s.labels.data(), 10, seed, Int8Hyper{}, lr);
}

// θ_{1..C} of the network.
std::vector<std::int8_t> zo_part(const Rig& s) {
  const std::int8_t* w = s.net->weights();
  return {w, w + s.trainer->zo_weights()};
}

TEST(Int8Pmt, ProbesRestoreEveryLayerExactly) {
  for (int c : {5, 3})  // Full ZO and Cls1 (a second clean pass, then backprop)
  for (bool nodes : {false, true}) {
    Rig s = make(c, nodes, 3);
    // Weights at the clamp, where θ + ξ − ξ would not give θ back.
    std::int8_t* w = s.net->weights();
    for (std::size_t i = 0; i < s.trainer->zo_weights(); i += 3) w[i] = (i % 2) != 0 ? 127 : -127;
    const auto before = zo_part(s);
    const auto pmt = make_estimator(config::Estimator::kLayerwise, 3);
    const Int8StepResult r = step(s, *pmt, 77, 0.0);
    EXPECT_EQ(zo_part(s), before) << "C=" << c << (nodes ? " nodes" : "");
    EXPECT_GT(r.loss, 0.0);
    EXPECT_GE(r.correct, 0);
  }
}

// PointNet (integer BatchNorm, the lean tail in the ZO part at C = 6, the head layer after the
// pool node-perturbed): the same exact restore, and a step at η > 0 moves every ZO layer.
TEST(Int8Pmt, PointNetRestoresAndStepsEveryZoLayer) {
  constexpr int kPoints = 64, kB = 4, kC = 6;
  auto fp32 = nn::make_pointnet(kPoints, kernels::Isa::kReference);
  auto net = nn::make_int8_net(*fp32, kernels::best_isa(), true);
  nn::init_niti(*net, 5);
  Int8Trainer t(*net, pmt_options(kC, kB, true, 2));  // its head by node perturbation
  ASSERT_GT(t.block_nodes(kC - 1), 0u);
  ASSERT_TRUE(t.lean());
  SplitMix64 rng(9);
  std::vector<std::int8_t> x(static_cast<std::size_t>(kB) * kPoints * 3);
  std::vector<std::uint8_t> y(kB);
  for (auto& v : x) v = static_cast<std::int8_t>(static_cast<int>(rng.below(129)) - 64);
  for (auto& l : y) l = static_cast<std::uint8_t>(rng.below(nn::kPointNetClasses));
  const auto pmt = make_estimator(config::Estimator::kLayerwise, 2);
  const std::vector<std::int8_t> before(net->weights(), net->weights() + t.zo_weights());
  int8_layerwise_step(t, *pmt, x.data(), -6, kB, y.data(), nn::kPointNetClasses, 3, Int8Hyper{},
                      0.0);
  EXPECT_EQ(std::vector<std::int8_t>(net->weights(), net->weights() + t.zo_weights()), before);
  int8_layerwise_step(t, *pmt, x.data(), -6, kB, y.data(), nn::kPointNetClasses, 4, Int8Hyper{},
                      1e3);
  for (int b = 0; b < t.zo_blocks(); ++b) {
    const nn::Int8Layer& l = net->layer(net->parametric_layer(b));
    const auto* w = net->weights() + l.weight_offset;
    const auto from = before.begin() + static_cast<std::ptrdiff_t>(l.weight_offset);
    EXPECT_FALSE(std::equal(w, w + l.weight_count, from)) << l.name;
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

// Node perturbation of fc3 (no ReLU after it) with many queries: its update must point along
// and match the size of the step of FP32 SGD on the dequantised loss, −η ∂L/∂W (in W̄ units:
// −η/s_W² ∂L/∂W̄, ∂L/∂W̄ = Σ_n (p_n − onehot_n) 2^{e_y} ⊗ x̄_n 2^{e_W + e_x − e_y} / n), times the
// scaling K / (K + d − 1). A wrong exponent in the chain rule is off by a power of two.
class Fc3Nodes final : public ZoEstimator {
 public:
  explicit Fc3Nodes(int q) : q_(q) {}
  int queries() const override { return q_; }
  void step(ZoExecutor& ex, std::span<double>) const override {
    ex.probe(0, ProbeSide::kMinus);
    for (int i = 0; i < q_; ++i) ex.probe_nodes(4, i);
    ex.update_nodes(4, q_, 1.0);
  }

 private:
  int q_;
};

TEST(Int8Pmt, NodePerturbationStepsAlongTheGradient) {
  const int q = 64;
  Rig s = make(5, true, q);
  ASSERT_EQ(s.trainer->block_nodes(4), 10u);
  ASSERT_EQ(s.trainer->block_nodes(0), 0u);  // conv1: weights
  // The clean logits, fc3's input and its exponents, from a clean pass at the same weights.
  s.trainer->begin(s.x.data(), kernels::pixel_quant_shift().exponent, kBatch);
  s.trainer->probe(false);
  const Int8Logits lg = s.trainer->logits_minus();
  const std::vector<std::int8_t> logits(lg.values, lg.values + kBatch * 10);
  const nn::Int8Layer& l = s.net->layer(s.net->parametric_layer(4));
  const std::size_t K = l.in.numel();
  const std::vector<std::int8_t> x(s.trainer->node_input(4), s.trainer->node_input(4) + kBatch * K);
  const int scale_exp = s.trainer->node_scale_exp(4);
  const auto before = std::vector<std::int8_t>(s.net->weights() + l.weight_offset,
                                               s.net->weights() + l.weight_offset + l.weight_count);
  // Analytic: G[n, k] = (p − onehot) · 2^{e_y} per unit of ȳ (softmax of the dequantised logits).
  std::vector<double> want(l.weight_count, 0.0);
  for (int n = 0; n < kBatch; ++n) {
    double m = -1e300, z = 0;
    std::vector<double> v(10);
    for (int k = 0; k < 10; ++k)
      m = std::max(m, v[k] = std::ldexp(logits[n * 10 + k], lg.exponent));
    for (int k = 0; k < 10; ++k) z += std::exp(v[k] - m);
    for (int k = 0; k < 10; ++k) {
      const double g = (std::exp(v[k] - m) / z - (k == s.labels[n] ? 1.0 : 0.0)) *
                       std::ldexp(1.0, lg.exponent) / kBatch;
      for (std::size_t j = 0; j < K; ++j) want[k * K + j] += g * x[n * K + j];
    }
  }
  const double lr = 0.2;  // steps of a few units: far from the ±127 clamp
  const double K_dirs = kBatch * q, gns = K_dirs / (K_dirs + 10 - 1);
  for (double& w : want) w *= -lr * gns * std::ldexp(1.0, scale_exp);
  step(s, Fc3Nodes(q), 4242, lr);
  double dot = 0, nw = 0, ng = 0;
  for (std::size_t i = 0; i < l.weight_count; ++i) {
    const double got = s.net->weights()[l.weight_offset + i] - before[i];
    dot += got * want[i];
    nw += want[i] * want[i];
    ng += got * got;
  }
  ASSERT_GT(nw, 0.0);
  EXPECT_GT(dot / std::sqrt(nw * ng), 0.95);  // cosine (0.99 measured)
  EXPECT_NEAR(dot / nw, 1.0, 0.15);           // its size along the wanted step (1.04 measured)
}

TEST(Int8Pmt, SameWeightsForAnyThreadCount) {
#ifdef ZT_OPENMP
  const int saved = omp_get_max_threads();
  for (bool nodes : {false, true}) {
    std::vector<std::vector<std::int8_t>> weights;
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      Rig s = make(3, nodes, 2);
      const auto pmt = make_estimator(config::Estimator::kLayerwise, 2);
      for (int i = 0; i < 3; ++i) step(s, *pmt, 900 + static_cast<std::uint64_t>(i), 0.3);
      weights.emplace_back(s.net->weights(), s.net->weights() + s.net->num_weights());
    }
    EXPECT_EQ(weights[0], weights[1]) << (nodes ? "nodes" : "weights");
    EXPECT_EQ(weights[0], weights[2]) << (nodes ? "nodes" : "weights");
  }
  omp_set_num_threads(saved);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

TEST(Int8Pmt, LowersTheLossOfABatch) {
  Rig s = make(3);  // Cls1: conv1, conv2, fc1 by PMT, fc2 and fc3 by NITI backprop
  Rig z = make(5);  // Full ZO
  const auto pmt = make_estimator(config::Estimator::kLayerwise, 4);
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
