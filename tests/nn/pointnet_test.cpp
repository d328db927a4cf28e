// PointNet (docs/design.md §2) and its layers' behaviour beyond the gradient checks in
// layers_test.cpp: parameter counts per θ_l (BatchNorm joins its linear layer), shapes,
// partition boundaries, initialisation, BatchNorm train/eval and running statistics, max-pool
// over points routing, and an end-to-end gradient check of the whole model.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "zotrain/config/catalogue.hpp"
#include "zotrain/nn/architectures.hpp"
#include "zotrain/nn/activation.hpp"
#include "zotrain/nn/batchnorm.hpp"
#include "zotrain/nn/int8_setup.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/nn/pointnet.hpp"
#include "zotrain/telemetry/memory.hpp"
#include "zotrain/train/fp32_trainer.hpp"
#include "../support.hpp"

namespace zt::nn {
namespace {

using kernels::Isa;

// Widths of the point MLP and the head, as docs/design.md §2 states them.
constexpr std::size_t kMlp[6] = {3, 64, 64, 64, 128, 1024};
constexpr std::size_t kHead[4] = {1024, 512, 256, 40};

std::size_t theta_size(int p) {  // θ_{p+1}: point layer + BN (γ, β), or head layer with bias
  if (p < 5) return kMlp[p] * kMlp[p + 1] + 2 * kMlp[p + 1];
  return kHead[p - 5] * kHead[p - 4] + kHead[p - 4];
}

TEST(PointNet, ShapesAndParameterCounts) {
  auto m = make_pointnet(1024, kernels::best_isa());
  EXPECT_EQ(m->arch(), "pointnet");
  EXPECT_EQ(m->input_shape(), (Shape{{1024, 3}}));
  EXPECT_EQ(m->num_params(), 816744u);  // docs/design.md §2
  ASSERT_EQ(m->num_parametric(), 8);
  std::size_t weights = 0, bn = 0, head = 0;
  for (int p = 0; p < 8; ++p) {
    EXPECT_EQ(m->num_params_of_range(p, p + 1), theta_size(p)) << p;
    if (p < 5) {
      weights += kMlp[p] * kMlp[p + 1];
      bn += 2 * kMlp[p + 1];
    } else {
      head += theta_size(p);
    }
  }
  EXPECT_EQ(weights, 147648u);
  EXPECT_EQ(bn, 2688u);
  EXPECT_EQ(head, 666408u);
  // ZO parameter counts of the named settings (docs/design.md §3).
  EXPECT_EQ(m->num_params_of_range(0, 6), 675136u);  // ZO-Feat-Cls1, C = L−2
  EXPECT_EQ(m->num_params_of_range(0, 7), 806464u);  // ZO-Feat-Cls2, C = L−1
  // Output shapes layer by layer.
  ASSERT_EQ(m->size(), 21);
  for (int k = 0; k < 5; ++k)
    for (int j = 0; j < 3; ++j)  // linear, BN, ReLU: [N, width]
      EXPECT_EQ(m->output_shape(3 * k + j), (Shape{{1024, static_cast<int>(kMlp[k + 1])}}))
          << m->layer(3 * k + j).name();
  EXPECT_EQ(m->output_shape(15), (Shape{{1024}}));  // max-pool over points
  EXPECT_EQ(m->output_shape(20), (Shape{{40}}));
  EXPECT_EQ(m->num_classes(), 40);
  // Running statistics: 2 per channel of each BN, outside θ.
  EXPECT_EQ(m->num_buffer_floats(), bn);
  EXPECT_EQ(m->buffers().size(), 10u);
  EXPECT_EQ(m->buffers()[0]->name, "mlp1.bn.running_mean");
  EXPECT_EQ(m->buffers()[1]->name, "mlp1.bn.running_var");
}

TEST(PointNet, ThetaIncludesItsBatchNormAndIsContiguous) {
  auto m = make_pointnet(16, Isa::kReference);
  const float* next = m->param_data();
  for (int p = 0; p < m->num_parametric(); ++p) {
    auto ps = m->params_of_range(p, p + 1);
    for (ParamTensor* t : ps) {
      EXPECT_EQ(t->data, next) << t->name;  // θ_l in storage order, no gaps
      next += t->size();
    }
    if (p < 5) {
      const std::string mlp = "mlp" + std::to_string(p + 1);
      ASSERT_EQ(ps.size(), 3u);
      EXPECT_EQ(ps[0]->name, mlp + ".weight");
      EXPECT_EQ(ps[1]->name, mlp + ".bn.weight");
      EXPECT_EQ(ps[2]->name, mlp + ".bn.bias");
    } else {
      ASSERT_EQ(ps.size(), 2u);
      EXPECT_EQ(ps[1]->name, "fc" + std::to_string(p - 4) + ".bias");
    }
  }
  EXPECT_EQ(next, m->param_data() + m->num_params());
  for (ParamTensor* b : m->buffers())  // buffers live elsewhere
    EXPECT_TRUE(b->data < m->param_data() || b->data >= m->param_data() + m->num_params());
}

TEST(PointNet, BpSegmentStartForEveryPartition) {
  auto m = make_pointnet(32, Isa::kReference);
  // mlp1..mlp5 at 0, 3, 6, 9, 12; fc1, fc2, fc3 at 16, 18, 20; C = L → size().
  const int expect[9] = {0, 3, 6, 9, 12, 16, 18, 20, 21};
  const NetworkDesc net = m->describe();
  const auto fp = net.footprint();
  for (int c = 0; c <= 8; ++c) {
    EXPECT_EQ(m->bp_segment_start(c), expect[c]) << c;
    EXPECT_EQ(net.bp_segment_start(c), expect[c]) << c;               // the description agrees
    EXPECT_EQ(telemetry::bp_segment_start(fp, c), expect[c]) << c;  // and its footprint
  }
  // The footprint gives each θ_l's parameters to the layer that starts it.
  std::size_t total = 0;
  for (std::size_t i = 0; i < fp.size(); ++i) {
    total += fp[i].params;
    if (fp[i].kind == std::string("batchnorm")) {
      EXPECT_FALSE(fp[i].parametric);
      EXPECT_EQ(fp[i].params, 0u);
    }
  }
  EXPECT_EQ(total, m->num_params());
  EXPECT_EQ(fp[0].params, theta_size(0));
}

// The per-point stack both trainers plan from: FP32 mlp1..mlp5 (PointLinear, BatchNorm, ReLU)
// then the pool; the int8 network has no BatchNorm; LeNet-5 has no stack.
TEST(PointNet, PointStackOfBothPrecisions) {
  auto m = make_pointnet(32, Isa::kReference);
  const PointStack s = find_point_stack(m->describe());
  ASSERT_TRUE(s.found());
  EXPECT_EQ(s.pool, 15);
  EXPECT_EQ(s.tail, 12);
  EXPECT_EQ(s.batchnorms, (std::vector<int>{1, 4, 7, 10, 13}));
  EXPECT_EQ(s.between, (std::vector<LayerOp>{LayerOp::kBatchNorm, LayerOp::kRelu}));
  const PointStack i8 = find_point_stack(make_int8_net(*m, Isa::kReference)->describe());
  ASSERT_TRUE(i8.found());
  EXPECT_EQ(i8.pool, 10);
  EXPECT_EQ(i8.tail, 8);
  EXPECT_TRUE(i8.batchnorms.empty());
  EXPECT_EQ(i8.between, (std::vector<LayerOp>{LayerOp::kRelu}));
  EXPECT_FALSE(find_point_stack(make_lenet5(Isa::kReference)->describe()).found());
}

TEST(PointNet, MakeModelByArch) {
  auto a = make_model(Arch::kPointNet, Isa::kReference);
  EXPECT_EQ(a->input_shape(), (Shape{{kPointNetDefaultPoints, 3}}));
  auto b = make_model(Arch::kPointNet, Isa::kReference, 256);
  EXPECT_EQ(b->input_shape(), (Shape{{256, 3}}));
  EXPECT_EQ(b->num_params(), a->num_params());
  EXPECT_EQ(make_model(Arch::kLeNet5, Isa::kReference)->num_params(), 107786u);
  test::expect_error([] { make_model(Arch::kPointNet, Isa::kReference, 0); }, {"model.points"});
}

// The catalogue's L (which the config checks method.partition against) is the model's.
TEST(PointNet, CatalogueKnowsEachModelsLayers) {
  for (const config::ArchInfo& a : config::architectures())
    EXPECT_EQ(make_model(a.id, Isa::kReference)->num_parametric(), a.layers) << a.name;
}

TEST(PointNet, InitIsDeterministicAndPyTorchDefault) {
  auto a = make_pointnet(8, Isa::kReference), b = make_pointnet(8, Isa::kReference);
  a->init(5);
  b->init(5);
  for (std::size_t i = 0; i < a->num_params(); ++i)
    ASSERT_EQ(a->param_data()[i], b->param_data()[i]);
  for (int p = 0; p < 8; ++p) {
    auto ps = a->params_of_range(p, p + 1);
    const float bound = 1.0f / std::sqrt(static_cast<float>(p < 5 ? kMlp[p] : kHead[p - 5]));
    float mx = 0;
    for (std::size_t i = 0; i < ps[0]->size(); ++i) mx = std::max(mx, std::abs(ps[0]->data[i]));
    EXPECT_LE(mx, bound) << p;
    EXPECT_GT(mx, 0.95f * bound) << p;
    if (p < 5) {
      for (std::size_t i = 0; i < ps[1]->size(); ++i) {
        EXPECT_EQ(ps[1]->data[i], 1.0f);  // γ
        EXPECT_EQ(ps[2]->data[i], 0.0f);  // β
      }
    }
  }
  for (ParamTensor* t : a->buffers()) {
    const float want = t->name.ends_with("running_var") ? 1.0f : 0.0f;
    for (std::size_t i = 0; i < t->size(); ++i) ASSERT_EQ(t->data[i], want) << t->name;
  }
}

// A BatchNorm bound to its own storage with γ, β and running statistics given.
struct BnFixture {
  explicit BnFixture(int c, const Shape& in) : bn("mlp.bn", c), w(c), b(c), rm(c), rv(c) {
    auto ps = bn.params();
    ps[0]->data = w.data();
    ps[1]->data = b.data();
    auto bs = bn.buffers();
    bs[0]->data = rm.data();
    bs[1]->data = rv.data();
    SplitMix64 g(1);
    bn.init(g);
    bn.infer(in);
    scratch.resize(bn.scratch_floats(1));
  }
  BatchNorm bn;
  std::vector<float> w, b, rm, rv, scratch;
};

TEST(BatchNormLayer, TrainingNormalisesWithBatchStatisticsAndUpdatesRunningStats) {
  const int B = 3, N = 5, C = 4, M = B * N;
  BnFixture f(C, Shape{{N, C}});
  for (int c = 0; c < C; ++c) {
    f.w[c] = 1.5f + c;
    f.b[c] = 0.25f * c;
  }
  std::vector<float> x = test::random_floats(M * C, 3, -2.0f, 3.0f), y(M * C);
  EXPECT_TRUE(f.bn.training());
  f.bn.forward(B, x.data(), y.data(), f.scratch.data());
  for (int c = 0; c < C; ++c) {
    double mean = 0, var = 0, ym = 0, yv = 0;
    for (int r = 0; r < M; ++r) mean += x[r * C + c];
    mean /= M;
    for (int r = 0; r < M; ++r) var += (x[r * C + c] - mean) * (x[r * C + c] - mean);
    for (int r = 0; r < M; ++r) ym += y[r * C + c];
    ym /= M;
    for (int r = 0; r < M; ++r) yv += (y[r * C + c] - ym) * (y[r * C + c] - ym);
    // y has mean β and (biased) standard deviation γ·σ/√(σ² + eps) ≈ γ.
    EXPECT_NEAR(ym, f.b[c], 1e-5);
    EXPECT_NEAR(std::sqrt(yv / M), f.w[c] * std::sqrt(var / M / (var / M + 1e-5)), 1e-4);
    // running ← 0.9·running + 0.1·batch, unbiased variance (PyTorch).
    EXPECT_NEAR(f.rm[c], 0.1 * mean, 1e-6);
    EXPECT_NEAR(f.rv[c], 0.9 + 0.1 * var / (M - 1), 1e-6);
  }
  // A second pass moves the running statistics again (momentum 0.1 each time).
  const std::vector<float> rm1 = f.rm;
  f.bn.forward(B, x.data(), y.data(), f.scratch.data());
  for (int c = 0; c < C; ++c) EXPECT_NEAR(f.rm[c], 0.9f * rm1[c] + 0.1f * rm1[c] * 10, 1e-6);
}

TEST(BatchNormLayer, EvalUsesRunningStatisticsAndUpdatesNothing) {
  const int B = 2, N = 3, C = 3, M = B * N;
  BnFixture f(C, Shape{{N, C}});
  for (int c = 0; c < C; ++c) {
    f.w[c] = 0.5f + c;
    f.b[c] = -0.5f * c;
    f.rm[c] = 0.3f * c - 0.2f;
    f.rv[c] = 0.7f + c;
  }
  const std::vector<float> rm = f.rm, rv = f.rv;
  std::vector<float> x = test::random_floats(M * C, 4), y(M * C), y_train(M * C);
  f.bn.set_training(false);
  f.bn.forward(B, x.data(), y.data(), f.scratch.data());
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < C; ++c)
      EXPECT_NEAR(y[r * C + c], (x[r * C + c] - rm[c]) / std::sqrt(rv[c] + 1e-5f) * f.w[c] + f.b[c],
                  1e-5);
  EXPECT_EQ(f.rm, rm);
  EXPECT_EQ(f.rv, rv);
  // Per-sample in eval: a batch of one gives the same rows as the whole batch.
  std::vector<float> y1(N * C);
  f.bn.forward(1, x.data() + N * C, y1.data(), f.scratch.data());
  for (int i = 0; i < N * C; ++i) EXPECT_EQ(y1[i], y[N * C + i]);
  // Training mode on the same input differs (batch statistics).
  f.bn.set_training(true);
  f.bn.forward(B, x.data(), y_train.data(), f.scratch.data());
  EXPECT_NE(y_train, y);
}

TEST(BatchNormLayer, RunningStatsUpdateCanBeSwitchedOff) {
  const int B = 2, N = 4, C = 2;
  BnFixture f(C, Shape{{N, C}});
  std::vector<float> x = test::random_floats(B * N * C, 5), y(B * N * C), y_frozen(B * N * C);
  f.bn.forward(B, x.data(), y.data(), f.scratch.data());
  const std::vector<float> rm = f.rm, rv = f.rv;
  f.bn.set_update_running_stats(false);
  f.bn.forward(B, x.data(), y_frozen.data(), f.scratch.data());
  EXPECT_EQ(f.rm, rm);
  EXPECT_EQ(f.rv, rv);
  EXPECT_EQ(y_frozen, y);  // still batch statistics
}

// Large enough for the threaded paths (several channel blocks with a tail, a row-chunk tail):
// forward and backward against a double-precision reference of the same formulas.
TEST(BatchNormLayer, MatchesDoubleReferenceOnLargeInputs) {
  const int B = 3, N = 200, C = 130;
  const std::size_t M = B * N;
  BnFixture f(C, Shape{{N, C}});
  for (int c = 0; c < C; ++c) {
    f.w[c] = 0.5f + 0.01f * c;
    f.b[c] = 0.02f * c - 1.0f;
  }
  std::vector<float> x = test::random_floats(M * C, 6, -1.0f, 3.0f);
  for (std::size_t r = 0; r < M; ++r) x[r * C + 7] += 100.0f;  // a channel with a large mean
  const std::vector<float> dy = test::random_floats(M * C, 7);
  std::vector<float> y(x.size()), dx(x.size()), dw(C, 0.0f), db(C, 0.0f);
  f.bn.params()[0]->grad = dw.data();
  f.bn.params()[1]->grad = db.data();
  f.bn.forward(B, x.data(), y.data(), f.scratch.data());
  f.bn.backward(B, x.data(), y.data(), dy.data(), dx.data(), f.scratch.data());
  for (int c = 0; c < C; ++c) {
    double mean = 0, var = 0, sdy = 0, sdyx = 0;
    for (std::size_t r = 0; r < M; ++r) mean += x[r * C + c];
    mean /= static_cast<double>(M);
    for (std::size_t r = 0; r < M; ++r) var += std::pow(x[r * C + c] - mean, 2);
    var /= static_cast<double>(M);
    const double is = 1.0 / std::sqrt(var + 1e-5);
    for (std::size_t r = 0; r < M; ++r) {
      sdy += dy[r * C + c];
      sdyx += dy[r * C + c] * (x[r * C + c] - mean) * is;
    }
    EXPECT_NEAR(dw[c], sdyx, 1e-3 + 1e-4 * std::abs(sdyx)) << c;
    EXPECT_NEAR(db[c], sdy, 1e-3 + 1e-4 * std::abs(sdy)) << c;
    const double unbiased = var * static_cast<double>(M) / static_cast<double>(M - 1);
    EXPECT_NEAR(f.rv[c], 0.9 + 0.1 * unbiased, 1e-4 * f.rv[c]) << c;
    for (std::size_t r = 0; r < M; r += 37) {
      const std::size_t i = r * C + c;
      const double xh = (x[i] - mean) * is;
      EXPECT_NEAR(y[i], f.w[c] * xh + f.b[c], 1e-4) << r << "," << c;
      const double want = f.w[c] * is * (dy[i] - (sdy + xh * sdyx) / static_cast<double>(M));
      EXPECT_NEAR(dx[i], want, 1e-4 * (1 + std::abs(want))) << r << "," << c;
    }
  }
}

TEST(MaxPoolPointsLayer, MatchesPlainLoopOnLargeInputs) {
  const std::size_t B = 3, N = 300, C = 257;
  MaxPoolPoints pool("pool");
  pool.infer(Shape{{static_cast<int>(N), static_cast<int>(C)}});
  std::vector<float> x = test::random_floats(B * N * C, 9);
  for (std::size_t i = 0; i < x.size(); i += 5) x[i] = 0.5f;  // plenty of ties
  const std::vector<float> dy = test::random_floats(B * C, 10);
  std::vector<float> y(B * C), dx(x.size(), 9.0f);
  std::vector<float> scratch(pool.scratch_floats(static_cast<int>(B)));
  pool.forward(static_cast<int>(B), x.data(), y.data(), scratch.data());
  pool.backward(static_cast<int>(B), x.data(), y.data(), dy.data(), dx.data(), scratch.data());
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t c = 0; c < C; ++c) {
      const float* xb = x.data() + b * N * C;
      std::size_t arg = 0;
      for (std::size_t n = 1; n < N; ++n)
        if (xb[n * C + c] > xb[arg * C + c]) arg = n;
      ASSERT_EQ(y[b * C + c], xb[arg * C + c]);
      for (std::size_t n = 0; n < N; ++n)
        ASSERT_EQ(dx[(b * N + n) * C + c], n == arg ? dy[b * C + c] : 0.0f)
            << b << "," << n << "," << c;
    }
}

