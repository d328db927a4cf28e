// ReLU tests: elementwise, so every path must be bit-exact against relu_*_ref (compared as
// bits, so −0.0 and NaN are checked too), including in place and past the threading threshold.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "zotrain/kernels/relu.hpp"
#include "../support.hpp"

namespace zt::kernels {
namespace {

using test::kGuard;
constexpr std::size_t kGuardTail = 17;

std::vector<float> inputs(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (i % 11) {
      case 3: v[i] = -0.0f; break;
      case 5: v[i] = 0.0f; break;
      case 7: v[i] = NAN; break;
      case 9: v[i] = -INFINITY; break;
      default: v[i] = u(rng);
    }
  }
  return v;
}

using test::same_bits;

using ReluF32Test = test::IsaTest;

const std::size_t kSizes[] = {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 1000, 100003};

TEST_P(ReluF32Test, SelectsTheRequestedPath) {
  if (GetParam() == Isa::kPortable) {
    EXPECT_EQ(select_relu_forward_f32(Isa::kPortable), &relu_forward_f32_portable);
    EXPECT_EQ(select_relu_backward_f32(Isa::kPortable), &relu_backward_f32_portable);
  }
  if (GetParam() == Isa::kReference) { EXPECT_EQ(select_relu_forward_f32(Isa::kReference), &relu_forward_f32_ref); }
#if defined(ZT_HAVE_NEON)
  if (GetParam() == Isa::kNeon || GetParam() == Isa::kNeonDot) {
    EXPECT_EQ(select_relu_forward_f32(GetParam()), &relu_forward_f32_neon);
    EXPECT_EQ(select_relu_backward_f32(GetParam()), &relu_backward_f32_neon);
  }
#endif
}

TEST_P(ReluF32Test, ForwardBitExactWithGuards) {
  const auto fwd = select_relu_forward_f32(GetParam());
  for (std::size_t n : kSizes) {
    const auto x = inputs(n, static_cast<unsigned>(n));
    std::vector<float> y(n + kGuardTail, kGuard), want(n);
    fwd(n, x.data(), y.data());
    relu_forward_f32_ref(n, x.data(), want.data());
    EXPECT_TRUE(same_bits(y.data(), want.data(), n)) << "n=" << n;
    for (std::size_t t = 0; t < kGuardTail; ++t) EXPECT_EQ(y[n + t], kGuard) << "n=" << n;
  }
}

TEST_P(ReluF32Test, ForwardMapsNegativeZeroAndNanToPositiveZero) {
  const float x[5] = {-0.0f, NAN, -1.0f, 2.5f, INFINITY};
  float y[5];
  select_relu_forward_f32(GetParam())(5, x, y);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(y[i], 0.0f);
    EXPECT_FALSE(std::signbit(y[i]));
  }
  EXPECT_EQ(y[3], 2.5f);
  EXPECT_EQ(y[4], INFINITY);
}

TEST_P(ReluF32Test, BackwardBitExactWithGuards) {
  const auto bwd = select_relu_backward_f32(GetParam());
  for (std::size_t n : kSizes) {
    const auto y = inputs(n, static_cast<unsigned>(n) + 5);
    const auto dy = inputs(n, static_cast<unsigned>(n) + 9);
    std::vector<float> dx(n + kGuardTail, kGuard), want(n);
    bwd(n, y.data(), dy.data(), dx.data());
    relu_backward_f32_ref(n, y.data(), dy.data(), want.data());
    EXPECT_TRUE(same_bits(dx.data(), want.data(), n)) << "n=" << n;
    for (std::size_t t = 0; t < kGuardTail; ++t) EXPECT_EQ(dx[n + t], kGuard) << "n=" << n;
  }
}

TEST_P(ReluF32Test, InPlace) {
  const auto fwd = select_relu_forward_f32(GetParam());
  const auto bwd = select_relu_backward_f32(GetParam());
  for (std::size_t n : kSizes) {
    auto x = inputs(n, static_cast<unsigned>(n) + 1);
    std::vector<float> want(n);
    relu_forward_f32_ref(n, x.data(), want.data());
    fwd(n, x.data(), x.data());
    EXPECT_TRUE(same_bits(x.data(), want.data(), n)) << "n=" << n;
    auto dy = inputs(n, static_cast<unsigned>(n) + 2);
    std::vector<float> dwant(n);
    relu_backward_f32_ref(n, x.data(), dy.data(), dwant.data());
    bwd(n, x.data(), dy.data(), dy.data());
    EXPECT_TRUE(same_bits(dy.data(), dwant.data(), n)) << "n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(ReluF32, ReluF32Test,
                         ::testing::ValuesIn(kAllIsas), test::isa_test_name);

}  // namespace
}  // namespace zt::kernels
