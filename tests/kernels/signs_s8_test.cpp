// Poor Man's Training's int8 kernels: the Rademacher ξ is balanced and regenerable from any
// offset, a probe is the saved weights plus ξ clamped to ±127, and the update is
// −Σ_q c_q ξ_q exactly for whole coefficients and unbiased (stochastic rounding) for fractions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "zotrain/kernels/perturb_s8.hpp"

namespace zt::kernels {
namespace {

TEST(SignsS8, BalancedAndRegeneratedFromAnyOffset) {
  constexpr std::size_t n = 100000;
  std::vector<std::int8_t> xi(n);
  rademacher_s8(42, 0, n, xi.data());
  long sum = 0;
  for (std::int8_t v : xi) {
    ASSERT_TRUE(v == 1 || v == -1);
    sum += v;
  }
  EXPECT_LT(std::abs(static_cast<double>(sum)), 5.0 * std::sqrt(static_cast<double>(n)));  // 5σ
  std::vector<std::int8_t> part(777);
  rademacher_s8(42, 12345, part.size(), part.data());
  for (std::size_t i = 0; i < part.size(); ++i) ASSERT_EQ(part[i], xi[12345 + i]) << i;
  std::vector<std::int8_t> other(n);
  rademacher_s8(43, 0, n, other.data());
  EXPECT_NE(other, xi);  // another seed, another direction
}

TEST(SignsS8, ProbeIsTheSavedWeightsPlusXiClamped) {
  const std::vector<std::int8_t> saved = {0, 127, -127, 126, -126, 5, -5, 127, -127, 64};
  std::vector<std::int8_t> theta(saved.size(), 99), xi(saved.size());
  perturb_signs_s8(saved.data(), theta.data(), saved.size(), 300, 7);
  rademacher_s8(7, 300, xi.size(), xi.data());
  for (std::size_t i = 0; i < saved.size(); ++i) {
    const int want = std::clamp(saved[i] + xi[i], -127, 127);
    EXPECT_EQ(theta[i], want) << i;
  }
}

TEST(SignsS8, UpdateIsTheWeightedSumOfDirections) {
  constexpr std::size_t n = 4096;
  constexpr int frac = 16;
  const std::uint64_t seeds[3] = {11, 12, 13};
  std::vector<std::vector<std::int8_t>> xi(3, std::vector<std::int8_t>(n));
  for (int q = 0; q < 3; ++q) rademacher_s8(seeds[q], 1000, n, xi[q].data());
  // Whole coefficients (2, −1, 3 steps): exact, clamped to ±127.
  const std::int32_t whole[3] = {2 << frac, -(1 << frac), 3 << frac};
  std::vector<std::int8_t> theta(n);
  for (std::size_t i = 0; i < n; ++i) theta[i] = static_cast<std::int8_t>(static_cast<int>(i % 255) - 127);
  const std::vector<std::int8_t> before = theta;
  update_signs_s8(theta.data(), n, 1000, seeds, whole, 3, frac, 99);
  for (std::size_t i = 0; i < n; ++i) {
    const int step = 2 * xi[0][i] - xi[1][i] + 3 * xi[2][i];
    ASSERT_EQ(theta[i], std::clamp(before[i] - step, -127, 127)) << i;
  }
  // A quarter step: each weight moves by 0 or ±1, by a quarter on average (stochastic rounding).
  const std::int32_t quarter[1] = {1 << (frac - 2)};
  std::vector<std::int8_t> mid(n, 0);
  update_signs_s8(mid.data(), n, 1000, seeds, quarter, 1, frac, 5);
  double moved = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(mid[i] == 0 || mid[i] == -xi[0][i]) << i;
    moved += mid[i] != 0 ? 1 : 0;
  }
  const double sd = std::sqrt(n * 0.25 * 0.75);
  EXPECT_NEAR(moved, 0.25 * n, 5 * sd);
}

}  // namespace
}  // namespace zt::kernels
