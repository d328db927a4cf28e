// GEMM tests. Tolerance policy (all FP32 reduction kernels): |got − ref| ≤ 4·FLT_EPSILON·√(K+1)·
// max(|C|·acc + |op(A)|·|op(B)|) with ref = gemm_f32_ref (double accumulation): the sums' scale,
// not the result's, which may cancel; elementwise kernels are bit-exact.
// Guard values past every output row and after the buffer must survive. Thread count must not
// change a single bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "zotrain/kernels/gemm.hpp"
#include "../support.hpp"

namespace zt::kernels {
namespace {

using test::kGuard;
constexpr int kGuardTail = 19;

std::vector<float> random_vec(std::size_t n, unsigned seed) { return test::random_floats(n, seed); }

struct GemmCase {
  bool ta, tb;
  int m, n, k;
  bool acc;
};

std::string describe(const GemmCase& c) {
  return "ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb) + " m=" + std::to_string(c.m) +
         " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) + " acc=" + std::to_string(c.acc);
}

// Runs fn and the reference on the same inputs (padded leading dimensions), checks the
// tolerance and the guards. Returns the output of fn.
std::vector<float> run_and_check(GemmF32Fn fn, const GemmCase& c, unsigned seed) {
  const int lda = (c.ta ? c.m : c.k) + 3, ldb = (c.tb ? c.k : c.n) + 5, ldc = c.n + 2;
  const int a_rows = c.ta ? c.k : c.m, b_rows = c.tb ? c.n : c.k;
  const auto a = random_vec(static_cast<std::size_t>(a_rows) * lda + 1, seed);
  const auto b = random_vec(static_cast<std::size_t>(b_rows) * ldb + 1, seed + 1);
  const std::size_t c_size = static_cast<std::size_t>(c.m) * ldc;
  auto c0 = random_vec(c_size + kGuardTail, seed + 2);
  for (int i = 0; i < c.m; ++i)
    for (int j = c.n; j < ldc; ++j) c0[static_cast<std::size_t>(i) * ldc + j] = kGuard;
  for (int t = 0; t < kGuardTail; ++t) c0[c_size + t] = kGuard;
  auto got = c0, want = c0;
  fn(c.ta, c.tb, c.m, c.n, c.k, a.data(), lda, b.data(), ldb, got.data(), ldc, c.acc);
  gemm_f32_ref(c.ta, c.tb, c.m, c.n, c.k, a.data(), lda, b.data(), ldb, want.data(), ldc, c.acc);
  // Scale of the sums: the same product of the absolute values (the classic dot-product error
  // bound), so that a result which cancels to nearly zero is not held to its own tiny magnitude.
  auto abs_of = [](std::vector<float> v) {
    for (auto& x : v) x = std::fabs(x);
    return v;
  };
  const auto a_abs = abs_of(a), b_abs = abs_of(b);
  auto scale = abs_of(c0);
  gemm_f32_ref(c.ta, c.tb, c.m, c.n, c.k, a_abs.data(), lda, b_abs.data(), ldb, scale.data(), ldc, c.acc);
  float max_scale = 0.0f;
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) max_scale = std::max(max_scale, scale[static_cast<std::size_t>(i) * ldc + j]);
  const float tol = test::reduction_tolerance(c.k + 1, max_scale);
  int bad = 0;
  for (int i = 0; i < c.m && bad < 5; ++i) {
    for (int j = 0; j < ldc && bad < 5; ++j) {
      const std::size_t idx = static_cast<std::size_t>(i) * ldc + j;
      if (j >= c.n) {
        if (got[idx] != kGuard) { ADD_FAILURE() << describe(c) << " guard clobbered at " << i << "," << j; ++bad; }
      } else if (!(std::fabs(got[idx] - want[idx]) <= tol)) {
        ADD_FAILURE() << describe(c) << " at " << i << "," << j << ": " << got[idx] << " vs " << want[idx] << " tol " << tol;
        ++bad;
      }
    }
  }
  for (int t = 0; t < kGuardTail; ++t) EXPECT_EQ(got[c_size + t], kGuard) << describe(c) << " tail guard";
  return got;
}

using GemmF32Test = test::IsaPathTest<GemmF32Fn, select_gemm_f32>;

TEST_P(GemmF32Test, SelectsTheRequestedPath) {
  if (GetParam() == Isa::kReference) { EXPECT_EQ(f_, &gemm_f32_ref); }
  if (GetParam() == Isa::kPortable) { EXPECT_EQ(f_, &gemm_f32_portable); }
#if defined(ZT_HAVE_NEON)
  if (GetParam() == Isa::kNeon || GetParam() == Isa::kNeonDot) { EXPECT_EQ(f_, &gemm_f32_neon); }
#endif
}

// Every combination of small sizes around the register tile (8 rows × 16/32 columns on
// AVX-512, 8 × 8 on aarch64 NEON, 4 × 8 on armv7 NEON): 0, 1, lanes±1, 2·lanes±1 for m, n and k.
TEST_P(GemmF32Test, SmallSizeSweep) {
  const int sizes[] = {0, 1, 3, 5, 7, 8, 9, 15, 17, 31, 33};
  unsigned seed = 1;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int acc = 0; acc < 2; ++acc)
        for (int m : sizes)
          for (int n : sizes)
            for (int k : {0, 1, 5, 16, 17}) run_and_check(f_, {ta != 0, tb != 0, m, n, k, acc != 0}, seed++);
}

