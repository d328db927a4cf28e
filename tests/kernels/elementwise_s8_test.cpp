// Int8 ReLU, 2x2/2 max-pool and max over points, every path (the plain functions and NEON):
// exact against naive in-test loops (ties: the first maximum in scan order 00, 01, 10, 11 wins),
// odd sizes drop the last row/column, in-place ReLU, guard bytes after outputs, 1 to 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
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

using ElementwiseS8Test = test::IsaTest;

TEST_P(ElementwiseS8Test, SelectsTheRequestedPath) {
  const Isa isa = GetParam();
  if (isa != Isa::kNeon && isa != Isa::kNeonDot) {  // no path of its own: the plain function
    EXPECT_EQ(select_relu_forward_s8(isa), &relu_forward_s8);
    EXPECT_EQ(select_relu_backward_s8(isa), &relu_backward_s8);
    EXPECT_EQ(select_maxpool2x2_forward_s8(isa), &maxpool2x2_forward_s8);
    EXPECT_EQ(select_maxpool2x2_backward_s8(isa), &maxpool2x2_backward_s8);
    EXPECT_EQ(select_maxpool_points_forward_s8(isa), &maxpool_points_forward_s8);
    EXPECT_EQ(select_maxpool_points_backward_s8(isa), &maxpool_points_backward_s8);
  } else {  // available: built with NEON
#ifdef ZT_HAVE_NEON
    EXPECT_EQ(select_relu_forward_s8(isa), &relu_forward_s8_neon);
    EXPECT_EQ(select_relu_backward_s8(isa), &relu_backward_s8_neon);
    EXPECT_EQ(select_maxpool2x2_forward_s8(isa), &maxpool2x2_forward_s8_neon);
    EXPECT_EQ(select_maxpool2x2_backward_s8(isa), &maxpool2x2_backward_s8_neon);
    EXPECT_EQ(select_maxpool_points_forward_s8(isa), &maxpool_points_forward_s8_neon);
    EXPECT_EQ(select_maxpool_points_backward_s8(isa), &maxpool_points_backward_s8_neon);
#else
    ADD_FAILURE() << "NEON available without NEON kernels";
#endif
  }
}

const std::size_t kSizes[] = {0, 1, 2, 7, 15, 16, 17, 31, 32, 33, 63, 65, 1000, 1025, 300007};

TEST_P(ElementwiseS8Test, ReluForwardExactWithGuardsAndInPlace) {
  const auto relu_forward = select_relu_forward_s8(GetParam());
  for (std::size_t n : kSizes) {
    const auto x = inputs(n, n + 1);
    std::vector<std::int8_t> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = x[i] > 0 ? x[i] : 0;
    for (int t : {1, 2, 3}) {
      std::vector<std::int8_t> y(n + kGuardTail, kGuardS8);
      with_threads(t, [&] { relu_forward(n, x.data(), y.data()); });
      EXPECT_TRUE(std::equal(want.begin(), want.end(), y.begin())) << "n=" << n;
      for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(y[n + g], kGuardS8) << "n=" << n;
      auto z = x;
      with_threads(t, [&] { relu_forward(n, z.data(), z.data()); });
      EXPECT_EQ(z, want) << "in place n=" << n;
    }
  }
}

TEST_P(ElementwiseS8Test, ReluBackwardExactWithGuardsAndInPlace) {
  const auto relu_forward = select_relu_forward_s8(GetParam());
  const auto relu_backward = select_relu_backward_s8(GetParam());
  for (std::size_t n : kSizes) {
    const auto x = inputs(n, n + 2);
    const auto dy = inputs(n, n + 3);
    std::vector<std::int8_t> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = x[i] > 0 ? dy[i] : 0;
    for (int t : {1, 2, 3}) {
      std::vector<std::int8_t> dx(n + kGuardTail, kGuardS8);
      with_threads(t, [&] { relu_backward(n, x.data(), dy.data(), dx.data()); });
      EXPECT_TRUE(std::equal(want.begin(), want.end(), dx.begin())) << "n=" << n;
      for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(dx[n + g], kGuardS8) << "n=" << n;
      auto d = dy;
      with_threads(t, [&] { relu_backward(n, x.data(), d.data(), d.data()); });
      EXPECT_EQ(d, want) << "in place n=" << n;
    }
  }
  // The forward output gives the same mask as the input.
  const auto x = inputs(999, 5), dy = inputs(999, 6);
  std::vector<std::int8_t> y(999), a(999), b(999);
  relu_forward(999, x.data(), y.data());
  relu_backward(999, x.data(), dy.data(), a.data());
  relu_backward(999, y.data(), dy.data(), b.data());
  EXPECT_EQ(a, b);
}

const test::PoolCase kCases[] = {{1, 2, 2},  {1, 3, 3},  {3, 1, 5},   {2, 5, 1},    {0, 4, 4},
                           {2, 4, 34}, {3, 7, 33}, {5, 9, 31},  {4, 28, 28},  {1, 2, 64},
                           {7, 6, 65}, {6, 3, 17}, {192, 28, 28}, {512, 14, 15},
                           {16, 10, 10}, {2, 9, 8}, {2, 4, 18}, {3, 2, 46},  // ow 5, 4, 9, 23: 8-wide groups
                           {2, 12, 12}, {3, 14, 15}};  // ow 6, 7: rows in pairs, then one, then the last

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