TEST(BatchNormLayer, RejectsWrongShapes) {
  BatchNorm bn("bn", 4);
  test::expect_error([&] { bn.infer(Shape{{5, 3}}); }, {"bn", "[N, 4]"});
  test::expect_error([&] { bn.infer(Shape{{2, 5, 4}}); }, {"bn"});
  EXPECT_EQ(bn.infer(Shape{{4}}), (Shape{{4}}));
}

TEST(MaxPoolPointsLayer, TiesRouteToTheFirstMaximum) {
  MaxPoolPoints pool("pool");
  const int N = 4, C = 3, B = 2;
  ASSERT_EQ(pool.infer(Shape{{N, C}}), (Shape{{C}}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // sample 0: channel 0 tie at points 1 and 3; channel 1 all equal; channel 2 max at the end.
  // sample 1: channel 0 NaN first (kept); channel 1 NaN later (ignored); channel 2 −0 vs 0.
  const std::vector<float> x = {
      1, 2, -3,  5, 2, -2,  0, 2, -1,  5, 2, 4,    // sample 0, rows n = 0..3
      nan, 1, -0.0f,  7, nan, 0.0f,  9, 3, 0.0f,  1, 2, -1};  // sample 1
  std::vector<float> y(B * C), dx(B * N * C, -1.0f), dy = {10, 20, 30, 40, 50, 60};
  std::vector<float> scratch(pool.scratch_floats(B));
  pool.forward(B, x.data(), y.data(), scratch.data());
  EXPECT_EQ(y[0], 5);
  EXPECT_EQ(y[1], 2);
  EXPECT_EQ(y[2], 4);
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(y[4], 3);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_TRUE(std::signbit(y[5]));  // −0 first, +0 is not greater
  pool.backward(B, x.data(), y.data(), dy.data(), dx.data(), scratch.data());
  std::vector<float> want(B * N * C, 0.0f);
  want[1 * C + 0] = 10;              // first of the tied 5s
  want[0 * C + 1] = 20;              // all equal: the first point
  want[3 * C + 2] = 30;
  want[N * C + 0 * C + 0] = 40;      // the NaN in first place
  want[N * C + 2 * C + 1] = 50;      // 3 (the later NaN never wins)
  want[N * C + 0 * C + 2] = 60;      // −0 first, ties keep it
  EXPECT_EQ(dx, want);
}

// Whole-model backward against central finite differences of Σ logits ⊙ r, probing 8 elements
// of every tensor of every θ_l (BatchNorm in training mode). Early parameters sit behind many
// ReLU and max-pool kinks and the forward is float, so single probes may miss (measured over
// 24 seeds: at most 2 of all 168 probes): each tensor needs 6 of its 8 probes within tolerance.
// That still catches a wrong chain (a BN not backpropagated, γ/β missing from θ_l, a gradient
// scaled wrongly), which fails every probe.
TEST(PointNet, ModelGradientMatchesFiniteDifferences) {
  const int B = 2, N = 4;
  auto m = make_pointnet(N, Isa::kReference);
  m->init(3);
  const int n = m->size();
  std::size_t scratch_floats = 1;
  for (int i = 0; i < n; ++i)
    scratch_floats = std::max(scratch_floats, m->layer(i).scratch_floats(B));
  std::vector<float> scratch(scratch_floats), grad(m->num_params(), 0.0f);
  std::vector<std::vector<float>> acts(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) acts[static_cast<std::size_t>(i)].resize(m->output_floats(i) * B);
  const std::vector<float> x = test::random_floats(m->input_floats() * B, 7);
  const std::vector<float> r = test::random_floats(m->output_floats(n - 1) * B, 8);
  float* g = grad.data();
  for (ParamTensor* p : m->params()) {
    p->grad = g;
    g += p->size();
  }
  auto input = [&](int i) {
    return i == 0 ? x.data() : acts[static_cast<std::size_t>(i - 1)].data();
  };
  auto objective = [&]() {
    for (int i = 0; i < n; ++i)
      m->layer(i).forward(B, input(i), acts[static_cast<std::size_t>(i)].data(), scratch.data());
    double s = 0;
    for (std::size_t k = 0; k < r.size(); ++k) s += static_cast<double>(acts.back()[k]) * r[k];
    return s;
  };
  objective();
  std::vector<float> dy = r, dx;
  for (int i = n - 1; i >= 0; --i) {
    dx.assign(i > 0 ? m->output_floats(i - 1) * B : 0, 0.0f);
    m->layer(i).backward(B, input(i), acts[static_cast<std::size_t>(i)].data(), dy.data(),
                         i > 0 ? dx.data() : nullptr, scratch.data());
    dy.swap(dx);
  }
  const float h = 1e-4f;  // small: the kinks are dense; larger h biases the quotients
  for (int p = 0; p < m->num_parametric(); ++p) {
    for (ParamTensor* t : m->params_of_range(p, p + 1)) {
      const std::size_t offset = static_cast<std::size_t>(t->data - m->param_data());
      int misses = 0;
      std::string report;
      for (std::size_t k = 0; k < 8; ++k) {
        const std::size_t i = (2 * k + 1) * t->size() / 16;
        float* v = t->data + i;
        const float keep = *v;
        *v = keep + h;
        const double lp = objective();
        *v = keep - h;
        const double lm = objective();
        *v = keep;
        const double fd = (lp - lm) / (2.0 * h), an = grad[offset + i];
        if (std::abs(an - fd) > 5e-3 + 5e-2 * std::abs(fd)) {
          ++misses;
          report += " [" + std::to_string(i) + "] " + std::to_string(an) + " vs fd " +
                    std::to_string(fd);
        }
      }
      EXPECT_LE(misses, 2) << "θ_" << p + 1 << " " << t->name << ":" << report;
    }
  }
}

// The existing FP32 trainer runs PointNet unchanged (all of its layers run on the whole batch):
// Full BP reduces the loss on a fixed batch, and every partition takes a finite step.
TEST(PointNet, Fp32TrainerStepsForEveryPartition) {
  const int B = 4, N = 16;
  const std::vector<float> x = test::random_floats(static_cast<std::size_t>(B) * N * 3, 9);
  const std::vector<std::uint8_t> labels = {3, 17, 39, 0};
  for (int c = 0; c <= 8; ++c) {
    auto m = make_pointnet(N, kernels::best_isa());
    m->init(11);
    train::Fp32TrainerOptions o;
    o.partition = c;
    o.batch_size = B;
    train::Fp32Trainer t(*m, o);
    telemetry::PhaseTimes times;
    const double first = t.step(x.data(), labels.data(), B, 1, 1e-3f, 1e-2f, times).loss;
    EXPECT_TRUE(std::isfinite(first)) << c;
    if (c != 0) continue;
    double last = first;
    for (int s = 0; s < 10; ++s)
      last = t.step(x.data(), labels.data(), B, 2 + s, 1e-3f, 1e-2f, times).loss;
    EXPECT_LT(last, first);
  }
}

}  // namespace
}  // namespace zt::nn