TEST_P(GemmF32Test, LargeAndLeNetShapes) {
  const GemmCase cases[] = {
      {false, true, 32, 120, 784, false},   // fc1 forward
      {false, false, 32, 784, 120, false},  // fc1 backward dx
      {true, false, 120, 784, 32, true},    // fc1 backward dW
      {false, true, 32, 10, 84, false},     // fc3 forward
      {false, false, 6, 784, 25, true},     // conv1 forward (bias pre-filled)
      {false, false, 16, 196, 150, true},   // conv2 forward
      {false, true, 16, 150, 196, true},    // conv2 dW
      {true, false, 150, 196, 16, false},   // conv2 dcol
      {false, false, 130, 67, 1100, false}, // K spans several depth blocks
      {true, true, 257, 45, 33, true},      // M spans several row blocks
      {false, false, 3, 4200, 9, false},    // N spans several column blocks
  };
  unsigned seed = 1000;
  for (const auto& c : cases) run_and_check(f_, c, seed++);
}

TEST_P(GemmF32Test, KZeroClearsOrKeeps) {
  std::vector<float> c(12, 3.0f);
  f_(false, false, 3, 4, 0, nullptr, 1, nullptr, 4, c.data(), 4, true);
  for (float v : c) EXPECT_EQ(v, 3.0f);
  f_(false, false, 3, 4, 0, nullptr, 1, nullptr, 4, c.data(), 4, false);
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

TEST_P(GemmF32Test, NanPropagates) {
  std::vector<float> a(4 * 5, 1.0f), b(5 * 40, 1.0f), c(4 * 40, 0.0f);
  a[2 * 5 + 3] = NAN;
  f_(false, false, 4, 40, 5, a.data(), 5, b.data(), 40, c.data(), 40, false);
  for (int j = 0; j < 40; ++j) {
    EXPECT_TRUE(std::isnan(c[2 * 40 + j]));
    EXPECT_EQ(c[1 * 40 + j], 5.0f);
  }
}

#ifdef ZT_OPENMP
TEST_P(GemmF32Test, BitIdenticalForAnyThreadCount) {
  const GemmCase cases[] = {{false, true, 32, 120, 784, false}, {true, false, 120, 784, 32, true},
                            {false, false, 100, 300, 700, true}, {true, true, 67, 129, 600, false}};
  unsigned seed = 77;
  for (const auto& c : cases) {
    std::vector<std::vector<float>> outs;
    test::for_thread_counts({1, 2, 3}, [&](int) { outs.push_back(run_and_check(f_, c, seed)); });
    for (std::size_t i = 1; i < outs.size(); ++i)
      EXPECT_EQ(0, std::memcmp(outs[0].data(), outs[i].data(), outs[0].size() * sizeof(float)))
          << describe(c) << " differs between thread counts";
    ++seed;
  }
}
#endif

INSTANTIATE_TEST_SUITE_P(GemmF32, GemmF32Test,
                         ::testing::ValuesIn(kAllIsas), test::isa_test_name);

}  // namespace
}  // namespace zt::kernels