TEST_P(ElementwiseS8Test, MaxPoolForwardExactWithGuards) {
  const auto pool_forward = select_maxpool2x2_forward_s8(GetParam());
  for (const auto& c : kCases) {
    const std::size_t in = c.in_size(), out = c.out_size();
    const int oh = c.out_h(), ow = c.out_w();
    const auto x = inputs(in, in + 11);
    std::vector<std::int8_t> want(out);
    for (int p = 0; p < c.planes; ++p) {
      const std::int8_t* xp = x.data() + static_cast<std::size_t>(p) * c.h * c.w;
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j)
          want[(static_cast<std::size_t>(p) * oh + i) * ow + j] = xp[window_argmax(xp, c.w, i, j)];
    }
    for (int t : {1, 2, 3}) {
      std::vector<std::int8_t> y(out + kGuardTail, kGuardS8);
      with_threads(t, [&] { pool_forward(c.planes, c.h, c.w, x.data(), y.data()); });
      EXPECT_TRUE(std::equal(want.begin(), want.end(), y.begin()))
          << c.planes << "x" << c.h << "x" << c.w;
      for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(y[out + g], kGuardS8);
    }
  }
}

TEST_P(ElementwiseS8Test, MaxPoolBackwardRoutesToFirstMaximumWithGuards) {
  const auto pool_backward = select_maxpool2x2_backward_s8(GetParam());
  for (const auto& c : kCases) {
    const std::size_t in = c.in_size(), out = c.out_size();
    const int oh = c.out_h(), ow = c.out_w();
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
    for (int t : {1, 2, 3}) {
      std::vector<std::int8_t> dx(in + kGuardTail, kGuardS8);  // non-zero garbage to overwrite
      std::fill(dx.begin(), dx.begin() + static_cast<std::ptrdiff_t>(in), std::int8_t{99});
      with_threads(t, [&] {
        pool_backward(c.planes, c.h, c.w, x.data(), dy.data(), dx.data());
      });
      EXPECT_TRUE(std::equal(want.begin(), want.end(), dx.begin()))
          << c.planes << "x" << c.h << "x" << c.w;
      for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(dx[in + g], kGuardS8);
    }
  }
}

TEST_P(ElementwiseS8Test, MaxPoolTiesHandCase) {
  const auto pool_forward = select_maxpool2x2_forward_s8(GetParam());
  const auto pool_backward = select_maxpool2x2_backward_s8(GetParam());
  // One 2x4 plane, two windows: all equal → position 00; 01 and 11 tie at the max → 01.
  const std::int8_t x[8] = {5, 5, -3, 7, 5, 5, 1, 7};
  const std::int8_t dy[2] = {10, 20};
  std::int8_t y[2], dx[8];
  pool_forward(1, 2, 4, x, y);
  EXPECT_EQ(y[0], 5);
  EXPECT_EQ(y[1], 7);
  pool_backward(1, 2, 4, x, dy, dx);
  const std::int8_t want[8] = {10, 0, 0, 20, 0, 0, 0, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(dx[i], want[i]) << "i=" << i;
}


// Max over points: against a plain loop, ties routed to the first maximal point; channel counts
// around the 16-byte vectors, extremes (−128 everywhere), guard bytes.
TEST_P(ElementwiseS8Test, MaxPoolPointsForwardAndBackwardMatchPlainLoops) {
  const auto points_forward = select_maxpool_points_forward_s8(GetParam());
  const auto points_backward = select_maxpool_points_backward_s8(GetParam());
  struct Case { int batch, points, channels; };
  const Case cases[] = {{3, 37, 19}, {1, 1, 16}, {2, 2, 1}, {2, 5, 0}, {0, 4, 4},  {2, 300, 15},
                        {1, 7, 17},  {4, 64, 33}, {2, 3, 64}, {1, 1024, 40}, {3, 9, 31}};
  std::uint64_t seed = 5;
  for (const Case& k : cases) {
    for (int fill : {0, -128}) {
      const int batch = k.batch, points = k.points, channels = k.channels;
      SplitMix64 rng(seed++);
      std::vector<std::int8_t> x(static_cast<std::size_t>(batch * points * channels));
      for (auto& v : x) v = fill != 0 ? std::int8_t{-128} : static_cast<std::int8_t>(static_cast<int>(rng.below(9)) - 4);
      std::vector<std::int8_t> dy(static_cast<std::size_t>(batch * channels));
      for (auto& v : dy) v = static_cast<std::int8_t>(static_cast<int>(rng.below(255)) - 127);
      std::vector<std::int8_t> y(dy.size() + kGuardTail, kGuardS8), dx(x.size() + kGuardTail, kGuardS8);
      std::fill_n(dx.begin(), x.size(), std::int8_t{99});  // garbage to overwrite
      points_forward(batch, points, channels, x.data(), y.data());
      points_backward(batch, points, channels, x.data(), dy.data(), dx.data());
      const std::string what = std::to_string(batch) + "x" + std::to_string(points) + "x" + std::to_string(channels);
      for (int b = 0; b < batch; ++b)
        for (int c = 0; c < channels; ++c) {
          int best = 0;
          for (int p = 1; p < points; ++p)
            if (x[(b * points + p) * channels + c] > x[(b * points + best) * channels + c]) best = p;
          ASSERT_EQ(y[b * channels + c], x[(b * points + best) * channels + c]) << what;
          for (int p = 0; p < points; ++p)
            ASSERT_EQ(dx[(b * points + p) * channels + c], p == best ? dy[b * channels + c] : 0) << what << " p=" << p;
        }
      for (std::size_t g = 0; g < kGuardTail; ++g) {  // guard bytes untouched
        ASSERT_EQ(y[dy.size() + g], kGuardS8) << what;
        ASSERT_EQ(dx[x.size() + g], kGuardS8) << what;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ElementwiseS8, ElementwiseS8Test, ::testing::ValuesIn(kAllIsas),
                         [](const auto& info) { return test::param_name(isa_name(info.param)); });

}  // namespace
}  // namespace zt::kernels
