// Each layer's backward against central finite differences of L = Σ y ⊙ r (so dy = r),
// for both kernel paths. Points within a kink (ReLU at 0, max-pool ties) are avoided by
// construction: inputs are drawn away from 0 and distinct. BatchNorm is checked in training mode
// (through the batch statistics) and in evaluation mode.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "zotrain/core/rng.hpp"
#include "zotrain/nn/activation.hpp"
#include "zotrain/nn/batchnorm.hpp"
#include "zotrain/nn/conv2d.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/nn/linear.hpp"
#include "../support.hpp"

namespace zt::nn {
namespace {

using kernels::Isa;

std::vector<float> random_vec(std::size_t n, std::uint64_t seed, float lo = -1, float hi = 1) {
  std::vector<float> v = test::random_floats(n, seed, lo, hi);
  for (auto& x : v)
    if (std::abs(x) < 0.05f) x = x < 0 ? -0.05f : 0.05f;  // stay off the ReLU kink
  return v;
}

// Checks dx and every parameter gradient of `layer` (already shape-inferred for `in`).
void check_layer(Layer& layer, const Shape& in, int batch) {
  const Shape out = layer.infer(in);
  const std::size_t nx = in.numel() * batch, ny = out.numel() * batch;
  std::vector<float> x = random_vec(nx, 11), r = random_vec(ny, 12);
  const std::string kind = layer.kind();
  if (kind == "maxpool2x2" || kind == "maxpool_points") {
    // Distinct values 0.05 apart (a seeded permutation), so no window has a near-tie within h.
    SplitMix64 g(21);
    for (std::size_t i = 0; i < nx; ++i) x[i] = 0.05f * static_cast<float>(i) - 0.025f * nx;
    for (std::size_t i = nx; i > 1; --i) std::swap(x[i - 1], x[g.below(i)]);
  }
  std::vector<std::vector<float>> storage, grads;
  for (ParamTensor* p : layer.params()) {
    storage.push_back(random_vec(p->size(), 13 + storage.size(), -0.5f, 0.5f));
    grads.emplace_back(p->size(), 0.0f);
    p->data = storage.back().data();
    p->grad = grads.back().data();
  }
  // Running statistics (BatchNorm): mean in ±0.5, variance in [0.5, 2).
  std::vector<std::vector<float>> buffers;
  for (ParamTensor* b : layer.buffers()) {
    const bool var = b->name.ends_with("running_var");
    buffers.push_back(test::random_floats(b->size(), 31 + buffers.size(), var ? 0.5f : -0.5f,
                                          var ? 2.0f : 0.5f));
    b->data = buffers.back().data();
  }
  std::vector<float> scratch(std::max<std::size_t>(layer.scratch_floats(batch), 1));
  std::vector<float> y(ny), dx(nx);
  auto objective = [&]() {
    layer.forward(batch, x.data(), y.data(), scratch.data());
    double s = 0;
    for (std::size_t i = 0; i < ny; ++i) s += static_cast<double>(y[i]) * r[i];
    return s;
  };
  objective();
  layer.backward(batch, x.data(), y.data(), r.data(), dx.data(), scratch.data());

  auto fd_check = [&](float* v, std::size_t n, const float* analytic, const char* what) {
    const float h = 1e-2f;
    const std::size_t stride = std::max<std::size_t>(1, n / 97);  // ~100 probes per tensor
    for (std::size_t i = 0; i < n; i += stride) {
      const float keep = v[i];
      v[i] = keep + h;
      const double lp = objective();
      v[i] = keep - h;
      const double lm = objective();
      v[i] = keep;
      const double fd = (lp - lm) / (2.0 * h);
      EXPECT_NEAR(analytic[i], fd, 2e-3 + 2e-3 * std::abs(fd))
          << layer.name() << " " << what << "[" << i << "]";
    }
  };
  fd_check(x.data(), nx, dx.data(), "dx");
  auto ps = layer.params();
  for (std::size_t k = 0; k < ps.size(); ++k)
    fd_check(storage[k].data(), ps[k]->size(), grads[k].data(), ps[k]->name.c_str());
}

class LayerGradTest : public ::testing::TestWithParam<Isa> {};

TEST_P(LayerGradTest, Conv2dPadded) {
  Conv2d l("conv", 3, 4, 5, 2, GetParam());
  check_layer(l, Shape{{3, 9, 7}}, 2);
}
TEST_P(LayerGradTest, Conv2dUnpadded) {
  Conv2d l("conv", 2, 3, 3, 0, GetParam());
  check_layer(l, Shape{{2, 6, 5}}, 3);
}
TEST_P(LayerGradTest, Linear) {
  Linear l("fc", 37, 11, GetParam());
  check_layer(l, Shape{{37}}, 5);
}
TEST_P(LayerGradTest, LinearFromImage) {  // flatten is a view
  Linear l("fc", 2 * 3 * 3, 4, GetParam());
  check_layer(l, Shape{{2, 3, 3}}, 2);
}
TEST_P(LayerGradTest, Relu) {
  Relu l("relu", GetParam());
  check_layer(l, Shape{{3, 5, 5}}, 2);
}
TEST_P(LayerGradTest, MaxPool) {
  MaxPool2x2 l("pool", GetParam());
  check_layer(l, Shape{{2, 6, 8}}, 2);
}

TEST_P(LayerGradTest, PointLinearNoBias) {
  PointLinear l("mlp", 5, 7, false, GetParam());
  check_layer(l, Shape{{6, 5}}, 3);
  EXPECT_EQ(l.params().size(), 1u);
}
TEST_P(LayerGradTest, PointLinearWithBias) {
  PointLinear l("mlp", 3, 4, true, GetParam());
  check_layer(l, Shape{{5, 3}}, 2);
  EXPECT_EQ(l.params().size(), 2u);
}
TEST_P(LayerGradTest, BatchNormTrainingPoints) {
  BatchNorm l("mlp.bn", 5);
  check_layer(l, Shape{{7, 5}}, 3);
}
TEST_P(LayerGradTest, BatchNormTrainingVector) {  // [C]: statistics over the batch only
  BatchNorm l("fc.bn", 6);
  check_layer(l, Shape{{6}}, 9);
}
TEST_P(LayerGradTest, BatchNormEval) {
  BatchNorm l("mlp.bn", 4);
  l.set_training(false);
  check_layer(l, Shape{{5, 4}}, 2);
}
TEST_P(LayerGradTest, ReluOnPoints) {
  Relu l("relu", GetParam());
  check_layer(l, Shape{{9, 5}}, 3);
}
TEST_P(LayerGradTest, MaxPoolPoints) {
  MaxPoolPoints l("pool");
  check_layer(l, Shape{{9, 6}}, 3);
}

INSTANTIATE_TEST_SUITE_P(Paths, LayerGradTest, ::testing::Values(Isa::kReference, Isa::kPortable),
                         [](const auto& info) { return std::string(kernels::isa_name(info.param)); });

TEST(LeNet5, ShapesAndParameterCounts) {
  auto m = make_lenet5(kernels::best_isa());
  EXPECT_EQ(m->num_params(), 107786u);  // docs/design.md §2
  EXPECT_EQ(m->num_parametric(), 5);
  EXPECT_EQ(m->output_shape(m->size() - 1), (Shape{{10}}));
  // Per-parametric-layer counts come from the layer shapes.
  const std::size_t expect[5] = {156, 2416, 94200, 10164, 850};
  for (int p = 0; p < 5; ++p) EXPECT_EQ(m->num_params_of_range(p, p + 1), expect[p]) << p;
  // ZO parameter counts of the named settings (docs/design.md §3).
  EXPECT_EQ(m->num_params_of_range(0, 3), 96772u);   // ZO-Feat-Cls1, C = L−2
  EXPECT_EQ(m->num_params_of_range(0, 4), 106936u);  // ZO-Feat-Cls2, C = L−1
  // 18,058 activation elements per sample (docs/design.md §7).
  std::size_t acts = 0;
  for (const auto& f : m->describe().footprint()) acts += f.out_per_sample;
  EXPECT_EQ(acts, 18058u);
}

TEST(LeNet5, InitIsDeterministicAndPyTorchScaled) {
  auto a = make_lenet5(kernels::best_isa()), b = make_lenet5(kernels::best_isa());
  a->init(7);
  b->init(7);
  for (std::size_t i = 0; i < a->num_params(); ++i) ASSERT_EQ(a->param_data()[i], b->param_data()[i]);
  // fc1 weights are U(−1/√784, 1/√784): max |w| close to the bound, never above.
  auto* w = a->params_of_range(2, 3)[0];
  float mx = 0;
  for (std::size_t i = 0; i < w->size(); ++i) mx = std::max(mx, std::abs(w->data[i]));
  EXPECT_LE(mx, 1.0f / 28.0f);
  EXPECT_GT(mx, 0.99f / 28.0f);
}

}  // namespace
}  // namespace zt::nn
