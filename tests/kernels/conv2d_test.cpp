// Conv2d tests. The reference (direct loops in double) is itself checked with adjoint
// identities (⟨conv(x), g⟩ = ⟨x, dx(g)⟩ = ⟨w, dw(g)⟩ + …); every path is compared with it under
// the reduction tolerance |got − ref| ≤ 4·FLT_EPSILON·√K·max|ref|, K being the reduction depth
// (C·k·k forward, O·k·k for dx, B·OH·OW for dw/db). Guards after every output; thread count
// must not change a bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../../src/kernels/conv2d/conv2d_internal.hpp"
#include "zotrain/kernels/conv2d.hpp"
#include "../support.hpp"

namespace zt::kernels {
namespace {

using test::kGuard;
constexpr std::size_t kGuardTail = 11;

std::vector<float> random_vec(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  return test::random_floats(n, seed, lo, hi);
}

std::vector<float> with_guard(std::vector<float> v) {
  v.insert(v.end(), kGuardTail, kGuard);
  return v;
}

std::string describe(const Conv2dShape& s) {
  return "B" + std::to_string(s.batch) + " C" + std::to_string(s.in_c) + " " + std::to_string(s.in_h) + "x" +
         std::to_string(s.in_w) + " O" + std::to_string(s.out_c) + " k" + std::to_string(s.kernel) + " p" +
         std::to_string(s.pad);
}

// Compares the first n values within the reduction tolerance and checks the tail guards.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, std::size_t n, int depth,
                  const std::string& what) {
  float max_ref = 0.0f;
  for (std::size_t i = 0; i < n; ++i) max_ref = std::max(max_ref, std::fabs(want[i]));
  const float tol = test::reduction_tolerance(depth, max_ref);
  int bad = 0;
  for (std::size_t i = 0; i < n && bad < 5; ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      ADD_FAILURE() << what << " [" << i << "] " << got[i] << " vs " << want[i] << " tol " << tol;
      ++bad;
    }
  for (std::size_t t = 0; t < kGuardTail; ++t) EXPECT_EQ(got[n + t], kGuard) << what << " guard " << t;
}

const Conv2dShape kShapes[] = {
    // batch, in_c, in_h, in_w, out_c, kernel, pad
    {2, 1, 28, 28, 6, 5, 2},   // LeNet conv1
    {3, 6, 14, 14, 16, 5, 2},  // LeNet conv2
    {1, 3, 7, 9, 4, 3, 1},     // odd spatial sizes
    {5, 2, 5, 5, 3, 3, 0},
    {9, 2, 6, 5, 5, 3, 2},     // batch > slots, pad > k/2
    {2, 3, 3, 3, 2, 5, 2},     // kernel larger than the input
    {4, 5, 6, 7, 17, 1, 0},    // 1x1 without padding (no im2col)
    {3, 4, 4, 5, 3, 1, 1},     // 1x1 with padding
    {1, 1, 1, 1, 1, 1, 0},
    {0, 2, 5, 5, 3, 3, 1},     // empty batch
    {17, 3, 9, 11, 33, 3, 1},  // O above two register tiles, many slots
    {6, 2, 13, 37, 11, 7, 3},  // k = 7, rows of 2+ vectors with a tail
    {40, 3, 5, 17, 9, 5, 4},   // pad = k − 1, groups of samples per slot
};

struct Sizes {
  std::size_t x, w, y;
};
Sizes sizes_of(const Conv2dShape& s) {
  return {static_cast<std::size_t>(s.batch) * s.in_c * s.in_h * s.in_w,
          static_cast<std::size_t>(s.out_c) * s.in_c * s.kernel * s.kernel,
          static_cast<std::size_t>(s.batch) * s.out_c * s.out_h() * s.out_w()};
}

// A forward pass's operands x, w and bias for shape s, from seeds seed, seed + 1 and seed + 2
// (seed is left past them).
struct ForwardOperands {
  std::vector<float> x, w, bias;
};
ForwardOperands random_forward_operands(const Conv2dShape& s, unsigned& seed) {
  const Sizes n = sizes_of(s);
  ForwardOperands o;
  o.x = random_vec(n.x, seed++);
  o.w = random_vec(n.w, seed++);
  o.bias = random_vec(s.out_c, seed++);
  return o;
}

struct Fns {
  Conv2dForwardF32Fn fwd = nullptr;
  Conv2dBackwardF32Fn bwd = nullptr;
};
Fns fns_of(Isa isa) { return {select_conv2d_forward_f32(isa), select_conv2d_backward_f32(isa)}; }

using Conv2dF32Test = test::IsaPathTest<Fns, fns_of>;

TEST_P(Conv2dF32Test, SelectsTheRequestedPath) {
  if (GetParam() == Isa::kPortable) {
    EXPECT_EQ(f_.fwd, &conv2d_forward_f32_portable);
    EXPECT_EQ(f_.bwd, &conv2d_backward_f32_portable);
  }
  if (GetParam() == Isa::kReference) { EXPECT_EQ(f_.fwd, &conv2d_forward_f32_ref); }
#if defined(ZT_HAVE_NEON)
  if (GetParam() == Isa::kNeon || GetParam() == Isa::kNeonDot) {
    EXPECT_EQ(f_.fwd, &conv2d_forward_f32_neon);
    EXPECT_EQ(f_.bwd, &conv2d_backward_f32_neon);
  }
#endif
}

// The algorithm (of the portable and NEON paths) depends on the shape only: LeNet-5 layers go direct; 1x1 without
// padding, padding ≥ k and rows using under half a vector go through im2col + GEMM.
TEST(Conv2dF32PathTest, AlgorithmChoice) {
  using namespace conv2d_detail;
  for (int batch : {1, 4, 32, 256}) {
    const Conv2dShape c1{batch, 1, 28, 28, 6, 5, 2}, c2{batch, 6, 14, 14, 16, 5, 2};
    EXPECT_TRUE(forward_uses_direct(c1) && backward_uses_direct(c1)) << batch;
    EXPECT_TRUE(forward_uses_direct(c2) && backward_uses_direct(c2)) << batch;
  }
  EXPECT_FALSE(forward_uses_direct({2, 5, 6, 7, 17, 1, 0}));
  EXPECT_FALSE(backward_uses_direct({2, 5, 6, 7, 17, 1, 0}));
  EXPECT_FALSE(forward_uses_direct({2, 1, 20, 20, 2, 3, 3}));  // pad ≥ k
  EXPECT_EQ(forward_uses_direct({1, 1, 5, 5, 1, 3, 1}), lanes() <= 10);  // 5 of `lanes` used
}

TEST_P(Conv2dF32Test, ForwardMatchesReference) {
  unsigned seed = 10;
  for (const auto& s : kShapes) {
    for (bool with_bias : {true, false}) {
      const Sizes n = sizes_of(s);
      const ForwardOperands ops = random_forward_operands(s, seed);
      const std::vector<float>& x = ops.x;
      const std::vector<float>& w = ops.w;
      const std::vector<float>& bias = ops.bias;
      std::vector<float> scratch(conv2d_scratch_floats(s) + 1);
      auto y = with_guard(std::vector<float>(n.y, 1e30f)), want = y;
      f_.fwd(s, x.data(), w.data(), with_bias ? bias.data() : nullptr, y.data(), scratch.data());
      conv2d_forward_f32_ref(s, x.data(), w.data(), with_bias ? bias.data() : nullptr, want.data(), nullptr);
      expect_close(y, want, n.y, s.in_c * s.kernel * s.kernel, describe(s) + " y");
    }
  }
}

TEST_P(Conv2dF32Test, BackwardMatchesReference) {
  unsigned seed = 500;
  for (const auto& s : kShapes) {
    for (int variant = 0; variant < 3; ++variant) {  // 0: all outputs, 1: no dx, 2: no db
      const Sizes n = sizes_of(s);
      const auto x = random_vec(n.x, seed++), w = random_vec(n.w, seed++), dy = random_vec(n.y, seed++);
      std::vector<float> scratch(conv2d_scratch_floats(s) + 1);
      // dw and db accumulate: start from non-zero values.
      auto dw = with_guard(random_vec(n.w, seed++)), dw_want = dw;
      auto db = with_guard(random_vec(s.out_c, seed++)), db_want = db;
      auto dx = with_guard(std::vector<float>(n.x, 1e30f)), dx_want = dx;
      float* dx_p = variant == 1 ? nullptr : dx.data();
      float* db_p = variant == 2 ? nullptr : db.data();
      f_.bwd(s, x.data(), w.data(), dy.data(), dx_p, dw.data(), db_p, scratch.data());
      conv2d_backward_f32_ref(s, x.data(), w.data(), dy.data(), variant == 1 ? nullptr : dx_want.data(),
                              dw_want.data(), variant == 2 ? nullptr : db_want.data(), nullptr);
      const std::string what = describe(s) + " variant " + std::to_string(variant);
      const int spatial = s.batch * s.out_h() * s.out_w();
      expect_close(dw, dw_want, n.w, spatial + 1, what + " dw");
      expect_close(db, db_want, s.out_c, spatial + 1, what + " db");
      if (variant == 1) {
        for (float v : dx) EXPECT_TRUE(v == 1e30f || v == kGuard);  // untouched
      } else {
        expect_close(dx, dx_want, n.x, s.out_c * s.kernel * s.kernel, what + " dx");
      }
    }
  }
}

// The reference backward is the adjoint of the reference forward: with y = conv(x, w) (no
// bias) and any g, Σ y·g = Σ x·dx(g) = Σ w·dw(g), and db(g) = Σ g per channel.
TEST(Conv2dF32RefTest, BackwardIsTheAdjointOfForward) {
  unsigned seed = 900;
  for (const auto& s : kShapes) {
    if (s.batch == 0) continue;
    const Sizes n = sizes_of(s);
    const auto x = random_vec(n.x, seed++), w = random_vec(n.w, seed++), g = random_vec(n.y, seed++);
    std::vector<float> y(n.y), dx(n.x), dw(n.w, 0.0f), db(s.out_c, 0.0f);
    conv2d_forward_f32_ref(s, x.data(), w.data(), nullptr, y.data(), nullptr);
    conv2d_backward_f32_ref(s, x.data(), w.data(), g.data(), dx.data(), dw.data(), db.data(), nullptr);
    double yg = 0, xdx = 0, wdw = 0, gsum = 0, dbsum = 0, scale = 0;
    for (std::size_t i = 0; i < n.y; ++i) yg += double(y[i]) * g[i], gsum += g[i], scale += std::fabs(double(y[i]) * g[i]);
    for (std::size_t i = 0; i < n.x; ++i) xdx += double(x[i]) * dx[i];
    for (std::size_t i = 0; i < n.w; ++i) wdw += double(w[i]) * dw[i];
    for (int o = 0; o < s.out_c; ++o) dbsum += db[o];
    const double tol = 1e-5 * (scale + 1.0);
    EXPECT_NEAR(yg, xdx, tol) << describe(s);
    EXPECT_NEAR(yg, wdw, tol) << describe(s);
    EXPECT_NEAR(gsum, dbsum, 1e-5 * (n.y + 1.0)) << describe(s);
  }
}

TEST(Conv2dF32ScratchTest, ScratchIsModest) {
  // LeNet conv2: packed weights, then per slot (at most 8) lane-wise dW/db partials and padded
  // copies of at most 4 samples. It stops growing at batch 32 and stays under 2 MiB.
  const Conv2dShape s{256, 6, 14, 14, 16, 5, 2}, s32{32, 6, 14, 14, 16, 5, 2};
  EXPECT_EQ(conv2d_scratch_floats(s), conv2d_scratch_floats(s32));
  EXPECT_LE(conv2d_scratch_floats(s) * sizeof(float), 2u << 20);
  const Conv2dShape one{1, 6, 14, 14, 16, 5, 2};
  EXPECT_LE(conv2d_scratch_floats(one) * sizeof(float), 256u << 10);
  const Conv2dShape empty{0, 6, 14, 14, 16, 5, 2};
  EXPECT_EQ(conv2d_scratch_floats(empty), 0u);
}

// Every kernel size 1..7 with every padding 0..k−1 (and one k ≤ pad case), widths around one and
// two vectors, odd heights: forward and backward against the reference, guards after every
// output and after the scratch.
TEST_P(Conv2dF32Test, SweepKernelsPaddingsAndWidths) {
  const int l = conv2d_detail::lanes();
  unsigned seed = 7000;
  int cases = 0;
  for (int k = 1; k <= 7; ++k)
    for (int pad = 0; pad <= k; ++pad)
      for (int ow : {1, l - 1, l, l + 1, 2 * l - 1, 2 * l + 1}) {
        if (ow < 1 || (pad == k && ow != l + 1)) continue;
        const int in_w = ow + k - 1 - 2 * pad;
        if (in_w < 1) continue;
        const int in_h = 3 + (k + ow) % 4, batch = 1 + (k + pad + ow) % 3;
        const Conv2dShape s{batch, 1 + ow % 3, in_h, in_w, 1 + (k * 3 + ow) % 7, k, pad};
        if (s.out_h() < 1) continue;
        ++cases;
        const Sizes n = sizes_of(s);
        const ForwardOperands ops = random_forward_operands(s, seed);
        const std::vector<float>& x = ops.x;
        const std::vector<float>& w = ops.w;
        const std::vector<float>& bias = ops.bias;
        const auto dy = random_vec(n.y, seed++);
        const std::size_t sn = conv2d_scratch_floats(s);
        auto scratch = with_guard(std::vector<float>(sn, 3.0f));
        auto y = with_guard(std::vector<float>(n.y, 1e30f)), y_want = y;
        f_.fwd(s, x.data(), w.data(), bias.data(), y.data(), scratch.data());
        conv2d_forward_f32_ref(s, x.data(), w.data(), bias.data(), y_want.data(), nullptr);
        const std::string what = describe(s);
        expect_close(y, y_want, n.y, s.in_c * k * k, what + " y");
        auto dw = with_guard(random_vec(n.w, seed++)), dw_want = dw;
        auto db = with_guard(random_vec(s.out_c, seed++)), db_want = db;
        auto dx = with_guard(std::vector<float>(n.x, 1e30f)), dx_want = dx;
        f_.bwd(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), scratch.data());
        conv2d_backward_f32_ref(s, x.data(), w.data(), dy.data(), dx_want.data(), dw_want.data(), db_want.data(),
                                nullptr);
        const int spatial = s.batch * s.out_h() * s.out_w();
        expect_close(dw, dw_want, n.w, spatial + 1, what + " dw");
        expect_close(db, db_want, s.out_c, spatial + 1, what + " db");
        expect_close(dx, dx_want, n.x, s.out_c * k * k, what + " dx");
        for (std::size_t t = 0; t < kGuardTail; ++t) EXPECT_EQ(scratch[sn + t], kGuard) << what << " scratch guard";
      }
  EXPECT_GT(cases, 40);
}

