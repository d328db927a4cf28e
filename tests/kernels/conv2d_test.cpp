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
#include <random>
#include <string>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "zotrain/kernels/conv2d.hpp"

namespace zt::kernels {
namespace {

constexpr float kTolC = 4.0f;
constexpr float kGuard = -7777.25f;
constexpr std::size_t kGuardTail = 11;

std::vector<float> random_vec(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
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
  const float tol = kTolC * FLT_EPSILON * std::sqrt(static_cast<float>(std::max(depth, 1))) * max_ref;
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
};

struct Sizes {
  std::size_t x, w, y;
};
Sizes sizes_of(const Conv2dShape& s) {
  return {static_cast<std::size_t>(s.batch) * s.in_c * s.in_h * s.in_w,
          static_cast<std::size_t>(s.out_c) * s.in_c * s.kernel * s.kernel,
          static_cast<std::size_t>(s.batch) * s.out_c * s.out_h() * s.out_w()};
}

class Conv2dF32Test : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_available(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not available";
    fwd_ = select_conv2d_forward_f32(GetParam());
    bwd_ = select_conv2d_backward_f32(GetParam());
  }
  Conv2dForwardF32Fn fwd_ = nullptr;
  Conv2dBackwardF32Fn bwd_ = nullptr;
};

TEST_P(Conv2dF32Test, SelectsTheRequestedPath) {
  if (GetParam() == Isa::kPortable) {
    EXPECT_EQ(fwd_, &conv2d_forward_f32_portable);
    EXPECT_EQ(bwd_, &conv2d_backward_f32_portable);
  }
  if (GetParam() == Isa::kReference) { EXPECT_EQ(fwd_, &conv2d_forward_f32_ref); }
}

TEST_P(Conv2dF32Test, ForwardMatchesReference) {
  unsigned seed = 10;
  for (const auto& s : kShapes) {
    for (bool with_bias : {true, false}) {
      const Sizes n = sizes_of(s);
      const auto x = random_vec(n.x, seed++), w = random_vec(n.w, seed++), bias = random_vec(s.out_c, seed++);
      std::vector<float> scratch(conv2d_scratch_floats(s) + 1);
      auto y = with_guard(std::vector<float>(n.y, 1e30f)), want = y;
      fwd_(s, x.data(), w.data(), with_bias ? bias.data() : nullptr, y.data(), scratch.data());
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
      bwd_(s, x.data(), w.data(), dy.data(), dx_p, dw.data(), db_p, scratch.data());
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
  // LeNet conv2 at batch 256: eight slots of one sample's im2col plus dW/db partials.
  const Conv2dShape s{256, 6, 14, 14, 16, 5, 2};
  EXPECT_EQ(conv2d_scratch_floats(s), 8u * (150u * 196u + 16u * 150u + 16u));
  const Conv2dShape empty{0, 6, 14, 14, 16, 5, 2};
  EXPECT_EQ(conv2d_scratch_floats(empty), 0u);
}

#ifdef ZT_OPENMP
TEST_P(Conv2dF32Test, BitIdenticalForAnyThreadCount) {
  const int saved = omp_get_max_threads();
  const Conv2dShape shapes[] = {{32, 6, 14, 14, 16, 5, 2}, {11, 1, 28, 28, 6, 5, 2}, {3, 2, 9, 7, 5, 3, 1}};
  unsigned seed = 4242;
  for (const auto& s : shapes) {
    const Sizes n = sizes_of(s);
    const auto x = random_vec(n.x, seed++), w = random_vec(n.w, seed++), bias = random_vec(s.out_c, seed++);
    const auto dy = random_vec(n.y, seed++);
    std::vector<float> scratch(conv2d_scratch_floats(s));
    std::vector<float> y1, dx1, dw1, db1;
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      std::vector<float> y(n.y), dx(n.x), dw(n.w, 0.5f), db(s.out_c, 0.25f);
      fwd_(s, x.data(), w.data(), bias.data(), y.data(), scratch.data());
      bwd_(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), scratch.data());
      if (threads == 1) {
        y1 = y, dx1 = dx, dw1 = dw, db1 = db;
        continue;
      }
      EXPECT_EQ(0, std::memcmp(y.data(), y1.data(), n.y * sizeof(float))) << describe(s) << " y, threads " << threads;
      EXPECT_EQ(0, std::memcmp(dx.data(), dx1.data(), n.x * sizeof(float))) << describe(s) << " dx";
      EXPECT_EQ(0, std::memcmp(dw.data(), dw1.data(), n.w * sizeof(float))) << describe(s) << " dw";
      EXPECT_EQ(0, std::memcmp(db.data(), db1.data(), s.out_c * sizeof(float))) << describe(s) << " db";
    }
  }
  omp_set_num_threads(saved);
}
#endif

INSTANTIATE_TEST_SUITE_P(Conv2dF32, Conv2dF32Test,
                         ::testing::Values(Isa::kReference, Isa::kPortable, Isa::kNeon),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace zt::kernels
