// int8 convolution products (conv2d_s8.hpp). Integer results are exact: the reference, every
// optimised path (each runs one micro-kernel: portable, avx512-vnni, avx2, neon, neon-dot; SKIP where
// the CPU lacks it) and every algorithm they pick (channel or row/column quads
// for the forward and input-gradient correlations; lane or vector-dot weight gradient), and any
// thread count must agree bit for bit. The reference is checked against naive loops written as
// scatters over a zero-padded input. Guard values after every output and after the scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../../src/kernels/linear_s8/gemm_s8_internal.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/conv2d_s8.hpp"
#include "../support.hpp"
#include "s8_product_test_support.hpp"

namespace zt::kernels {
namespace {

using namespace s8_test;

constexpr GuardedS32 kGuards{11};
constexpr unsigned char kScratchGuard = 0xA5;

std::string describe(const Conv2dShape& s) {
  return "B" + std::to_string(s.batch) + " C" + std::to_string(s.in_c) + " " + std::to_string(s.in_h) + "x" +
         std::to_string(s.in_w) + " O" + std::to_string(s.out_c) + " k" + std::to_string(s.kernel) + " p" +
         std::to_string(s.pad);
}

struct Sizes {
  std::size_t x, w, y;
};
Sizes sizes_of(const Conv2dShape& s) {
  return {std::size_t(s.batch) * s.in_c * s.in_h * s.in_w, std::size_t(s.out_c) * s.in_c * s.kernel * s.kernel,
          std::size_t(s.batch) * s.out_c * s.out_h() * s.out_w()};
}

// ---- naive loops: scatter every product from a zero-padded copy of x, int64 sums ----------------

struct Naive {
  std::vector<std::int32_t> y, dx, g;
};

Naive naive(const Conv2dShape& s, const std::vector<std::int8_t>& x, const std::vector<std::int8_t>& w,
            const std::vector<std::int8_t>& e) {
  const int k = s.kernel, oh = s.out_h(), ow = s.out_w(), hp = s.in_h + 2 * s.pad, wp = s.in_w + 2 * s.pad;
  const Sizes n = sizes_of(s);
  std::vector<std::int64_t> y(n.y, 0), dxp(std::size_t(s.batch) * s.in_c * hp * wp, 0), g(n.w, 0);
  std::vector<std::int32_t> xp(std::size_t(s.batch) * s.in_c * hp * wp, 0);
  for (int b = 0; b < s.batch; ++b)
    for (int c = 0; c < s.in_c; ++c)
      for (int h = 0; h < s.in_h; ++h)
        for (int w_ = 0; w_ < s.in_w; ++w_)
          xp[((std::size_t(b) * s.in_c + c) * hp + h + s.pad) * wp + w_ + s.pad] =
              x[((std::size_t(b) * s.in_c + c) * s.in_h + h) * s.in_w + w_];
  for (int b = 0; b < s.batch; ++b)
    for (int o = 0; o < s.out_c; ++o)
      for (int c = 0; c < s.in_c; ++c)
        for (int i = 0; i < k; ++i)
          for (int j = 0; j < k; ++j) {
            const std::int64_t wv = w[((std::size_t(o) * s.in_c + c) * k + i) * k + j];
            for (int r = 0; r < oh; ++r)
              for (int q = 0; q < ow; ++q) {
                const std::size_t yi = ((std::size_t(b) * s.out_c + o) * oh + r) * ow + q;
                const std::size_t pi = ((std::size_t(b) * s.in_c + c) * hp + r + i) * wp + q + j;
                y[yi] += wv * xp[pi];
                dxp[pi] += wv * e[yi];
                g[((std::size_t(o) * s.in_c + c) * k + i) * k + j] += std::int64_t{e[yi]} * xp[pi];
              }
          }
  Naive out;
  out.y.resize(n.y);
  for (std::size_t i = 0; i < n.y; ++i) out.y[i] = static_cast<std::int32_t>(y[i]);
  out.dx.resize(n.x);
  for (int b = 0; b < s.batch; ++b)
    for (int c = 0; c < s.in_c; ++c)
      for (int h = 0; h < s.in_h; ++h)
        for (int w_ = 0; w_ < s.in_w; ++w_)
          out.dx[((std::size_t(b) * s.in_c + c) * s.in_h + h) * s.in_w + w_] =
              static_cast<std::int32_t>(dxp[((std::size_t(b) * s.in_c + c) * hp + h + s.pad) * wp + w_ + s.pad]);
  out.g.resize(n.w);
  for (std::size_t i = 0; i < n.w; ++i) out.g[i] = static_cast<std::int32_t>(std::clamp<std::int64_t>(g[i], INT32_MIN, INT32_MAX));
  return out;
}

// ---- the three products behind one interface ----------------------------------------------------

using ConvFn = std::function<void(const Conv2dShape&, const std::int8_t*, const std::int8_t*, std::int32_t*, void*)>;
struct Fns {
  ConvFn fwd, dx, dw;  // dw takes (s, x, e, g, scratch)
};

Fns fns_of(Isa isa) {
  return {select_conv2d_forward_s8(isa), select_conv2d_backward_input_s8(isa), select_conv2d_backward_weights_s8(isa)};
}

int call_threads() {
#ifdef ZT_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Runs the three products with a scratch of exactly conv2d_s8_scratch_bytes (placed `misalign`
// bytes into its buffer, guard bytes after it) and checks them against the reference.
Outputs run_and_check(const Fns& f, const Conv2dShape& s, const std::vector<std::int8_t>& x,
                      const std::vector<std::int8_t>& w, const std::vector<std::int8_t>& e, int misalign = 0) {
  const Sizes n = sizes_of(s);
  const std::size_t sn = conv2d_s8_scratch_bytes(s, call_threads());
  std::vector<unsigned char> scratch(sn + misalign + kGuards.tail, kScratchGuard);
  void* sc = scratch.data() + misalign;
  Outputs got{kGuards.make(n.y), kGuards.make(n.x), kGuards.make(n.w)};
  auto y_ref = kGuards.make(n.y), dx_ref = kGuards.make(n.x), g_ref = kGuards.make(n.w);
  f.fwd(s, x.data(), w.data(), got.y.data(), sc);
  f.dx(s, e.data(), w.data(), got.dx.data(), sc);
  f.dw(s, x.data(), e.data(), got.g.data(), sc);
  conv2d_forward_s8_ref(s, x.data(), w.data(), y_ref.data(), nullptr);
  conv2d_backward_input_s8_ref(s, e.data(), w.data(), dx_ref.data(), nullptr);
  conv2d_backward_weights_s8_ref(s, x.data(), e.data(), g_ref.data(), nullptr);
  const std::string what = describe(s);
  kGuards.expect_exact(got.y, y_ref, n.y, what + " y");
  kGuards.expect_exact(got.dx, dx_ref, n.x, what + " dx");
  kGuards.expect_exact(got.g, g_ref, n.w, what + " g");
  for (std::size_t t = 0; t < kGuards.tail; ++t)
    EXPECT_EQ(scratch[misalign + sn + t], kScratchGuard) << what << " scratch guard " << t;
  return got;
}

Outputs run_random(const Fns& f, const Conv2dShape& s, std::uint64_t seed, int misalign = 0) {
  const Sizes n = sizes_of(s);
  return run_and_check(f, s, random_s8(n.x, seed), random_s8(n.w, seed + 1), random_s8(n.y, seed + 2), misalign);
}

const Conv2dShape kShapes[] = {
    // batch, in_c, in_h, in_w, out_c, kernel, pad
    {4, 1, 28, 28, 6, 5, 2},    // LeNet conv1 (int8 trainer)
    {3, 6, 14, 14, 16, 5, 0},   // LeNet conv2 (int8 trainer)
    {3, 6, 14, 14, 16, 5, 2},   // LeNet conv2 of the FP32 model
    {1, 3, 7, 9, 4, 3, 1},      // odd spatial sizes
    {5, 2, 5, 5, 3, 3, 0},
    {9, 2, 6, 5, 5, 3, 2},      // pad > k/2
    {2, 3, 3, 3, 2, 5, 2},      // kernel larger than the input
    {4, 5, 6, 7, 17, 1, 0},     // 1x1 without padding
    {3, 4, 4, 5, 3, 1, 1},      // 1x1 with padding
    {1, 1, 1, 1, 1, 1, 0},
    {17, 3, 9, 11, 33, 3, 1},   // O over two lane vectors
    {6, 2, 13, 37, 11, 7, 3},   // k = 7
    {5, 3, 5, 17, 9, 5, 4},     // pad = k − 1
    {2, 1, 5, 5, 2, 3, 5},      // pad ≥ k
    {3, 9, 8, 8, 40, 3, 1},     // many channels both ways
    {2, 16, 10, 10, 6, 5, 4},   // input gradient of conv2 (O ↔ C)
    {2, 4, 12, 9, 20, 2, 1},    // even kernel
    {3, 7, 11, 13, 5, 4, 2},
    {2, 33, 6, 6, 3, 3, 1},     // C over 32
    {2, 1, 31, 33, 1, 5, 2},    // one channel each way
};

void shape_sweep(const Fns& f) {
  std::uint64_t seed = 10;
  for (const auto& s : kShapes) {
    run_random(f, s, seed, 0);
    run_random(f, s, seed + 7, 3);  // a scratch that is not 64-byte aligned
    seed += 20;
  }
  Conv2dShape empty{0, 2, 5, 5, 3, 3, 1};
  EXPECT_EQ(conv2d_s8_scratch_bytes(empty, 2), 0u);
  auto g = kGuards.make(std::size_t(3) * 2 * 9, 123);
  f.dw(empty, nullptr, nullptr, g.data(), nullptr);  // empty batch: g = 0
  for (std::size_t i = 0; i < 54; ++i) EXPECT_EQ(g[i], 0);
}

// Every kernel size 1..5 with padding 0..2 and odd / even widths and heights.
void kernel_pad_sweep(const Fns& f) {
  std::uint64_t seed = 7000;
  int cases = 0;
  for (int k = 1; k <= 5; ++k)
    for (int pad = 0; pad <= 2; ++pad)
      for (int w : {1, 3, 8, 15, 16, 17}) {
        const int h = 2 + (k + w) % 5;
        const Conv2dShape s{1 + (k + pad) % 3, 1 + (w + k) % 5, h, w, 1 + (k * 3 + w) % 7, k, pad};
        if (s.out_h() < 1 || s.out_w() < 1) continue;
        run_random(f, s, seed);
        seed += 3;
        ++cases;
      }
  EXPECT_GT(cases, 60);
}

void extreme_values(const Fns& f) {
  const Conv2dShape shapes[] = {{3, 1, 28, 28, 6, 5, 2}, {2, 6, 14, 14, 16, 5, 0}, {2, 5, 9, 7, 17, 3, 1}};
  for (const auto& s : shapes) {
    const Sizes n = sizes_of(s);
    for (int xv : {-127, 0, 127})
      for (int wv : {-127, 127}) {
        const std::vector<std::int8_t> x(n.x, static_cast<std::int8_t>(xv)), w(n.w, static_cast<std::int8_t>(wv)),
            e(n.y, static_cast<std::int8_t>(xv == 127 ? -127 : 127));
        run_and_check(f, s, x, w, e);
      }
  }
}

// The weight gradient sums batch × positions in int64 and saturates: 200 samples × 1024
// positions × 127·127 ≈ 3.3e9 > INT32_MAX. Two output channels take the vector-dot form,
// sixteen the lane form.
void weight_gradient_saturates(const Fns& f) {
  for (int o_n : {2, 16}) {
    const Conv2dShape s{200, 1, 32, 32, o_n, 1, 0};
    EXPECT_EQ(s8::conv_dw_uses_dot(s), o_n == 2);
    const Sizes n = sizes_of(s);
    const std::size_t plane = 32 * 32;
    std::vector<std::int8_t> x(n.x, 127), e(n.y, 0);
    const auto fill = [&](int b, int o, int v) {
      std::fill_n(e.begin() + (std::size_t(b) * o_n + o) * plane, plane, static_cast<std::int8_t>(v));
    };
    for (int b = 0; b < s.batch; ++b) fill(b, 0, 127), fill(b, 1, -127);
    std::vector<unsigned char> scratch(conv2d_s8_scratch_bytes(s, call_threads()));
    auto g = kGuards.make(n.w);
    f.dw(s, x.data(), e.data(), g.data(), scratch.data());
    EXPECT_EQ(g[0], INT32_MAX) << o_n;
    EXPECT_EQ(g[1], INT32_MIN) << o_n;
    for (std::size_t i = 2; i < n.w; ++i) EXPECT_EQ(g[i], 0) << o_n;
    kGuards.expect_intact(g, n.w);
    // Halves that cancel: the partial sums pass INT32_MAX, the total is exact.
    for (int b = 0; b < s.batch; ++b) fill(b, 0, b < s.batch / 2 ? 127 : -127);
    f.dw(s, x.data(), e.data(), g.data(), scratch.data());
    EXPECT_EQ(g[0], 0) << o_n;
    EXPECT_EQ(g[1], INT32_MIN) << o_n;
  }
}

// Batches long enough that a thread's int32 sums are moved into int64 partway (lane form: every
// ⌊65536 / (4·⌈OH·Wp/4⌉)⌋ = 73 samples; dot form: every ⌊65536 / (4·⌈OH·Wp/64⌉)⌋ = 102 samples),
// even when two threads share the batch.
void long_batches(const Fns& f) {
  const Conv2dShape lanes{160, 1, 28, 28, 16, 5, 2}, dot{230, 1, 100, 100, 2, 3, 1};
  EXPECT_FALSE(s8::conv_dw_uses_dot(lanes));
  EXPECT_TRUE(s8::conv_dw_uses_dot(dot));
  run_random(f, lanes, 123);
  run_random(f, dot, 456);
}

#ifdef ZT_OPENMP
void thread_count_independent(const Fns& f) {
  const Conv2dShape shapes[] = {{32, 1, 28, 28, 6, 5, 2}, {33, 6, 14, 14, 16, 5, 0}, {11, 3, 9, 7, 5, 3, 1},
                                {19, 5, 6, 7, 17, 1, 0}, {7, 2, 13, 37, 11, 7, 3}};
  std::uint64_t seed = 4242;
  for (const auto& s : shapes) {
    const Sizes n = sizes_of(s);
    const auto x = random_s8(n.x, seed), w = random_s8(n.w, seed + 1), e = random_s8(n.y, seed + 2);
    seed += 3;
    expect_thread_count_independent(describe(s), [&] { return run_and_check(f, s, x, w, e); });
  }
}
#endif

// ---- public paths, by ISA --------------------------------------------------------------------

using Conv2dS8Test = test::IsaPathTest<Fns, fns_of>;

TEST_P(Conv2dS8Test, SelectsTheRequestedPath) { ZT_EXPECT_S8_SELECTED(conv2d, GetParam()); }

TEST_P(Conv2dS8Test, ShapeSweep) { shape_sweep(f_); }
TEST_P(Conv2dS8Test, KernelPaddingSweep) { kernel_pad_sweep(f_); }
TEST_P(Conv2dS8Test, ExtremeValues) { extreme_values(f_); }
TEST_P(Conv2dS8Test, WeightGradientSaturates) { weight_gradient_saturates(f_); }
TEST_P(Conv2dS8Test, LongBatches) { long_batches(f_); }
#ifdef ZT_OPENMP
TEST_P(Conv2dS8Test, ThreadCountIndependent) { thread_count_independent(f_); }
#endif

INSTANTIATE_TEST_SUITE_P(Conv2dS8, Conv2dS8Test, ::testing::ValuesIn(kAllIsas),
                         [](const auto& info) { return test::param_name(isa_name(info.param)); });

// The shape lists reach every algorithm of the portable path.
TEST(Conv2dS8PathTest, SweepCoversEveryAlgorithm) {
  bool fwd_channel = false, fwd_rowcol = false, dx_channel = false, dx_rowcol = false, dw_dot = false, dw_lanes = false;
  for (const auto& s : kShapes) {
    (s8::conv_uses_channel_quads(s, false) ? fwd_channel : fwd_rowcol) = true;
    (s8::conv_uses_channel_quads(s, true) ? dx_channel : dx_rowcol) = true;
    (s8::conv_dw_uses_dot(s) ? dw_dot : dw_lanes) = true;
  }
  EXPECT_TRUE(fwd_channel && fwd_rowcol && dx_channel && dx_rowcol && dw_dot && dw_lanes);
  // The int8 LeNet-5 layers: conv1 (one input channel) on row/column quads and the dot weight
  // gradient; conv2's input gradient (16 output channels) on channel quads.
  EXPECT_FALSE(s8::conv_uses_channel_quads({256, 1, 28, 28, 6, 5, 2}, false));
  EXPECT_TRUE(s8::conv_dw_uses_dot({256, 1, 28, 28, 6, 5, 2}));
  EXPECT_TRUE(s8::conv_uses_channel_quads({256, 6, 14, 14, 16, 5, 0}, true));
  EXPECT_FALSE(s8::conv_dw_uses_dot({256, 6, 14, 14, 16, 5, 0}));
}

TEST(Conv2dS8ScratchTest, PerThreadAndModest) {
  // The scratch holds per-thread buffers: it grows with threads, not with the batch.
  const Conv2dShape c1{256, 1, 28, 28, 6, 5, 2}, c2{256, 6, 14, 14, 16, 5, 0}, c2b{32, 6, 14, 14, 16, 5, 0};
  EXPECT_EQ(conv2d_s8_scratch_bytes(c2, 2), conv2d_s8_scratch_bytes(c2b, 2));
  EXPECT_GT(conv2d_s8_scratch_bytes(c2, 4), conv2d_s8_scratch_bytes(c2, 2));
  EXPECT_LE(conv2d_s8_scratch_bytes(c1, 4), 256u << 10);
  EXPECT_LE(conv2d_s8_scratch_bytes(c2, 4), 256u << 10);
}

// ---- the reference against the naive loops -----------------------------------------------------

TEST(Conv2dS8RefTest, MatchesNaiveLoops) {
  std::uint64_t seed = 900;
  for (const auto& s : kShapes) {
    const Sizes n = sizes_of(s);
    const auto x = random_s8(n.x, seed), w = random_s8(n.w, seed + 1), e = random_s8(n.y, seed + 2, -128, 127);
    seed += 3;
    std::vector<std::int32_t> y(n.y), dx(n.x), g(n.w);
    conv2d_forward_s8_ref(s, x.data(), w.data(), y.data(), nullptr);
    conv2d_backward_input_s8_ref(s, e.data(), w.data(), dx.data(), nullptr);
    conv2d_backward_weights_s8_ref(s, x.data(), e.data(), g.data(), nullptr);
    const Naive want = naive(s, x, w, e);
    EXPECT_EQ(y, want.y) << describe(s);
    EXPECT_EQ(dx, want.dx) << describe(s);
    EXPECT_EQ(g, want.g) << describe(s);
  }
  // Hand-checked: a 3x3 input of ones, a 3x3 kernel of twos, pad 1 → the centre sums 9 taps (18),
  // a corner 4 (8); the input gradient of an all-ones e is the same pattern.
  const Conv2dShape s{1, 1, 3, 3, 1, 3, 1};
  const std::vector<std::int8_t> x(9, 1), w(9, 2), e(9, 1);
  std::vector<std::int32_t> y(9), dx(9), g(9);
  conv2d_forward_s8_ref(s, x.data(), w.data(), y.data(), nullptr);
  conv2d_backward_input_s8_ref(s, e.data(), w.data(), dx.data(), nullptr);
  conv2d_backward_weights_s8_ref(s, x.data(), e.data(), g.data(), nullptr);
  EXPECT_EQ(y[4], 18);
  EXPECT_EQ(y[0], 8);
  EXPECT_EQ(dx[4], 18);
  EXPECT_EQ(g[4], 9);  // centre tap: every position sees its own pixel
  EXPECT_EQ(g[0], 4);  // top-left tap: only the 2x2 bottom-right outputs see a pixel
}

}  // namespace
}  // namespace zt::kernels