// A sample's forward output does not depend on the batch it is computed in: one call with
// batch 32, 32 calls with batch 1 and 8 calls with batch 4 from inside a parallel region (as
// the trainer calls it) give the same bits.
TEST_P(Conv2dF32Test, ForwardIndependentOfBatchSplit) {
  const Conv2dShape shapes[] = {{32, 1, 28, 28, 6, 5, 2}, {32, 6, 14, 14, 16, 5, 2}, {32, 3, 9, 11, 33, 3, 1},
                                {32, 5, 6, 7, 17, 1, 0}, {32, 2, 13, 37, 11, 7, 3}};
  unsigned seed = 3100;
  for (const auto& s : shapes) {
    const Sizes n = sizes_of(s);
    const ForwardOperands ops = random_forward_operands(s, seed);
    const std::vector<float>& x = ops.x;
    const std::vector<float>& w = ops.w;
    const std::vector<float>& bias = ops.bias;
    std::vector<float> scratch(conv2d_scratch_floats(s));
    std::vector<float> y_all(n.y), y_one(n.y), y_chunk(n.y);
    f_.fwd(s, x.data(), w.data(), bias.data(), y_all.data(), scratch.data());
    const std::size_t xs = n.x / s.batch, ys = n.y / s.batch;
    Conv2dShape s1 = s;
    s1.batch = 1;
    std::vector<float> scratch1(conv2d_scratch_floats(s1));
    for (int b = 0; b < s.batch; ++b)
      f_.fwd(s1, x.data() + b * xs, w.data(), bias.data(), y_one.data() + b * ys, scratch1.data());
    EXPECT_EQ(0, std::memcmp(y_all.data(), y_one.data(), n.y * sizeof(float))) << describe(s) << " batch 1";
    Conv2dShape s4 = s;
    s4.batch = 4;
    const std::size_t sc4 = conv2d_scratch_floats(s4);
    std::vector<float> scratch4(sc4 * 8);
#ifdef ZT_OPENMP
#pragma omp parallel for num_threads(2) schedule(dynamic)
#endif
    for (int chunk = 0; chunk < 8; ++chunk)
      f_.fwd(s4, x.data() + chunk * 4 * xs, w.data(), bias.data(), y_chunk.data() + chunk * 4 * ys,
           scratch4.data() + chunk * sc4);
    EXPECT_EQ(0, std::memcmp(y_all.data(), y_chunk.data(), n.y * sizeof(float))) << describe(s) << " chunks of 4";
  }
}

