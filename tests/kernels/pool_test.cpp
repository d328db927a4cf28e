// Max-pool 2x2/2 tests: elementwise selection, so every path is bit-exact against the
// reference (first maximum wins ties, NaN never wins), odd sizes drop the last row/column.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "zotrain/kernels/pool.hpp"
#include "../support.hpp"

namespace zt::kernels {
namespace {

using test::kGuard;
constexpr std::size_t kGuardTail = 13;

// Values drawn from a small set so ties are frequent, plus −0/+0 and NaN.
std::vector<float> inputs(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-3, 3);
  std::vector<float> v(n);
  for (auto& x : v) {
    const int r = u(rng);
    x = r == 0 ? ((rng() & 1) ? -0.0f : 0.0f) : static_cast<float>(r) * 0.5f;
    if (rng() % 29 == 0) x = NAN;
  }
  return v;
}

using test::same_bits;

const test::PoolCase kCases[] = {{1, 2, 2}, {1, 3, 3}, {3, 1, 5}, {2, 5, 1}, {0, 4, 4},  {2, 4, 34},
                           {3, 7, 33}, {5, 9, 31}, {4, 28, 28}, {192, 28, 28}, {512, 14, 14}, {7, 6, 65},
                           {2, 4, 8},  {3, 2, 9},  {2, 3, 17}};  // output rows of 4, 4 + tail

using MaxPoolF32Test = test::IsaTest;

TEST_P(MaxPoolF32Test, SelectsTheRequestedPath) {
  if (GetParam() == Isa::kPortable) {
    EXPECT_EQ(select_maxpool2x2_forward_f32(Isa::kPortable), &maxpool2x2_forward_f32_portable);
    EXPECT_EQ(select_maxpool2x2_backward_f32(Isa::kPortable), &maxpool2x2_backward_f32_portable);
  }
#if defined(ZT_HAVE_NEON)
  if (GetParam() == Isa::kNeon || GetParam() == Isa::kNeonDot) {
    EXPECT_EQ(select_maxpool2x2_forward_f32(GetParam()), &maxpool2x2_forward_f32_neon);
    EXPECT_EQ(select_maxpool2x2_backward_f32(GetParam()), &maxpool2x2_backward_f32_neon);
  }
#endif
}

TEST_P(MaxPoolF32Test, ForwardBitExactWithGuards) {
  const auto fwd = select_maxpool2x2_forward_f32(GetParam());
  for (const auto& c : kCases) {
    const std::size_t in = c.in_size(), out = c.out_size();
    const auto x = inputs(in, static_cast<unsigned>(in + 1));
    std::vector<float> y(out + kGuardTail, kGuard), want(out);
    fwd(c.planes, c.h, c.w, x.data(), y.data());
    maxpool2x2_forward_f32_ref(c.planes, c.h, c.w, x.data(), want.data());
    EXPECT_TRUE(same_bits(y.data(), want.data(), out)) << c.planes << "x" << c.h << "x" << c.w;
    for (std::size_t t = 0; t < kGuardTail; ++t) EXPECT_EQ(y[out + t], kGuard);
  }
}

TEST_P(MaxPoolF32Test, BackwardBitExactWithGuards) {
  const auto bwd = select_maxpool2x2_backward_f32(GetParam());
  for (const auto& c : kCases) {
    const std::size_t in = c.in_size(), out = c.out_size();
    const auto x = inputs(in, static_cast<unsigned>(in + 2));
    std::vector<float> dy(out);
    for (std::size_t i = 0; i < out; ++i) dy[i] = 1.0f + static_cast<float>(i % 97);
    std::vector<float> dx(in + kGuardTail, kGuard), want(in, 123.0f);
    bwd(c.planes, c.h, c.w, x.data(), dy.data(), dx.data());
    maxpool2x2_backward_f32_ref(c.planes, c.h, c.w, x.data(), dy.data(), want.data());
    EXPECT_TRUE(same_bits(dx.data(), want.data(), in)) << c.planes << "x" << c.h << "x" << c.w;
    for (std::size_t t = 0; t < kGuardTail; ++t) EXPECT_EQ(dx[in + t], kGuard);
  }
}

TEST_P(MaxPoolF32Test, TiesNanAndSignedZero) {
  // One 2x4 plane → two windows: {−0, +0 / 1, 1} and {1, NaN / NaN, 0.5}.
  const float x[8] = {-0.0f, 0.0f, 1.0f, NAN, 1.0f, 1.0f, NAN, 0.5f};
  float y[2];
  select_maxpool2x2_forward_f32(GetParam())(1, 2, 4, x, y);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.0f);
  const float dy[2] = {5.0f, 7.0f};
  float dx[8];
  select_maxpool2x2_backward_f32(GetParam())(1, 2, 4, x, dy, dx);
  const float want[8] = {0, 0, 7, 0, 5, 0, 0, 0};  // first maximum of each window
  for (int i = 0; i < 8; ++i) EXPECT_EQ(dx[i], want[i]) << i;
  // A NaN in the first position is never replaced (nothing compares greater than it).
  const float nan_first[4] = {NAN, 3.0f, 3.0f, 3.0f};
  float yn;
  select_maxpool2x2_forward_f32(GetParam())(1, 2, 2, nan_first, &yn);
  EXPECT_TRUE(std::isnan(yn));
  // Signed zeros: the first of equal values wins, so −0 stays −0.
  const float zeros[4] = {-0.0f, 0.0f, 0.0f, 0.0f};
  float yz;
  select_maxpool2x2_forward_f32(GetParam())(1, 2, 2, zeros, &yz);
  EXPECT_TRUE(std::signbit(yz));
}

#ifdef ZT_OPENMP
TEST_P(MaxPoolF32Test, BitIdenticalForAnyThreadCount) {
  const int planes = 512, h = 14, w = 14;
  const auto x = inputs(static_cast<std::size_t>(planes) * h * w, 3);
  std::vector<float> dy(static_cast<std::size_t>(planes) * 49, 1.5f);
  std::vector<float> y1(dy.size()), dx1(x.size());
  test::for_thread_counts({1, 2, 3}, [&](int threads) {
    std::vector<float> y(dy.size()), dx(x.size());
    select_maxpool2x2_forward_f32(GetParam())(planes, h, w, x.data(), y.data());
    select_maxpool2x2_backward_f32(GetParam())(planes, h, w, x.data(), dy.data(), dx.data());
    if (threads == 1) {
      y1 = y, dx1 = dx;
    } else {
      EXPECT_TRUE(same_bits(y.data(), y1.data(), y.size()));
      EXPECT_TRUE(same_bits(dx.data(), dx1.data(), dx.size()));
    }
  });
}
#endif

INSTANTIATE_TEST_SUITE_P(MaxPoolF32, MaxPoolF32Test,
                         ::testing::ValuesIn(kAllIsas), test::isa_test_name);

}  // namespace
}  // namespace zt::kernels
