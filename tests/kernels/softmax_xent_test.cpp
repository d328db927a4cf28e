// Softmax cross-entropy tests: against a naive double computation, gradient against central
// finite differences of the loss, no overflow at |logits| = 1e4, argmax counting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "zotrain/kernels/softmax_xent.hpp"

namespace zt::kernels {
namespace {

double naive_loss(int batch, int classes, const std::vector<float>& z, const std::vector<std::uint8_t>& labels,
                  std::vector<double>* grad) {
  double total = 0.0;
  if (grad) grad->assign(z.size(), 0.0);
  for (int b = 0; b < batch; ++b) {
    double sum = 0.0;
    for (int k = 0; k < classes; ++k) sum += std::exp(double(z[b * classes + k]));
    total += -std::log(std::exp(double(z[b * classes + labels[b]])) / sum);
    if (grad)
      for (int k = 0; k < classes; ++k)
        (*grad)[b * classes + k] = (std::exp(double(z[b * classes + k])) / sum - (k == labels[b])) / batch;
  }
  return total / batch;
}

void random_problem(int batch, int classes, unsigned seed, std::vector<float>& z, std::vector<std::uint8_t>& labels) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  z.resize(static_cast<std::size_t>(batch) * classes);
  for (auto& v : z) v = u(rng);
  labels.resize(batch);
  for (auto& l : labels) l = static_cast<std::uint8_t>(rng() % classes);
}

TEST(SoftmaxXentTest, MatchesNaiveDouble) {
  for (int batch : {1, 3, 32, 256}) {
    for (int classes : {1, 2, 10, 40}) {
      std::vector<float> z;
      std::vector<std::uint8_t> labels;
      random_problem(batch, classes, static_cast<unsigned>(batch * 100 + classes), z, labels);
      std::vector<float> dz(z.size() + 3, -7777.0f);
      int correct = -1;
      const float loss = softmax_xent_f32(batch, classes, z.data(), labels.data(), dz.data(), &correct);
      std::vector<double> grad;
      const double want = naive_loss(batch, classes, z, labels, &grad);
      EXPECT_NEAR(loss, want, 1e-6 * (1.0 + std::fabs(want))) << batch << "x" << classes;
      for (std::size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(dz[i], grad[i], 1e-7);
      for (int t = 0; t < 3; ++t) EXPECT_EQ(dz[z.size() + t], -7777.0f);
      EXPECT_GE(correct, 0);
      EXPECT_LE(correct, batch);
    }
  }
}

// The per-sample losses are each sample's naive loss, and their mean is the batch loss.
TEST(SoftmaxXentTest, RowsAreThePerSampleLosses) {
  const int batch = 32, classes = 10;
  std::vector<float> z;
  std::vector<std::uint8_t> labels;
  random_problem(batch, classes, 11, z, labels);
  std::vector<double> rows(batch + 1, -1.0);
  softmax_xent_rows_f32(batch, classes, z.data(), labels.data(), rows.data());
  double sum = 0;
  for (int b = 0; b < batch; ++b) {
    const std::vector<float> zb(z.begin() + b * classes, z.begin() + (b + 1) * classes);
    const std::vector<std::uint8_t> lb = {labels[b]};
    EXPECT_NEAR(rows[b], naive_loss(1, classes, zb, lb, nullptr), 1e-12) << b;
    sum += rows[b];
  }
  EXPECT_EQ(rows[batch], -1.0);
  EXPECT_NEAR(sum / batch, softmax_xent_f32(batch, classes, z.data(), labels.data(), nullptr, nullptr),
              1e-6);
}

TEST(SoftmaxXentTest, GradientMatchesCentralDifferences) {
  const int batch = 4, classes = 10;
  std::vector<float> z;
  std::vector<std::uint8_t> labels;
  random_problem(batch, classes, 7, z, labels);
  std::vector<float> dz(z.size());
  softmax_xent_f32(batch, classes, z.data(), labels.data(), dz.data(), nullptr);
  const float h = 1e-2f;
  for (std::size_t i = 0; i < z.size(); ++i) {
    auto zp = z, zm = z;
    zp[i] += h, zm[i] -= h;
    const double lp = softmax_xent_f32(batch, classes, zp.data(), labels.data(), nullptr, nullptr);
    const double lm = softmax_xent_f32(batch, classes, zm.data(), labels.data(), nullptr, nullptr);
    const double fd = (lp - lm) / (double(zp[i]) - double(zm[i]));
    EXPECT_NEAR(dz[i], fd, 2e-4) << i;
  }
}

TEST(SoftmaxXentTest, LargeLogitsDoNotOverflow) {
  const std::vector<float> z = {1e4f, -1e4f, 0.0f, 1e4f - 1.0f, -1e4f, 1e4f, 1e4f, 1e4f};
  const std::vector<std::uint8_t> labels = {1, 2};  // batch 2, 4 classes
  std::vector<float> dz(8);
  int correct = -1;
  const float loss = softmax_xent_f32(2, 4, z.data(), labels.data(), dz.data(), &correct);
  ASSERT_TRUE(std::isfinite(loss));
  // Sample 0: label logit −1e4 against max 1e4 → loss ≈ 2e4 + log(1 + e^−1). Sample 1: log 4.
  const double want = 0.5 * ((2e4 + std::log(1.0 + std::exp(-1.0))) + std::log(4.0));
  EXPECT_NEAR(loss, want, 1e-3 * want);
  for (float g : dz) EXPECT_TRUE(std::isfinite(g));
  EXPECT_NEAR(dz[0], 0.5 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(dz[1], -0.5, 1e-6);
  EXPECT_EQ(correct, 0);  // sample 1 ties: the first maximum (class 0) is not the label 2
}

TEST(SoftmaxXentTest, CountsCorrectWithFirstMaximum) {
  const std::vector<float> z = {0.1f, 0.9f, 0.0f,   // argmax 1
                                2.0f, 2.0f, 1.0f,   // tie → first maximum, class 0
                                -1.0f, -3.0f, 5.0f, // argmax 2
                                0.0f, 0.0f, 0.0f};  // all equal → class 0
  const std::vector<std::uint8_t> labels = {1, 1, 2, 0};
  int correct = -1;
  const float loss = softmax_xent_f32(4, 3, z.data(), labels.data(), nullptr, &correct);
  EXPECT_EQ(correct, 3);
  EXPECT_TRUE(std::isfinite(loss));
  // Gradient rows sum to zero.
  std::vector<float> dz(12);
  softmax_xent_f32(4, 3, z.data(), labels.data(), dz.data(), nullptr);
  for (int b = 0; b < 4; ++b) EXPECT_NEAR(dz[b * 3] + dz[b * 3 + 1] + dz[b * 3 + 2], 0.0f, 1e-7f);
}

TEST(SoftmaxXentTest, EmptyBatch) {
  int correct = -1;
  EXPECT_EQ(softmax_xent_f32(0, 10, nullptr, nullptr, nullptr, &correct), 0.0f);
  EXPECT_EQ(correct, 0);
}

}  // namespace
}  // namespace zt::kernels
