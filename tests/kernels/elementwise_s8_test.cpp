// Int8 ReLU and 2x2/2 max-pool tests: exact against naive in-test loops (ties: the first
// maximum in scan order 00, 01, 10, 11 wins), odd sizes drop the last row/column, in-place
// ReLU, guard bytes after outputs, 1 and several threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../support.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/elementwise_s8.hpp"

namespace zt::kernels {
namespace {

constexpr std::size_t kGuardTail = 13;
using test::kGuardS8;

using test::with_threads;

// Values from a small set around 0 (frequent ties and zeros), plus the int8 extremes.
std::vector<std::int8_t> inputs(std::size_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<std::int8_t> v(n);
  for (auto& x : v) {
    const auto r = rng.below(11);
    x = r == 9 ? std::int8_t{-128} : (r == 10 ? std::int8_t{127} : static_cast<std::int8_t>(r) - 4);
  }
  return v;
}

const std::size_t kSizes[] = {0, 1, 2, 7, 15, 16, 17, 31, 32, 33, 63, 65, 1000, 1025, 300007};

TEST(ReluS8, ForwardExactWithGuardsAndInPlace) {
  for (std::size_t n : kSizes) {
    const auto x = inputs(n, n + 1);
    std::vector<std::int8_t> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = x[i] > 0 ? x[i] : 0;
    for (int t : {1, 2}) {
      std::vector<std::int8_t> y(n + kGuardTail, kGuardS8);
      with_threads(t, [&] { relu_forward_s8(n, x.data(), y.data()); });
      EXPECT_TRUE(std::equal(want.begin(), want.end(), y.begin())) << "n=" << n;
      for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(y[n + g], kGuardS8) << "n=" << n;
      auto z = x;
      with_threads(t, [&] { relu_forward_s8(n, z.data(), z.data()); });
      EXPECT_EQ(z, want) << "in place n=" << n;
    }
  }
}

TEST(ReluS8, BackwardExactWithGuardsAndInPlace) {
  for (std::size_t n : kSizes) {
    const auto x = inputs(n, n + 2);
    const auto dy = inputs(n, n + 3);
    std::vector<std::int8_t> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = x[i] > 0 ? dy[i] : 0;
    for (int t : {1, 2}) {
      std::vector<std::int8_t> dx(n + kGuardTail, kGuardS8);
      with_threads(t, [&] { relu_backward_s8(n, x.data(), dy.data(), dx.data()); });
      EXPECT_TRUE(std::equal(want.begin(), want.end(), dx.begin())) << "n=" << n;
      for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(dx[n + g], kGuardS8) << "n=" << n;
      auto d = dy;
      with_threads(t, [&] { relu_backward_s8(n, x.data(), d.data(), d.data()); });
      EXPECT_EQ(d, want) << "in place n=" << n;
    }
  }
  // The forward output gives the same mask as the input.
  const auto x = inputs(999, 5), dy = inputs(999, 6);
  std::vector<std::int8_t> y(999), a(999), b(999);
  relu_forward_s8(999, x.data(), y.data());
  relu_backward_s8(999, x.data(), dy.data(), a.data());
  relu_backward_s8(999, y.data(), dy.data(), b.data());
  EXPECT_EQ(a, b);
}

struct PoolCase { int planes, h, w; };
const PoolCase kCases[] = {{1, 2, 2},  {1, 3, 3},  {3, 1, 5},   {2, 5, 1},    {0, 4, 4},
                           {2, 4, 34}, {3, 7, 33}, {5, 9, 31},  {4, 28, 28},  {1, 2, 64},
                           {7, 6, 65}, {6, 3, 17}, {192, 28, 28}, {512, 14, 15}};

// Naive: the window's argmax in scan order with strict > (first maximum wins).
int window_argmax(const std::int8_t* xp, int w, int i, int j) {
  const int idx[4] = {2 * i * w + 2 * j, 2 * i * w + 2 * j + 1, (2 * i + 1) * w + 2 * j,
                      (2 * i + 1) * w + 2 * j + 1};
  int best = idx[0];
  for (int q = 1; q < 4; ++q) {
    if (xp[idx[q]] > xp[best]) best = idx[q];
  }
  return best;
}

TEST(MaxPoolS8, ForwardExactWithGuards) {
  for (const auto& c : kCases) {
    const std::size_t in = static_cast<std::size_t>(c.planes) * c.h * c.w;
    const int oh = c.h / 2, ow = c.w / 2;
    const std::size_t out = static_cast<std::size_t>(c.planes) * oh * ow;
    const auto x = inputs(in, in + 11);
    std::vector<std::int8_t> want(out);
    for (int p = 0; p < c.planes; ++p) {
      const std::int8_t* xp = x.data() + static_cast<std::size_t>(p) * c.h * c.w;
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j)
          want[(static_cast<std::size_t>(p) * oh + i) * ow + j] = xp[window_argmax(xp, c.w, i, j)];
    }
    for (int t : {1, 2}) {
      std::vector<std::int8_t> y(out + kGuardTail, kGuardS8);
      with_threads(t, [&] { maxpool2x2_forward_s8(c.planes, c.h, c.w, x.data(), y.data()); });
      EXPECT_TRUE(std::equal(want.begin(), want.end(), y.begin()))
          << c.planes << "x" << c.h << "x" << c.w;
      for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(y[out + g], kGuardS8);
    }
  }
}

TEST(MaxPoolS8, BackwardRoutesToFirstMaximumWithGuards) {
  for (const auto& c : kCases) {
    const std::size_t in = static_cast<std::size_t>(c.planes) * c.h * c.w;
    const int oh = c.h / 2, ow = c.w / 2;
    const std::size_t out = static_cast<std::size_t>(c.planes) * oh * ow;
    const auto x = inputs(in, in + 12);
    std::vector<std::int8_t> dy(out);
    for (std::size_t i = 0; i < out; ++i) dy[i] = static_cast<std::int8_t>(1 + i % 120);
    std::vector<std::int8_t> want(in, 0);
    for (int p = 0; p < c.planes; ++p) {
      const std::size_t base = static_cast<std::size_t>(p) * c.h * c.w;
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j)
          want[base + window_argmax(x.data() + base, c.w, i, j)] =
              dy[(static_cast<std::size_t>(p) * oh + i) * ow + j];
    }
    for (int t : {1, 2}) {
      std::vector<std::int8_t> dx(in + kGuardTail, kGuardS8);  // non-zero garbage to overwrite
      std::fill(dx.begin(), dx.begin() + static_cast<std::ptrdiff_t>(in), std::int8_t{99});
      with_threads(t, [&] {
        maxpool2x2_backward_s8(c.planes, c.h, c.w, x.data(), dy.data(), dx.data());
      });
      EXPECT_TRUE(std::equal(want.begin(), want.end(), dx.begin()))
          << c.planes << "x" << c.h << "x" << c.w;
      for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(dx[in + g], kGuardS8);
    }
  }
}

