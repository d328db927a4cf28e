// Poor Man's Training's int8 kernels, for both sources of ξ: ξ is balanced and regenerable from
// any offset, a probe is the saved weights plus ξ clamped to ±127, and the update is
// −Σ_q c_q ξ_q exactly for whole coefficients and unbiased (stochastic rounding) for fractions.
// The hash source's words are golden (recorded on x86-64, checked on the cross targets under
// qemu); the XORShift source is the FP32 xorshift source's sign sequence, which is tested
// against the paper's printed generator (perturb_sources_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/kernels/perturb_s8.hpp"

namespace zt::kernels {
namespace {

class SignsS8 : public ::testing::TestWithParam<SignSource> {};

TEST_P(SignsS8, BalancedAndRegeneratedFromAnyOffset) {
  constexpr std::size_t n = 100000;
  std::vector<std::int8_t> xi(n);
  signs_s8(GetParam(), 42, 0, n, xi.data());
  long sum = 0;
  for (std::int8_t v : xi) {
    ASSERT_TRUE(v == 1 || v == -1);
    sum += v;
  }
  EXPECT_LT(std::abs(static_cast<double>(sum)), 5.0 * std::sqrt(static_cast<double>(n)));  // 5σ
  std::vector<std::int8_t> part(777);
  signs_s8(GetParam(), 42, 12345, part.size(), part.data());
  for (std::size_t i = 0; i < part.size(); ++i) ASSERT_EQ(part[i], xi[12345 + i]) << i;
  std::vector<std::int8_t> other(n);
  signs_s8(GetParam(), 43, 0, n, other.data());
  EXPECT_NE(other, xi);  // another seed, another direction
}

TEST_P(SignsS8, ProbeIsTheSavedWeightsPlusXiClamped) {
  const std::vector<std::int8_t> saved = {0, 127, -127, 126, -126, 5, -5, 127, -127, 64};
  std::vector<std::int8_t> theta(saved.size(), 99), xi(saved.size());
  perturb_signs_s8(GetParam(), saved.data(), theta.data(), saved.size(), 300, 7);
  signs_s8(GetParam(), 7, 300, xi.size(), xi.data());
  for (std::size_t i = 0; i < saved.size(); ++i) {
    const int want = std::clamp(saved[i] + xi[i], -127, 127);
    EXPECT_EQ(theta[i], want) << i;
  }
}

TEST_P(SignsS8, UpdateIsTheWeightedSumOfDirections) {
  constexpr std::size_t n = 4096;
  constexpr int frac = 16;
  const std::uint64_t seeds[3] = {11, 12, 13};
  std::vector<std::vector<std::int8_t>> xi(3, std::vector<std::int8_t>(n));
  for (int q = 0; q < 3; ++q) signs_s8(GetParam(), seeds[q], 1000, n, xi[q].data());
  // Whole coefficients (2, −1, 3 steps): exact, clamped to ±127.
  const std::int32_t whole[3] = {2 << frac, -(1 << frac), 3 << frac};
  std::vector<std::int8_t> theta(n);
  for (std::size_t i = 0; i < n; ++i)
    theta[i] = static_cast<std::int8_t>(static_cast<int>(i % 255) - 127);
  const std::vector<std::int8_t> before = theta;
  update_signs_s8(GetParam(), theta.data(), n, 1000, seeds, whole, 3, frac, 99);
  for (std::size_t i = 0; i < n; ++i) {
    const int step = 2 * xi[0][i] - xi[1][i] + 3 * xi[2][i];
    ASSERT_EQ(theta[i], std::clamp(before[i] - step, -127, 127)) << i;
  }
  // A quarter step: each weight moves by 0 or ±1, by a quarter on average (stochastic rounding).
  const std::int32_t quarter[1] = {1 << (frac - 2)};
  std::vector<std::int8_t> mid(n, 0);
  update_signs_s8(GetParam(), mid.data(), n, 1000, seeds, quarter, 1, frac, 5);
  double moved = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(mid[i] == 0 || mid[i] == -xi[0][i]) << i;
    moved += mid[i] != 0 ? 1 : 0;
  }
  const double sd = std::sqrt(n * 0.25 * 0.75);
  EXPECT_NEAR(moved, 0.25 * n, 5 * sd);
}

INSTANTIATE_TEST_SUITE_P(Sources, SignsS8,
                         ::testing::Values(SignSource::kRademacher, SignSource::kXorshift),
                         [](const auto& info) {
                           return info.param == SignSource::kXorshift ? "xorshift" : "rademacher";
                         });

// The hash source's definition, recorded on x86-64: the cross builds run this under qemu, so
// the int8 probes are the same on aarch64 and armv7.
TEST(SignsS8Golden, RademacherIsArchitectureIndependent) {
  std::vector<std::int8_t> xi(64);
  std::uint64_t bits = 0;
  signs_s8(SignSource::kRademacher, 0x5eed, 4000000000u, xi.size(), xi.data());
  for (std::size_t i = 0; i < xi.size(); ++i) bits |= std::uint64_t{xi[i] < 0} << i;
  EXPECT_EQ(bits, 0xDD841B56CC5FB41CULL);
}

TEST(SignsS8Golden, XorshiftIsTheFp32XorshiftSource) {
  constexpr std::uint32_t first = 70000;
  std::vector<std::int8_t> xi(5000);
  signs_s8(SignSource::kXorshift, 0xabc, first, xi.size(), xi.data());
  for (std::size_t i = 0; i < xi.size(); ++i) {
    const float z = perturbation_ref(PerturbSource::kXorshift, 0xabc, seeds::kRademacherStream,
                                     first + i);
    ASSERT_EQ(static_cast<float>(xi[i]), z) << i;
  }
}

}  // namespace
}  // namespace zt::kernels