#ifdef ZT_OPENMP
TEST_P(Conv2dF32Test, BitIdenticalForAnyThreadCount) {
  const Conv2dShape shapes[] = {{32, 6, 14, 14, 16, 5, 2}, {11, 1, 28, 28, 6, 5, 2}, {3, 2, 9, 7, 5, 3, 1},
                                {19, 5, 6, 7, 17, 1, 0}, {37, 2, 13, 37, 11, 7, 3}};
  unsigned seed = 4242;
  for (const auto& s : shapes) {
    const Sizes n = sizes_of(s);
    const ForwardOperands ops = random_forward_operands(s, seed);
    const std::vector<float>& x = ops.x;
    const std::vector<float>& w = ops.w;
    const std::vector<float>& bias = ops.bias;
    const auto dy = random_vec(n.y, seed++);
    std::vector<float> scratch(conv2d_scratch_floats(s));
    std::vector<float> y1, dx1, dw1, db1;
    // 0: called from inside a parallel region (runs serially).
    test::for_thread_counts({1, 2, 3, 0}, [&](int threads) {
      std::vector<float> y(n.y), dx(n.x), dw(n.w, 0.5f), db(s.out_c, 0.25f);
      f_.fwd(s, x.data(), w.data(), bias.data(), y.data(), scratch.data());
      f_.bwd(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), scratch.data());
      if (threads == 1) {
        y1 = y, dx1 = dx, dw1 = dw, db1 = db;
        return;
      }
      EXPECT_EQ(0, std::memcmp(y.data(), y1.data(), n.y * sizeof(float))) << describe(s) << " y, threads " << threads;
      EXPECT_EQ(0, std::memcmp(dx.data(), dx1.data(), n.x * sizeof(float))) << describe(s) << " dx";
      EXPECT_EQ(0, std::memcmp(dw.data(), dw1.data(), n.w * sizeof(float))) << describe(s) << " dw";
      EXPECT_EQ(0, std::memcmp(db.data(), db1.data(), s.out_c * sizeof(float))) << describe(s) << " db";
    });
  }
}
#endif

INSTANTIATE_TEST_SUITE_P(Conv2dF32, Conv2dF32Test,
                         ::testing::ValuesIn(kAllIsas), test::isa_test_name);

}  // namespace
}  // namespace zt::kernels