TEST(MaxPoolS8, TiesHandCase) {
  // One 2x4 plane, two windows: all equal → position 00; 01 and 11 tie at the max → 01.
  const std::int8_t x[8] = {5, 5, -3, 7, 5, 5, 1, 7};
  const std::int8_t dy[2] = {10, 20};
  std::int8_t y[2], dx[8];
  maxpool2x2_forward_s8(1, 2, 4, x, y);
  EXPECT_EQ(y[0], 5);
  EXPECT_EQ(y[1], 7);
  maxpool2x2_backward_s8(1, 2, 4, x, dy, dx);
  const std::int8_t want[8] = {10, 0, 0, 20, 0, 0, 0, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(dx[i], want[i]) << "i=" << i;
}

}  // namespace
}  // namespace zt::kernels

namespace zt::kernels {
namespace {

// Max over points: against a plain loop, ties routed to the first maximal point.
TEST(MaxPoolPointsS8, ForwardAndBackwardMatchPlainLoops) {
  const int batch = 3, points = 37, channels = 19;
  SplitMix64 rng(5);
  std::vector<std::int8_t> x(static_cast<std::size_t>(batch * points * channels));
  for (auto& v : x) v = static_cast<std::int8_t>(static_cast<int>(rng.below(9)) - 4);  // many ties
  std::vector<std::int8_t> dy(static_cast<std::size_t>(batch * channels));
  for (auto& v : dy) v = static_cast<std::int8_t>(static_cast<int>(rng.below(255)) - 127);
  std::vector<std::int8_t> y(dy.size() + 8, 77), dx(x.size() + 8, 77);
  maxpool_points_forward_s8(batch, points, channels, x.data(), y.data());
  maxpool_points_backward_s8(batch, points, channels, x.data(), dy.data(), dx.data());
  for (int b = 0; b < batch; ++b)
    for (int c = 0; c < channels; ++c) {
      int best = 0;
      for (int p = 1; p < points; ++p)
        if (x[(b * points + p) * channels + c] > x[(b * points + best) * channels + c]) best = p;
      EXPECT_EQ(y[b * channels + c], x[(b * points + best) * channels + c]);
      for (int p = 0; p < points; ++p)
        EXPECT_EQ(dx[(b * points + p) * channels + c], p == best ? dy[b * channels + c] : 0);
    }
  for (int g = 0; g < 8; ++g) {  // guard bytes untouched
    EXPECT_EQ(y[dy.size() + g], 77);
    EXPECT_EQ(dx[x.size() + g], 77);
  }
}

}  // namespace
}  // namespace zt::kernels
